/**
 * /metrics over HTTP on the real app: `subconscious_tick_failures_total` counts every tick that
 * raised consecutive_failures — a model-unreachable tick (skipped by the provider gate) as well
 * as a failed one — and no other skip.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { FakeClock, silentLogger } from '../../src/core/index.js';
import { createHttpApp, listen, type Listening } from '../../src/server/http.js';
import { createMetrics } from '../../src/server/metrics.js';
import { ensureToken } from '../../src/server/token.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';

let workspace: string;
let app: App;
let http: Listening;
let models: ModelServer;
let disposeMetrics: () => void;
const clock = new FakeClock();

beforeAll(async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-metrics-'));
  models = await startModelServer();
  app = await createApp({
    workspace,
    clock,
    log: silentLogger,
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
  });
  const metrics = createMetrics(app.llm.ledger, app.events);
  disposeMetrics = metrics.dispose;
  http = await listen(
    createHttpApp({
      rpc: app.rpc,
      events: app.feed,
      token: ensureToken(workspace),
      metrics: metrics.registry,
      webRoot: null,
      log: silentLogger,
      health: async () => ({ worlds: app.registry.names() }),
    }),
    { host: '127.0.0.1', port: 0 },
  );
});
afterAll(async () => {
  disposeMetrics();
  await http.close();
  await app.close();
  await models.close();
  rmSync(workspace, { recursive: true, force: true });
});

/** The value of one sample in the Prometheus text (0 when the series is absent). */
async function sample(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${http.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const failures = () => sample('subconscious_tick_failures_total', 'world="tasks"');
const ticks = (outcome: string) => sample('subconscious_ticks_total', `world="tasks",outcome="${outcome}"`);

describe('/metrics: tick failures', () => {
  it('counts a model-unreachable tick (skipped by the provider gate), a failed tick, and not a disabled skip', async () => {
    const tasks = app.registry.get('tasks');
    expect(await failures()).toBe(0);

    // The model does not answer its probe: the gate skips the tick, and it counts as a failure.
    models.modelsFault = { status: 503, message: 'model loading' };
    const unreachable = await tasks.tick();
    expect(unreachable.kind, unreachable.message).toBe('skipped');
    expect(unreachable.message).toMatch(/unavailable/);
    expect((await tasks.status()).consecutive_failures).toBe(1);
    expect(await ticks('skipped')).toBe(1);
    expect(await failures()).toBe(1);

    // The model answers its probe but the evaluation fails: a failed tick, counted too.
    models.modelsFault = undefined;
    models.handle(() => ({ status: 500, message: 'boom' }));
    await clock.advance(5 * 60_000);
    const failed = await tasks.tick();
    expect(failed.kind, failed.message).toBe('failed');
    expect((await tasks.status()).consecutive_failures).toBe(2);
    expect(await failures()).toBe(2);

    // A skip that is not a failure (the world is switched off) leaves the counter alone.
    await app.registry.setEnabled('tasks', false);
    await clock.advance(5 * 60_000);
    const disabled = await tasks.tick();
    expect(disabled).toMatchObject({ kind: 'skipped', message: 'disabled' });
    expect((await tasks.status()).consecutive_failures).toBe(2);
    expect(await ticks('skipped')).toBe(2);
    expect(await failures()).toBe(2);
  });
});
