/**
 * The harness's domain (seed 5): the committed graph state, and the small interfaces it needs from
 * its neighbours — the memory store (`Retriever`, `EvictionSink`), the agent runner
 * (`ReasoningAgent`) and the steering world (`SteeringSource`). The real services satisfy them
 * structurally; nothing here imports them.
 */
import type { EvictionRecord, GateDecision, GatedWorldSummary, HarnessNode, SemanticEntry, WorldDiff } from '../protocol/orchestration.js';

export type {
  EvictionRecord,
  GateDecision,
  GateReason,
  GatedWorldSummary,
  HarnessMode,
  HarnessNode,
  SemanticEntry,
  WorldDiff,
} from '../protocol/orchestration.js';

/** A channel-visible message: the user's packet or the quick tier's answer. */
export interface ChannelMessage {
  role: 'user' | 'assistant';
  channel: string;
  text: string;
  cycle: number;
  at: number;
}

/** Offline mode's long-term memory (the mock vector database): records kept in the state. */
export interface MemoryRecord {
  id: string;
  title: string;
  body: string;
  cycle: number;
}

/** One semantic trace on its way to long-term memory. */
export interface EvictionDoc {
  external_id: string;
  title: string;
  body: string;
  entry: SemanticEntry;
}

/** A memory trace retrieved for the current run. */
export interface RetrievedTrace {
  id: string;
  title: string;
  snippet: string;
  score: number;
}

/** The raw packet `channel_ingestion` reads. */
export interface InboundPacket {
  cycle_id: string;
  channel: string;
  text: string;
}

/** This cycle's execution record compressed 20:1 (see compress.ts). */
export interface CompressedSummary {
  input_tokens: number;
  budget_tokens: number;
  summary: string;
  summary_tokens: number;
  attempts: number;
  truncated: boolean;
}

/**
 * The committed graph state. Seed 5's fields first, then the harness's bookkeeping for the
 * current cycle (reset when a cycle starts). JSON only: it is checkpointed after every node.
 */
export interface SystemState {
  /** Channel-visible messages (the newest `MAX_MESSAGES`). */
  messages: ChannelMessage[];
  /** The quick tier's macro instruction (first `frontend_agent` pass). */
  agent_instructions: string | null;
  /** The reasoning tier's result, consumed by the second `frontend_agent` pass. */
  agent_reply: string | null;
  /** What goes back on the channel (second pass). */
  channel_response: string | null;
  semantic_history: SemanticEntry[];
  /** World-state mutations queued for the summarization gate, across cycles. */
  sequential_diffs: WorldDiff[];
  /** The package forwarded to the subconscious layer this cycle, or null when the gate held. */
  gated_world_summary: GatedWorldSummary | null;
  /** Share of the context window the active context fills (0..1). */
  context_utilization: number;
  /** Set by the reasoning tier to force the gate; cleared by `subconscious_eval`. */
  trigger_subconscious: boolean;
  /** A scheduled consolidation is due; cleared by `subconscious_eval`. */
  cron_due: boolean;
  /**
   * When the subconscious layer last reviewed (or the first cycle ran): the harness sets
   * `cron_due` itself once `consolidation_minutes` passed since. Absent in a state from an older version.
   */
  consolidated_at?: number | null | undefined;
  long_term_memory: MemoryRecord[];
  retrieved_context: RetrievedTrace[];
  subconscious_steering: string | null;
  /** What happened, one line per decision (the newest `MAX_EVENT_LOG`). */
  event_log: string[];

  /** The current (or last) cycle's sequence number. */
  cycle: number;
  inbound: InboundPacket | null;
  /** Nodes this cycle ran, in order. */
  path: HarnessNode[];
  /** The world diff chain's head. */
  world_signature: string;
  /** The diffs this cycle emitted (the timeline rows). */
  cycle_diffs: WorldDiff[];
  gate: GateDecision | null;
  evictions: EvictionRecord[];
  /** Live: evicted traces not yet in the memory store (written after the commit; kept here until that succeeds). */
  unstored_evictions?: EvictionDoc[] | undefined;
  escalation: string | null;
  /** The steering directive the reasoning tier was given this cycle. */
  directive: { id: string; text: string } | null;
  compressed: CompressedSummary | null;
}

/** A node's partial update. `messages`, `event_log` and `path` are appended by the reducer; the rest replace. */
export type StatePatch = Partial<SystemState>;

// ---- what the harness needs from its neighbours -------------------------------------------------

/** A recall hit from the memory store: a ranked document with a snippet. */
export interface RecallHit {
  namespace: string;
  external_id: string;
  title: string;
  snippet: string;
  /** Higher is better; only the order matters. */
  score: number;
}

export interface RecallQuery {
  query: string;
  /** Absent: every namespace. */
  namespace?: string | undefined;
  limit: number;
}

/** The memory store's recall (live retrieval). */
export interface Retriever {
  recall(query: RecallQuery): Promise<RecallHit[]>;
}

/** A document for the memory store: storing the same (namespace, external id) again updates it in place. */
export interface MemoryDocumentInput {
  namespace: string;
  external_id: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
}

/** Where live eviction puts semantic history: the memory store's documents. */
export interface EvictionSink {
  store(doc: MemoryDocumentInput): Promise<void>;
}

/** What a reasoning run reports when it settles (a subset of the agent runner's `RunOutcome`). */
export interface ReasoningOutcome {
  status: 'done' | 'failed' | 'cancelled';
  error?: string | undefined;
  /** The final answer, control lines stripped. */
  text: string;
}

export interface ReasoningRequest {
  world: string;
  purpose: string;
  system: string;
  prompt: string;
  /** Channel messages are outside content: writes wait for an approval. */
  mode: 'tainted';
  attended: boolean;
  title?: string | undefined;
  /** The MCP servers the run may use (absent: all configured). */
  servers?: readonly string[] | undefined;
  signal?: AbortSignal | undefined;
}

/** The agent runner as the reasoning tier uses it (`AgentRunner` satisfies it). */
export interface ReasoningAgent {
  start(req: ReasoningRequest): { id: string; settled: Promise<ReasoningOutcome> };
}

/** The steering world's directive for a cycle (the newest not expired), or null. */
export interface SteeringSource {
  forCycle(seq: number): Promise<{ id: string; text: string } | null>;
}
