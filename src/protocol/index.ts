/**
 * The protocol: contracts (methods and events) of every module, and the typed client. Browser-safe
 * (zod only): the page imports this folder and nothing else from `src/`.
 *
 * `productContracts` lists what the shipped daemon serves; a module's contract is added here when
 * the module is added to `src/app/modules.ts` (a type check there says so if one is missing).
 */
import type { MergedEvents, MergedMethods } from './contract.js';
import { agentContract } from './agent.js';
import { engineContract } from './engine.js';
import { heartbeatContract } from './heartbeat.js';
import { tasksContract } from './tasks.js';
import { usageContract } from './usage.js';

export * from './contract.js';
export * from './client.js';
export * from './engine.js';
export * from './usage.js';
export * from './agent.js';
export * from './tasks.js';
export * from './heartbeat.js';
export { isTimeZone } from './time-zone.js';

export const productContracts = [engineContract, usageContract, agentContract, tasksContract, heartbeatContract] as const;

/** Every method the shipped daemon serves: name → params and result. */
export type ProductMethods = MergedMethods<typeof productContracts>;
/** Every event the shipped daemon sends on `/events`. */
export type ProductEvents = MergedEvents<typeof productContracts>;
