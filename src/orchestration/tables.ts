/**
 * The harness's tables (both dialects; epoch ms in bigint columns, booleans 0/1, JSON as text).
 *
 *   orchestration_state       the committed graph state between cycles (one row per harness),
 *                             with a version so two processes never both advance it;
 *   orchestration_cycles      one row per channel message: queued → running → done | failed, the
 *                             path through the graph, the gate's decision, evictions, the response;
 *   orchestration_world_diff  the append-only world-state timeline (signature, mutation, delta);
 *   orchestration_history     each finished cycle compressed 20:1 — what the steering world reviews;
 *   orchestration_graph_*     the running cycle's graph checkpoints (checkpoints.ts), so a killed
 *                             cycle resumes from its last finished node.
 *
 * Retention (config `retention_days`, `retention_cycles`): finished cycles with their world diff
 * and history rows are deleted together once past either bound (store.ts `prune`).
 */
import type { GraphCheckpointsTable, GraphThreadsTable } from '../graph/index.js';

export interface OrchestrationStateTable {
  id: string;
  version: number;
  /** The last finished cycle's seq. */
  cycle: number;
  /** SystemState as JSON. */
  state: string;
  updated_at: number;
}

export interface OrchestrationCyclesTable {
  id: string;
  seq: number;
  channel: string;
  text: string;
  /** queued, running, done, failed. */
  status: string;
  /** offline, live. */
  mode: string;
  /** `host:pid:harness` of the process that runs it (see core/process-identity). */
  owner: string | null;
  /** 1: a scheduled consolidation was due when the cycle was sent. */
  cron_due: number;
  /** JSON HarnessNode[]. */
  path: string;
  /** JSON GateDecision. */
  gate: string | null;
  /** JSON EvictionRecord[]. */
  evictions: string;
  escalation: string | null;
  response: string | null;
  directive_id: string | null;
  directive_text: string | null;
  steering: string | null;
  context_utilization: number | null;
  /** JSON string[]: this cycle's lines of the event log. */
  event_log: string;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface OrchestrationWorldDiffTable {
  cycle_id: string;
  seq: number;
  idx: number;
  signature: string;
  entity: string;
  mutation: string;
  delta: number;
  critical: number;
  at: number;
}

export interface OrchestrationHistoryTable {
  cycle_id: string;
  seq: number;
  input_tokens: number;
  budget_tokens: number;
  summary: string;
  summary_tokens: number;
  attempts: number;
  truncated: number;
  forwarded: number;
  created_at: number;
}

export interface OrchestrationTables {
  orchestration_state: OrchestrationStateTable;
  orchestration_cycles: OrchestrationCyclesTable;
  orchestration_world_diff: OrchestrationWorldDiffTable;
  orchestration_history: OrchestrationHistoryTable;
  orchestration_graph_threads: GraphThreadsTable;
  orchestration_graph_checkpoints: GraphCheckpointsTable;
}

/** Every table the harness owns (the module declares them). */
export const ORCHESTRATION_TABLES = [
  'orchestration_state',
  'orchestration_cycles',
  'orchestration_world_diff',
  'orchestration_history',
  'orchestration_graph_threads',
  'orchestration_graph_checkpoints',
] as const satisfies readonly (keyof OrchestrationTables)[];
