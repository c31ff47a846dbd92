/**
 * The conscious world (seed 3): memory digested into actionable items. The app runs it through
 * `consciousModule` (kind `conscious`, tab `actionables`); by hand:
 *
 *   await applyMigrations(db, dialect, consciousMigrations);
 *   const conscious = createConsciousWorld({ db: tablesView<ConsciousTables>(db), memory, settings, workspace, clock, emit, log, ready });
 *   registry.add(conscious);                                             // first tick after conscious.initialDelayMs()
 *   implement(consciousContract, consciousRpcHandlers(conscious.service, () => registry.trigger('conscious')));
 */
export { consciousModule } from './module.js';
export { consciousSimulation } from './simulate.js';
export { createConsciousWorld, CURSOR_KEY } from './world.js';
export type { ConsciousWorld, ConsciousWorldDeps, ConsciousMemory, ConsciousObservation, ConsciousContext, ConsciousReflection } from './world.js';
export { ConsciousService, type ConsciousServiceDeps } from './service.js';
export { ActionableStore } from './actionables.js';
export { consciousRpcHandlers, type ConsciousTrigger } from './rpc.js';
export { consciousConfigSchema, DEFAULT_CONSCIOUS_SETTINGS, type ConsciousSettings } from './config.js';
export { consciousMigrations, CONSCIOUS_TABLES } from './migrations.js';
export { RunStore, KEEP_RUNS } from './runs.js';
export type { ConsciousTables, ConsciousActionablesTable, ConsciousRunsTable } from './tables.js';
export type { ConsciousEvents, ConsciousEmit } from './events.js';
export { BUILT_IN_PROMPT, loadPrompt, memoryPrompt, isExtractionPrompt, allot, type RecallBudget } from './prompt.js';
export { mergeDuplicates, matchStored, sameItem, titleKey, titleSimilarity, SAME_ITEM_SIMILARITY, type TitleKey } from './dedup.js';
export { ActionableMemoryLink, actionableDocument, CONSCIOUS_NAMESPACE, type ConsciousMemoryWriter } from './memory-link.js';
export {
  actionablesReplySchema,
  actionableId,
  toActionables,
  SOURCE_ALIASES,
  UNKNOWN_SOURCE,
  DEFAULT_SOURCE_LABELS,
  type ExtractedActionable,
} from './schema.js';
export { consciousContract } from '../../protocol/conscious.js';
