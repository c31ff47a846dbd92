/**
 * The package's main entry (`import … from 'subconscious-engine'`): the in-process engine. Build
 * an app from the product's modules and your own (`defineModule` + a contract from
 * `subconscious-engine/protocol`), run it with or without the HTTP face, and hand your worlds the
 * services the product provides (by their keys).
 *
 *   const app = await createApp({ workspace, modules: [...productModules, myModule] });
 *   await app.start();
 *
 * Everything here is the documented surface; deep `dist/` paths are not part of the package.
 */
export { createApp, modelsConfig, type App, type AppOptions, type AppServices } from '../app/app.js';
export { productModules } from '../app/modules.js';
export { CONFIG_FILE, DEFAULT_HOST, DEFAULT_PORT, type Config } from '../app/config.js';
export { startDaemon, announce, type Daemon, type DaemonOptions } from '../cli/daemon.js';
export {
  defineModule,
  type ModuleDefinition,
  type ModuleContext,
  type ModuleParts,
  type ModuleTables,
  type WorldModule,
  type World,
  type WorldState,
  type TickContext,
  type Observation,
  type CommitInput,
  type CommitSummary,
  type AbandonReason,
  type TickOutcome,
  type InstanceStatus,
} from '../engine/index.js';
export {
  SubconsciousError,
  isSubconsciousError,
  describeError,
  FakeClock,
  systemClock,
  uuid,
  sequentialIds,
  createLogger,
  silentLogger,
  Services,
  serviceKey,
  provide,
  PresenceKey,
  type Clock,
  type IdGen,
  type Logger,
  type ServiceKey,
  type Provision,
} from '../core/index.js';
export type { Llm, ModelRole } from '../llm/index.js';
export type { MigrationSet, DialectName } from '../store/index.js';
// The services the product's modules provide, for your modules' `needs` / `uses`.
export { AgentRunnerKey, ApprovalStoreKey, SkillsKey } from '../agent/index.js';
export { MemoryStoreKey, MemorySyncKey, MemoryNotificationsKey } from '../memory/index.js';
export { BotsHeartbeatKey, ExternalHeartbeatKey, routeHeartbeatHosts, type BotsHeartbeatApi, type ExternalHeartbeatHost } from '../bots/index.js';
export { HarnessKey, SubconsciousLayerKey } from '../orchestration/index.js';
// Contracts: what your module's RPC methods and events are declared with.
export {
  defineContract,
  method,
  implement,
  createRpcClient,
  type Contract,
  type MethodSpec,
  type EventMap,
  type MethodsOf,
  type EventsOf,
} from '../protocol/index.js';
