/** Shared wiring for the model-layer tests: a scripted server, a store, a fake clock, an Llm. */
import { vi } from 'vitest';
import { FakeClock, sequentialIds } from '../../src/core/index.js';
import { createLlm, type LlmService, type ModelsConfig } from '../../src/llm/index.js';
import type { DialectName } from '../../src/store/index.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, type TestStore } from '../support/stores.js';

export interface Rig {
  server: ModelServer;
  store: TestStore;
  clock: FakeClock;
  llm: LlmService;
  models: ModelsConfig;
  dispose(): Promise<void>;
}

export async function openRig(opts: { dialect?: DialectName; timeoutMs?: number; baseUrl?: string } = {}): Promise<Rig> {
  const server = await startModelServer({ models: ['local-model', 'agent-model'] });
  const store = await openTestStore(opts.dialect ?? 'sqlite');
  const clock = new FakeClock();
  const baseUrl = opts.baseUrl ?? server.baseUrl;
  const models: ModelsConfig = {
    local: { baseUrl, model: 'local-model', timeoutMs: opts.timeoutMs ?? 5000 },
    agent: { baseUrl, model: 'agent-model', apiKey: 'sk-test', timeoutMs: opts.timeoutMs ?? 5000 },
  };
  const llm = createLlm({ models, db: store.db, clock, ids: sequentialIds('call') });
  return {
    server,
    store,
    clock,
    llm,
    models,
    dispose: async () => {
      await server.close();
      await store.dispose();
    },
  };
}

/** Wait (by polling, not by asserting on time) until `count` sleepers are parked on the fake clock. */
export async function untilSleeping(clock: FakeClock, count = 1): Promise<void> {
  await vi.waitFor(
    () => {
      if (clock.pending < count) throw new Error(`waiting for ${count} sleeper(s), have ${clock.pending}`);
    },
    { timeout: 10_000, interval: 5 },
  );
}

/** Settle a promise into its value or its error, so a rejection is never unhandled. */
export function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

export async function ledgerRows(rig: Rig) {
  const rows = await rig.store.db.selectFrom('model_calls').selectAll().execute();
  // Ids are `call-N`: order by N, i.e. the order the calls were recorded.
  return rows.sort((a, b) => Number(a.id.slice(5)) - Number(b.id.slice(5)));
}
