/**
 * The conscious world on real parts: a store (SQLite or Postgres) with the engine's migrations
 * and the memory and conscious ones on top, the memory store, the model layer against the
 * scripted model server on loopback, the engine's `Instance` with the store checkpointer, one
 * FakeClock.
 */
import { EventBus, FakeClock, silentLogger, uuid, type BusEvent } from '../../../src/core/index.js';
import { Instance } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createLlm, type LlmService } from '../../../src/llm/index.js';
import { MemoryStore, memoryMigrations, type MemoryTables } from '../../../src/memory/index.js';
import type { ConsciousEvents } from '../../../src/protocol/conscious.js';
import { applyMigrations, tablesView, type DialectName } from '../../../src/store/index.js';
import {
  consciousMigrations,
  createConsciousWorld,
  DEFAULT_CONSCIOUS_SETTINGS,
  type ConsciousSettings,
  type ConsciousTables,
  type ConsciousWorld,
} from '../../../src/worlds/conscious/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

export const LOCAL_MODEL = 'local-model';

export interface ConsciousHarness {
  store: TestStore;
  clock: FakeClock;
  server: ModelServer;
  llm: LlmService;
  memory: MemoryStore;
  world: ConsciousWorld;
  instance: Instance;
  events: BusEvent[];
  settings: ConsciousSettings;
  /** Chat requests that were conscious extractions. */
  extractions(): RecordedRequest[];
  dispose(): Promise<void>;
}

export async function createConsciousHarness(
  opts: {
    dialect?: DialectName;
    settings?: Partial<ConsciousSettings>;
    ready?: (memory: MemoryStore, store: TestStore) => (signal: AbortSignal) => Promise<void>;
  } = {},
): Promise<ConsciousHarness> {
  const store = await openTestStore(opts.dialect ?? 'sqlite');
  await applyMigrations(store.db, store.dialect, { ...memoryMigrations, ...consciousMigrations });
  const clock = new FakeClock();
  const server = await startModelServer({ models: [LOCAL_MODEL] });
  const endpoint = { baseUrl: server.baseUrl, model: LOCAL_MODEL, timeoutMs: 20_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid, probeCacheMs: 0, retryDelaysMs: [] });
  const bus = new EventBus(() => clock.now());
  const events: BusEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const memory = new MemoryStore({ db: tablesView<MemoryTables>(store.db), dialect: store.dialect, clock, ids: uuid });
  const settings: ConsciousSettings = { ...DEFAULT_CONSCIOUS_SETTINGS, ...opts.settings };
  const world = createConsciousWorld({
    db: tablesView<ConsciousTables>(store.db),
    memory,
    settings: () => settings,
    workspace: store.workspace,
    clock,
    emit: <K extends keyof ConsciousEvents>(type: K, data: ConsciousEvents[K]) => bus.emit(type, data),
    log: silentLogger,
    ...(opts.ready ? { ready: opts.ready(memory, store) } : {}),
  });
  const instance = new Instance(world, {
    db: store.db,
    llm,
    clock,
    ids: uuid,
    events: bus,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(store.db, clock),
  });
  return {
    store,
    clock,
    server,
    llm,
    memory,
    world,
    instance,
    events,
    settings,
    extractions: () => server.chatRequests,
    async dispose() {
      await instance.stop();
      await server.close();
      await store.dispose();
    },
  };
}

export function messagesOf(req: RecordedRequest): { role: string; content: string }[] {
  return (req.body?.messages ?? []).map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '') }));
}

export const systemOf = (req: RecordedRequest) => messagesOf(req).find((m) => m.role === 'system')?.content ?? '';
export const userOf = (req: RecordedRequest) =>
  messagesOf(req)
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');

/** One item as the seed's schema wants it. */
export function item(title: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    title,
    description: `About ${title}.`,
    source: 'email',
    priority: 'important',
    actionable: true,
    requires_confirmation: false,
    has_complex_action: false,
    source_label: 'Gmail',
    ...over,
  };
}
