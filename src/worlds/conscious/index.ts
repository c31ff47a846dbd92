/**
 * The conscious world (seed 3): memory digested into actionable items.
 *
 *   await applyMigrations(db, dialect, consciousMigrations);
 *   const conscious = createConsciousWorld({ db: tablesView<ConsciousTables>(db), memory, settings, workspace, clock, emit, log });
 *   registry.add(new Instance(conscious, engineDeps));                   // first tick after conscious.initialDelaySeconds()
 *   implement(consciousContract, consciousRpcHandlers(conscious.service, () => instance.tick()));
 */
export { createConsciousWorld, CURSOR_KEY } from './world.js';
export type { ConsciousWorld, ConsciousWorldDeps, ConsciousMemory, ConsciousObservation, ConsciousContext, ConsciousReflection } from './world.js';
export { ConsciousService, type ConsciousServiceDeps } from './service.js';
export { ActionableStore } from './actionables.js';
export { consciousRpcHandlers, type ConsciousTrigger } from './rpc.js';
export { consciousConfigSchema, DEFAULT_CONSCIOUS_SETTINGS, type ConsciousSettings } from './config.js';
export { consciousMigrations } from './migrations.js';
export type { ConsciousTables, ConsciousActionablesTable } from './tables.js';
export type { ConsciousEvents, ConsciousEmit } from './events.js';
export { BUILT_IN_PROMPT, loadPrompt, memoryPrompt } from './prompt.js';
export { actionablesReplySchema, actionableId, toActionables, SOURCE_ALIASES, DEFAULT_SOURCE_LABELS, type ExtractedActionable } from './schema.js';
export { consciousContract } from '../../protocol/conscious.js';
