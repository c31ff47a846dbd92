/**
 * The protocol: contracts (methods and events) of every module, and the typed client. Browser-safe
 * (zod only): the page imports this folder and nothing else from `src/`.
 *
 * `productContracts` lists what the shipped daemon serves; a module's contract is added here when
 * the module is added to `src/app/modules.ts` (a type check there says so if one is missing).
 */
import type { MergedEvents, MergedMethods } from './contract.js';
import { agentContract } from './agent.js';
import { botsContract } from './bots.js';
import { consciousContract } from './conscious.js';
import { engineContract } from './engine.js';
import { heartbeatContract } from './heartbeat.js';
import { memoryContract } from './memory.js';
import { orchestrationContract } from './orchestration.js';
import { runtimesContract } from './runtimes.js';
import { steeringContract } from './steering.js';
import { tasksContract } from './tasks.js';
import { usageContract } from './usage.js';

export * from './contract.js';
export * from './client.js';
export * from './engine.js';
export * from './usage.js';
export * from './agent.js';
export * from './tasks.js';
export * from './memory.js';
export * from './conscious.js';
// Its rows share names with the tasks world's (Task, TaskSource): import them from './bots.js'.
export { botsContract, type BotsMethods, type BotsEvents } from './bots.js';
export * from './heartbeat.js';
export * from './runtimes.js';
export * from './orchestration.js';
export * from './steering.js';
export { isTimeZone } from './time-zone.js';
export type { ReadyCheck, ReadyReport, NotFoundBody } from './http.js';

export const productContracts = [
  engineContract,
  usageContract,
  agentContract,
  memoryContract,
  tasksContract,
  consciousContract,
  botsContract,
  runtimesContract,
  heartbeatContract,
  orchestrationContract,
  steeringContract,
] as const;

/** Every method the shipped daemon serves: name → params and result. */
export type ProductMethods = MergedMethods<typeof productContracts>;
/** Every event the shipped daemon sends on `/events`. */
export type ProductEvents = MergedEvents<typeof productContracts>;
