/**
 * The tasks world's tables (seed 1's names, shipped before worlds were modules, and `tasks_ticks`):
 * migrations `0004_tasks`, `0006_log_exec_owner`, `0007_task_order_and_user_choice` (old names),
 * then `tasks/0008_write_rights_review` … `tasks/0012_task_removed_at`.
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 */
import type { ColumnType } from 'kysely';

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
  /** Who gave the write rights: `none`, `person`, `heartbeat_md` or `older_version` (see protocol `WriteChoice`). */
  write_choice: ColumnType<string, string | undefined, string>;
  /** User tasks: unique among tasks not completed (dedupe.ts); null for system tasks. */
  dedupe_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** The inputs' fingerprint when its last evaluation decided noop, and when (null: not so). */
  noop_fingerprint: ColumnType<string | null, string | null | undefined, string | null>;
  noop_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** User tasks: when the person removed it (hidden, not evaluated, restorable); null while it is not. */
  removed_at: ColumnType<number | null, number | null | undefined, number | null>;
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
  /** JSON of the finished execution's outcome (`exec_state = 'executed'`), applied by commit. */
  exec_result: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON `RowDetail` (log-detail.ts): the execution's answer, tool calls and figures, and the runs behind the row. */
  detail: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON `ExecCheckpoint` (exec-checkpoint.ts): the running execution's runs, steps, calls in flight and answer. */
  exec_checkpoint: ColumnType<string | null, string | null | undefined, string | null>;
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
  skill_server: ColumnType<string | null, string | null | undefined, string | null>;
  /** `person` or `subconscious` (resolved by itself); null while pending. */
  resolved_by: ColumnType<string | null, string | null | undefined, string | null>;
  resolution: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON `EscalationAction`: the held tool call (migration tasks/0013). */
  action: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON `ApprovalContext`: the run's model, tokens and the outside text it read. */
  context: ColumnType<string | null, string | null | undefined, string | null>;
  /** accept | edit | respond | ignore */
  answer: ColumnType<string | null, string | null | undefined, string | null>;
  answer_arguments: ColumnType<string | null, string | null | undefined, string | null>;
  answer_text: ColumnType<string | null, string | null | undefined, string | null>;
  answered_by: ColumnType<string | null, string | null | undefined, string | null>;
  answered_via: ColumnType<string | null, string | null | undefined, string | null>;
}

/** One evaluated tick: the situation report as sent and each evaluation call (for a row's detail and the grouped log). */
export interface TasksTicksTable {
  tick_id: string;
  tick_at: number;
  report: string | null;
  report_tokens: number | null;
  /** JSON `EvaluationRecord[]` (log-detail.ts). */
  evaluations: string;
  tasks: number;
  input_tokens: number;
  output_tokens: number;
  duration_ms: number | null;
  created_at: number;
}

export interface TasksTables {
  subconscious_tasks: SubconsciousTasksTable;
  subconscious_log: SubconsciousLogTable;
  subconscious_escalations: SubconsciousEscalationsTable;
  tasks_ticks: TasksTicksTable;
}
