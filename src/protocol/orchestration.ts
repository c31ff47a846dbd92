/**
 * The orchestration harness's contract (seed 5, issue 14): a channel message into the closed loop,
 * the harness's state, and its recent cycles — the path each took through the graph, the gate's
 * decision, evictions, the world diff and the 20:1 compressed history row.
 *
 * `orchestration.send` answers at once with the queued cycle's id (a live cycle runs the agent
 * runner and may take minutes; the page follows `orchestration.cycle` events); `wait: true`
 * answers after the cycle finished, with the cycle.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

/** The graph's nodes, in the order of the topology (`frontend_agent` runs twice per cycle). */
export const HARNESS_NODES = [
  'channel_ingestion',
  'frontend_agent',
  'agent_execution',
  'summarization_gate',
  'context_manager_hook',
  'subconscious_eval',
] as const;
export type HarnessNode = (typeof HARNESS_NODES)[number];

/** `offline`: deterministic stand-ins, no model. `live`: the local model, the agent runner, the memory store. */
export type HarnessMode = 'offline' | 'live';
export type CycleStatus = 'queued' | 'running' | 'done' | 'failed';
/** Why the summarization gate forwarded: enough queued diffs, the reasoning tier's escalation, or a due cron review. */
export type GateReason = 'threshold' | 'escalation' | 'cron';

/** One mutation of the world state. `signature` chains: sha-256 of the previous signature, the mutation and the delta. */
export interface WorldDiff {
  signature: string;
  entity: string;
  mutation: string;
  /** Magnitude of the change, 0..1. */
  delta: number;
  critical: boolean;
}

/** A world diff as the append-only timeline stores it. */
export interface WorldDiffRow extends WorldDiff {
  cycle_id: string;
  /** The cycle's sequence number. */
  seq: number;
  /** Position within the cycle. */
  index: number;
  at: number;
}

/** The consolidated package the gate forwards to the subconscious layer. */
export interface GatedWorldSummary {
  macro_trend: string;
  critical_event_count: number;
  total_magnitude: number;
  diff_count: number;
  first_signature: string | null;
  last_signature: string | null;
  reasons: GateReason[];
}

export interface GateDecision {
  forwarded: boolean;
  /** Empty when the gate held the diffs. */
  reasons: GateReason[];
  /** Diffs queued when the gate decided. */
  queued: number;
  threshold: number;
}

/** Semantic history moved into long-term memory by the context manager. */
export interface EvictionRecord {
  external_id: string;
  title: string;
  tokens: number;
}

/** An entity-centric trace extracted from execution, or the marker left where traces were evicted. */
export interface SemanticEntry {
  id: string;
  cycle: number;
  kind: 'trace' | 'eviction_marker';
  entity: string;
  trace: string;
}

/** One cycle's execution record compressed 20:1 (the steering world's input). */
export interface CompressedRow {
  cycle_id: string;
  seq: number;
  input_tokens: number;
  budget_tokens: number;
  summary: string;
  summary_tokens: number;
  /** Summariser calls (0: stored verbatim or empty). */
  attempts: number;
  /** The summary was still over 1.5× budget after the retry and was cut proportionally. */
  truncated: boolean;
  /** The gate forwarded this cycle to the subconscious layer. */
  forwarded: boolean;
  created_at: number;
}

export interface CycleRow {
  id: string;
  seq: number;
  channel: string;
  text: string;
  status: CycleStatus;
  mode: HarnessMode;
  /** Nodes in the order they ran (`frontend_agent` twice). Empty until the cycle finished. */
  path: HarnessNode[];
  gate: GateDecision | null;
  evictions: EvictionRecord[];
  /** Why the reasoning tier forced the gate, or null. */
  escalation: string | null;
  /** The quick tier's answer on the channel. */
  response: string | null;
  /** The steering directive in the reasoning tier's system prompt during this cycle. */
  directive: { id: string; text: string } | null;
  /** The harness's steering after the cycle (`subconscious_steering`). */
  steering: string | null;
  context_utilization: number | null;
  event_log: string[];
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  world_diff: WorldDiffRow[];
  compressed: CompressedRow | null;
}

export interface HarnessStateView {
  /** What the next cycle runs on. */
  mode: HarnessMode;
  /** `[worlds.orchestration] mode`: `auto` picks live or offline per cycle. */
  configured_mode: HarnessMode | 'auto';
  /** Why `auto` runs the offline stand-ins now (null: live, or a mode that was set). */
  mode_reason: string | null;
  /** The last finished cycle's sequence number (0: none yet). */
  cycle: number;
  /** The id of the cycle running now, or null. */
  running: string | null;
  /** Cycles waiting behind it. */
  queued: number;
  context_utilization: number;
  eviction_threshold: number;
  gate_threshold: number;
  sequential_diffs: WorldDiff[];
  semantic_history: SemanticEntry[];
  trigger_subconscious: boolean;
  cron_due: boolean;
  world_signature: string;
  subconscious_steering: string | null;
  /** Records in the in-state long-term memory (offline mode; live mode evicts into the memory store). */
  long_term_memory: number;
  last_response: string | null;
  updated_at: number | null;
}

export interface SendResult {
  cycle_id: string;
  seq: number;
  status: CycleStatus;
  /** The finished cycle (with `wait: true`), else null. */
  cycle: CycleRow | null;
}

export type OrchestrationEvents = {
  /** A cycle was queued, started, finished or failed. */
  'orchestration.cycle': {
    cycle_id: string;
    seq: number;
    status: CycleStatus;
    channel: string;
    path: HarnessNode[];
    forwarded: boolean;
    evicted: number;
    error: string | null;
  };
  /** The gate forwarded a cycle: the steering world should review soon (the event trigger). */
  'orchestration.review_requested': { cycle_id: string; seq: number; reasons: GateReason[] };
};

export const channelParam = z
  .string()
  .trim()
  .min(1, 'must name the channel')
  .max(64, 'at most 64 characters')
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:@#-]*$/, 'letters, digits and _ . : @ # - only, starting with a letter or digit');

export const messageTextParam = z.string().trim().min(1, 'must not be empty').max(8000, 'at most 8000 characters');

export const orchestrationContract = defineContract<OrchestrationEvents>()({
  methods: {
    'orchestration.send': method(
      z.strictObject({ channel: channelParam, text: messageTextParam, wait: z.boolean().optional() }),
      'Send a channel message into the harness: {channel, text, wait?}. Runs one cycle; answers at once with its id (wait: true answers when it finished).',
    ).returns<SendResult>(),
    'orchestration.state': method(
      z.strictObject({}),
      'The harness state: cycle, context utilisation, queued diffs, semantic history, triggers, steering.',
    ).returns<HarnessStateView>(),
    'orchestration.cycles': method(
      z.strictObject({ limit: z.number().int('must be a whole number').min(1, 'at least 1').max(200, 'at most 200').optional() }),
      'Recent cycles, newest first: {limit? (default 20)} — path, gate, evictions, world diff, compressed row.',
    ).returns<CycleRow[]>(),
  },
  events: ['orchestration.cycle', 'orchestration.review_requested'],
});
