/**
 * The closed-loop harness of seed 5 (issue 14): a quick tier, a reasoning tier and a subconscious
 * layer on our graph runtime, offline (deterministic stand-ins) or live (local model, agent
 * runner, memory store), with every cycle persisted for the steering world.
 *
 *   const harness = createHarness({ db, clock, ids, log, emit, settings,            // offline
 *                                   llm, agent, retriever, eviction, steering,     // + live
 *                                   checkpointer, requestReview });
 *   await harness.recover();                                   // cycles a dead process left
 *   dispatcher: implement(orchestrationContract, orchestrationRpcHandlers(harness))
 *   steering world deps: { harness: harness.store }           // its HarnessHistory
 *
 *   const { state, rendering } = await runClosedLoopExample(); // `subconscious example closed-loop`
 *
 * In the app: `orchestrationModule` (module.ts) builds all of this from `[worlds.orchestration]`
 * and provides `HarnessKey`; the steering module provides `SubconsciousLayerKey` back.
 */
import { HarnessService, type HarnessServiceDeps } from './service.js';

export function createHarness(deps: HarnessServiceDeps): HarnessService {
  return new HarnessService(deps);
}

export { HarnessService, type HarnessServiceDeps, type SendOptions } from './service.js';
export { HarnessStore, HARNESS_ID, type PruneResult } from './store.js';
export { orchestrationModule } from './module.js';
export { harnessCheckpointer, HARNESS_CHECKPOINT_TABLES } from './checkpoints.js';
export { registerExampleCommands } from './cli.js';
export { orchestrationRpcHandlers } from './rpc.js';
export { orchestrationMigrations } from './migrations.js';
export { ORCHESTRATION_TABLES, type OrchestrationTables } from './tables.js';
export { orchestrationConfigSchema, DEFAULT_ORCHESTRATION_CONFIG, EVICTION_BAND, type OrchestrationConfig, type OrchestrationConfigInput } from './config.js';
export type { OrchestrationEvents, OrchestrationEmit, Emit } from './events.js';
export { buildHarnessGraph, cycleTranscript, HARNESS_GRAPH, PRESSURE_ESCALATION } from './graph.js';
export { initialState, applyPatch, startCycle, activeContextTokens, utilization } from './state.js';
export { offlineRuntime, retrieveByTerms, simulateExecution, ANOMALY_TERMS, type OfflineRuntimeOptions } from './offline.js';
export { liveRuntime, HARNESS_WORLD, type LiveRuntimeDeps } from './live.js';
export type { HarnessRuntime, CycleContext, ReasoningInput, ReasoningResult, EvictionDoc } from './runtime.js';
export {
  compress,
  compressionBudget,
  truncateProportionally,
  extractiveSummarizer,
  COMPRESSION_RATIO,
  SUMMARY_FLOOR_TOKENS,
  MIN_SUMMARY_TOKENS,
  SUMMARY_TOLERANCE,
  type Summarizer,
  type SummarizeRequest,
} from './compress.js';
export { chainDiffs, signDiff, verifyChain, summarizeDiffs, GENESIS_SIGNATURE } from './world-diff.js';
export { reasoningSystem, steeringSection, parseReasoningAnswer } from './prompts.js';
export { runClosedLoopExample, EXAMPLE_MEMORY, EXAMPLE_PACKETS, EXAMPLE_SETTINGS } from './example.js';
export type { ClosedLoopExampleOptions, ClosedLoopExampleResult, ExampleCycle, ExamplePacket } from './example.js';
export { renderExample } from './render.js';
export type * from './types.js';
export { HarnessKey, SubconsciousLayerKey, HarnessMemoryKey, HarnessAgentKey, type SubconsciousLayer, type HarnessMemory } from './services.js';
