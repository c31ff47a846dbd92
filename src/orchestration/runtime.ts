/**
 * What the graph's nodes delegate to. Seed 5 isolates its simulated parts behind small functions
 * (`retrieve_context`, `agent_execution_node`, `summarize_diffs`, `subconscious_eval_node`) so a
 * production version swaps them for model calls and a real retriever while keeping the topology,
 * the state fields, the routing flags and the reducer. `offline.ts` and `live.ts` are the two
 * implementations; the nodes in `graph.ts` are shared.
 */
import type { OrchestrationConfig } from './config.js';
import type { SummarizeRequest } from './compress.js';
import type { ChannelMessage, EvictionDoc, GatedWorldSummary, HarnessMode, MemoryRecord, RetrievedTrace, SemanticEntry, SystemState } from './types.js';

/** What every runtime call gets: the cycle's abort signal and its clock. */
export interface CycleContext {
  runtime: HarnessRuntime;
  settings: OrchestrationConfig;
  now(): number;
  signal?: AbortSignal | undefined;
}

export interface ReasoningInput {
  cycle: number;
  channel: string;
  text: string;
  instructions: string;
  retrieved: RetrievedTrace[];
  /** The active semantic history (entity traces of earlier cycles). */
  history: SemanticEntry[];
  directive: { id: string; text: string } | null;
}

/** The reasoning tier's result: the reply plus what it extracted (semantic traces, world diffs, an escalation). */
export interface ReasoningResult {
  reply: string;
  entities: { entity: string; trace: string }[];
  diffs: { entity: string; mutation: string; delta: number; critical: boolean }[];
  /** Why deep reflection is needed now, or null. */
  escalate: string | null;
}

export type { EvictionDoc } from './types.js';

export interface HarnessRuntime {
  readonly mode: HarnessMode;
  /**
   * Who does the deep reflection: the steering world (it reviews the forwarded history on its own
   * tick; `steer` reports the directive in force), or the offline stand-in (`steer` writes the
   * steering itself). Default: the steering world in live mode, the stand-in offline.
   */
  readonly subconscious?: 'steering_world' | 'stand_in' | undefined;
  /** Quick tier, first pass: the raw packet becomes a macro instruction. */
  instruct(input: { channel: string; text: string; recent: ChannelMessage[] }, ctx: CycleContext): Promise<string>;
  /** Quick tier, second pass: the reasoning tier's reply becomes the channel response. */
  respond(input: { channel: string; text: string; instructions: string; reply: string }, ctx: CycleContext): Promise<string>;
  /** Memory traces for the instruction; `note` explains a degraded retrieval (recorded in the event log). */
  retrieve(query: string, state: SystemState, ctx: CycleContext): Promise<{ traces: RetrievedTrace[]; note?: string | undefined }>;
  /** The steering directive the reasoning tier is given in this cycle. */
  directive(cycle: number, state: SystemState, ctx: CycleContext): Promise<{ id: string; text: string } | null>;
  /** Reasoning tier: execute the instruction. */
  execute(input: ReasoningInput, ctx: CycleContext): Promise<ReasoningResult>;
  /** Move traces into long-term memory; returns the records kept in the state (offline), or none (live: `storeEvicted` writes them). */
  evict(docs: EvictionDoc[], ctx: CycleContext): Promise<MemoryRecord[]>;
  /**
   * Live: write evicted traces to the memory store. The service calls it only after the cycle's
   * state committed (state advances only on success); until it succeeds the docs wait in the state
   * (`unstored_evictions`). Writes are keyed by the doc's stable external id, so a retry updates in place.
   */
  storeEvicted?(docs: EvictionDoc[], ctx: CycleContext): Promise<void>;
  /** One summariser call for the 20:1 compression. */
  summarize(req: SummarizeRequest, ctx: CycleContext): Promise<string>;
  /** The subconscious layer: the steering after a forwarded summary. */
  steer(summary: GatedWorldSummary, state: SystemState, ctx: CycleContext): Promise<string | null>;
}
