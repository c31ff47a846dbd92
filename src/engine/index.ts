export type * from './types.js';
export { Instance, DEFAULT_TICK_TIMEOUT_MS, type EngineDeps, type InstanceOptions, type TickOptions } from './instance.js';
export { Scheduler, type SchedulerOptions } from './scheduler.js';
export { Registry } from './registry.js';
export { readStatus, type EngineKeys, type OpenTick } from './status.js';
export { TickLease, LEASE_TTL_MS } from './lease.js';
export { QuietCounters, QUIET_FLUSH_MS } from './quiet-counters.js';
export { InstanceState, KEYS_CACHE_MAX_AGE_MS, WorldKeys, stateKey } from './state.js';
export { engineRpcHandlers } from './rpc.js';
export type { EngineTables, InstanceStateTable, TickLeasesTable } from './tables.js';
export {
  defineModule,
  type WorldModule,
  type ModuleDefinition,
  type ModuleContext,
  type ModuleTables,
  type ModuleParts,
  type ModuleInstance,
  type SharedContext,
  type CliContext,
  type CliSetup,
  type SimulateHooks,
  type SimulationSession,
  type ErasedSession,
} from './module.js';
