/** Builds an engine (real Llm against the scripted server, store checkpointer) for a test world. */
import { EventBus, FakeClock, silentLogger, sequentialIds, type Clock } from '../../../src/core/index.js';
import { Instance, type EngineDeps, type InstanceOptions, type World } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createLlm } from '../../../src/llm/index.js';
import { InstanceState } from '../../../src/engine/index.js';
import type { AnyStore } from '../../support/stores.js';

export interface EngineUnderTest {
  deps: EngineDeps;
  clock: FakeClock;
  events: EventBus;
  state: InstanceState;
  instance(world: World, opts?: InstanceOptions): Instance;
}

/** `agentBaseUrl`: where the agent role points (default: the same server as the local role). */
export function engineFor(
  store: AnyStore,
  baseUrl: string,
  opts: { model?: string; timeoutMs?: number; clock?: FakeClock; agentBaseUrl?: string } = {},
): EngineUnderTest {
  const clock = opts.clock ?? new FakeClock();
  const events = new EventBus(() => clock.now());
  const endpoint = { baseUrl, model: opts.model ?? 'scripted-model', timeoutMs: opts.timeoutMs ?? 5_000 };
  const ids = sequentialIds('t');
  const agent = opts.agentBaseUrl ? { ...endpoint, baseUrl: opts.agentBaseUrl } : endpoint;
  const llm = createLlm({ models: { local: endpoint, agent }, db: store.db, clock: clock as Clock, ids, log: silentLogger });
  const deps: EngineDeps = { db: store.db, llm, clock, ids, events, log: silentLogger, checkpointer: new StoreCheckpointer(store.db, clock) };
  return {
    deps,
    clock,
    events,
    state: new InstanceState(store.db, () => clock.now()),
    instance: (world, o) => new Instance(world, deps, o),
  };
}

/** A world's namespaced state as the world itself sees it. */
export function worldState(state: InstanceState, world: string) {
  return { get: <T>(k: string) => state.get<T>(world, k), set: (k: string, v: unknown) => state.set(world, k, v) };
}
