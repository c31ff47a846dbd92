/**
 * The memory world (seed 4's memory profile): reflects on what changed in memory since its
 * baseline, with a decision agent whose only tools are in-process and contact no one. The app
 * runs it through `memoryModule` (kind `memory`, tab `memory`), which also owns the memory store
 * and the sources and provides `MemoryStoreKey` and `MemorySyncKey`. By hand:
 *
 *   await applyMigrations(db, dialect, { ...memoryMigrations, ...memoryWorldMigrations });
 *   const world = createMemoryWorld({ db: tablesView<MemoryWorldTables>(db), memory, agent: runner, settings, clock, ids, emit, log, ready });
 *   registry.add(world);
 *   implement(memoryContract, memoryRpcHandlers(memory, sources, world.service));
 */
export { memoryModule, type MemoryModuleTables } from './module.js';
export { memorySimulation } from './simulate.js';
export { createMemoryWorld } from './world.js';
export type { MemoryWorld, MemoryWorldDeps, MemoryWorldMemory, DecisionAgent, MemoryObservation, MemoryContext, MemoryReflection } from './world.js';
export { MemoryWorldService, type MemoryWorldServiceDeps } from './service.js';
export { OutputStore, type StagedOp, type Applied } from './outputs.js';
export { notificationFeed, type NotificationFeed } from './notification-feed.js';
export {
  memoryTools,
  MEMORY_TOOL_NAMES,
  DELEGATE_TOOL_NAME,
  MAX_DELEGATIONS_PER_TICK,
  MAX_NOTIFICATIONS_PER_TICK,
  MAX_TODO_CHANGES_PER_TICK,
  MAX_GOAL_CHANGES_PER_TICK,
  type ToolSession,
} from './tools.js';
export { DECISION_SYSTEM, decisionPrompt } from './prompts.js';
export { memoryWorldHandlers, memoryRpcHandlers } from './rpc.js';
export { memoryWorldConfigSchema, DEFAULT_MEMORY_WORLD_SETTINGS, type MemoryWorldSettings } from './config.js';
export { memoryWorldMigrations, MEMORY_WORLD_TABLES } from './migrations.js';
export type { MemoryWorldTables, MemoryNotificationsTable, MemoryTodosTable, MemoryGoalsTable } from './tables.js';
export type { MemoryEvents, MemoryWorldEmit } from './events.js';
export { memoryContract } from '../../protocol/memory.js';
export { DelegationStore, delegationText, type DelegationHost } from './delegations.js';
