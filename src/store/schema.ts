/**
 * The database's table types. One interface per table, all gathered in `Database`.
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 * Each module appends its own tables here, next to a migration under `migrations/`.
 */
import type { ColumnType } from 'kysely';

/** Namespaced key/value state: keys are `<world>:<key>` (seed 4). */
export interface InstanceStateTable {
  key: string;
  value: string; // JSON
  updated_at: number;
}

/** The model-call ledger: every call through `llm/` is one row. */
export interface ModelCallsTable {
  id: string;
  at: number;
  world: string;
  purpose: string;
  role: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  /** 1 when the server gave no usage figures and tokens were estimated (4 chars/token). */
  estimated: number;
  latency_ms: number;
  /** `ok` or the error kind (`rate_limit`, `rate_cap`, `timeout`, …). */
  outcome: string;
  error: string | null;
}

/** Per-world tick leases: the cross-process tick lock. */
export interface TickLeasesTable {
  world: string;
  holder: string | null;
  generation: number;
  expires_at: number;
}

/** The agent runner's approval gate (issue 3): one row per writing tool call awaiting a human. */
export interface ApprovalsTable {
  id: string;
  run_id: string;
  /** `host:pid` of the process whose run waits on this row. */
  owner: string | null;
  world: string;
  /** The MCP tool's own name (not the model-facing `server__tool`). */
  tool: string;
  server: string;
  arguments: string; // JSON
  reason: string;
  created_at: number;
  /** null: an attended run, which waits for the answer. */
  expires_at: number | null;
  state: 'pending' | 'approved' | 'denied' | 'expired';
  answered_at: number | null;
}

/** Seed 1: standing tasks (system defaults, HEARTBEAT.md lines, user tasks). */
export interface SubconsciousTasksTable {
  id: string;
  title: string;
  /** `system` or `user`. */
  source: string;
  /** `default` (seeded), `heartbeat_md` (a HEARTBEAT.md line) or `user`. */
  origin: string;
  /** HEARTBEAT.md tasks: 1 while their line is in the file. */
  origin_present: number;
  /** `pending`, `once` or `cron:<expr>`. */
  recurrence: string;
  enabled: number;
  /** Write intent: 1 when the user asked for a write (send, post, delete…). */
  needs_tools: number;
  last_run_at: number | null;
  next_run_at: number | null;
  completed: number;
  created_at: number;
  updated_at: number;
  /** HEARTBEAT.md tasks: the line's position among the file's tasks (lists follow the file). */
  origin_order: number | null;
  /** 1 when the user switched the task off (a HEARTBEAT.md line coming back leaves it off). */
  user_disabled: ColumnType<number, number | undefined, number>;
}

/** Seed 1: one row per due task per tick, updated in place. */
export interface SubconsciousLogTable {
  id: string;
  task_id: string;
  task_title: string;
  tick_id: string;
  tick_at: number;
  /** in_progress, act, noop, escalate, failed, cancelled, dismissed. */
  decision: string;
  /** What the model decided (noop/act/escalate), null before the evaluation. */
  model_decision: string | null;
  reason: string | null;
  result: string | null;
  duration_ms: number | null;
  /** `none`, `running` (written before executing) or `done` (written with the result). */
  exec_state: string;
  /** `local`, `full` or `analysis`. */
  exec_mode: string | null;
  exec_started_at: number | null;
  /** `host:pid` of the process executing the row (see core/process-identity). */
  exec_owner: string | null;
  run_id: string | null;
  created_at: number;
  updated_at: number;
}

/** Seed 1: unsolicited writes waiting for the user's approval. */
export interface SubconsciousEscalationsTable {
  id: string;
  task_id: string;
  log_id: string;
  title: string;
  description: string;
  analysis: string | null;
  /** critical, important, normal. */
  priority: string;
  /** pending, approved, dismissed. */
  status: string;
  skill_related: number;
  created_at: number;
  resolved_at: number | null;
}

/** A graph run's cursor (src/graph/): where a thread stands, so a killed run resumes. */
export interface GraphThreadsTable {
  thread_id: string;
  graph: string;
  /** running, finished, failed. */
  status: string;
  /** The node that runs next; null once finished. */
  next_node: string | null;
  /** The merged state after the last finished node (JSON). */
  state: string;
  /** Finished steps so far. */
  seq: number;
  error: string | null;
  created_at: number;
  updated_at: number;
}

/** One finished graph node: its update and the merged state after it (both JSON). */
export interface GraphCheckpointsTable {
  thread_id: string;
  seq: number;
  node: string;
  node_update: string;
  state: string;
  at: number;
}

export interface Database {
  instance_state: InstanceStateTable;
  model_calls: ModelCallsTable;
  tick_leases: TickLeasesTable;
  subconscious_tasks: SubconsciousTasksTable;
  subconscious_log: SubconsciousLogTable;
  subconscious_escalations: SubconsciousEscalationsTable;
  approvals: ApprovalsTable;
  graph_threads: GraphThreadsTable;
  graph_checkpoints: GraphCheckpointsTable;
}
