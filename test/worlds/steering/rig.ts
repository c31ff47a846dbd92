/**
 * The steering world on real parts: a store (SQLite or Postgres) with the harness's and the
 * steering world's tables, an offline harness producing real compressed history, the model layer
 * against the scripted model server on loopback, and the engine's `Instance` with the store
 * checkpointer — as `test/worlds/tasks/harness.ts` runs the tasks world.
 */
import { EventBus, FakeClock, sequentialIds, silentLogger, uuid, type BusEvent } from '../../../src/core/index.js';
import { Instance } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createLlm, type LlmService } from '../../../src/llm/index.js';
import {
  HarnessStore,
  createHarness,
  orchestrationConfigSchema,
  orchestrationMigrations,
  type HarnessService,
  type OrchestrationTables,
} from '../../../src/orchestration/index.js';
import type { SteeringEvents } from '../../../src/protocol/steering.js';
import { applyMigrations, tablesView, type DialectName } from '../../../src/store/index.js';
import {
  createSteeringWorld,
  steeringConfigSchema,
  steeringMigrations,
  type SteeringConfigInput,
  type SteeringTables,
  type SteeringWorld,
} from '../../../src/worlds/steering/index.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

export const LOCAL_MODEL = 'local-model';

export type SteeringEmitted = { [K in keyof SteeringEvents]: { type: K; data: SteeringEvents[K] } }[keyof SteeringEvents];

export interface SteeringRig {
  store: TestStore;
  clock: FakeClock;
  server: ModelServer;
  llm: LlmService;
  harness: HarnessService;
  world: SteeringWorld;
  instance: Instance;
  emitted: SteeringEmitted[];
  busEvents: BusEvent[];
  /** Run `n` offline harness cycles (each waits for the previous). */
  cycles(n: number, text?: (i: number) => string): Promise<void>;
  dispose(): Promise<void>;
}

export async function createSteeringRig(dialect: DialectName, settings: SteeringConfigInput = {}): Promise<SteeringRig> {
  const store = await openTestStore(dialect);
  await applyMigrations(store.db, store.dialect, { ...orchestrationMigrations, ...steeringMigrations });
  const clock = new FakeClock();
  const server = await startModelServer({ models: [LOCAL_MODEL] });
  const endpoint = { baseUrl: server.baseUrl, model: LOCAL_MODEL, timeoutMs: 20_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid, probeCacheMs: 0 });
  const bus = new EventBus(() => clock.now());
  const busEvents: BusEvent[] = [];
  bus.subscribe((e) => busEvents.push(e));
  const emitted: SteeringEmitted[] = [];
  const harnessDb = tablesView<OrchestrationTables>(store.db);
  const world = createSteeringWorld({
    db: tablesView<SteeringTables>(store.db),
    harness: new HarnessStore(harnessDb),
    settings: steeringConfigSchema.parse(settings),
    emit: (type, data) => emitted.push({ type, data } as SteeringEmitted),
  });
  const harness = createHarness({
    db: harnessDb,
    clock,
    ids: sequentialIds('cycle'),
    log: silentLogger,
    emit: () => undefined,
    settings: orchestrationConfigSchema.parse({}),
    steering: world.directives,
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
  let sent = 0;
  return {
    store,
    clock,
    server,
    llm,
    harness,
    world,
    instance,
    emitted,
    busEvents,
    async cycles(n, text = (i) => `Request ${i}: reconcile the Acme invoices for week ${i}.`) {
      for (let i = 0; i < n; i++) await harness.send('slack', text(++sent), { wait: true });
    },
    async dispose() {
      await instance.stop();
      await harness.close();
      await server.close();
      await store.dispose();
    },
  };
}
