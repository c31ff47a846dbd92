export type * from './types.js';
export { Instance, DEFAULT_TICK_TIMEOUT_MS, type EngineDeps, type InstanceOptions, type TickOptions } from './instance.js';
export { Scheduler, type SchedulerOptions } from './scheduler.js';
export { Registry } from './registry.js';
export { WorldCatalog, type WorldFactory } from './catalog.js';
export { readStatus, type EngineKeys, type OpenTick } from './status.js';
export { TickLease, LEASE_TTL_MS } from './lease.js';
export { engineRpcMethods, type StatusResult } from './rpc.js';
