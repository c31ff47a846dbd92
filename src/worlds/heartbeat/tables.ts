/**
 * The heartbeat's own tables (seed 2 §10). Conventions of `src/store/schema.ts`: epoch ms in
 * bigint columns, booleans 0/1, structured values as JSON text.
 *
 * A bot gets a `heartbeat_bots` row the first time it has unfinished work or a setting; a bot
 * without one has the defaults and nothing to check. `next_heartbeat_at` is indexed and is NULL
 * while a bot has nothing unfinished: triage selects only the due rows, so its cost follows the
 * bots with work, never the number of bots.
 */
import type { CheckinSource, CheckinState, FollowUpKind, FollowUpOrigin, FollowUpState, HeartbeatState } from '../../protocol/heartbeat.js';

export interface HeartbeatBotsTable {
  bot_id: string;
  /** The bot's direct thread (kept so triage need not ask for it). */
  thread_id: string | null;
  enabled: number;
  // Per-bot settings; null: the global value.
  interval_seconds: number | null;
  /** JSON `{enabled, start, end}` or null. */
  quiet_hours: string | null;
  timezone: string | null;
  model: string | null;
  follow_ups_enabled: number | null;
  auto_resume_on_restart: number | null;
  max_pulses_per_day: number | null;
  max_resumes_per_day: number | null;
  max_task_attempts: number | null;
  // Scheduling.
  /** The next check (absolute epoch ms); NULL: nothing unfinished, a change wakes it. */
  next_heartbeat_at: number | null;
  /** The adaptive interval now (ms); NULL: the base interval. */
  current_interval_ms: number | null;
  /** No pulse before this (pulse-error backoff). */
  backoff_until: number | null;
  cooldown_until: number | null;
  consecutive_errors: number;
  state: HeartbeatState;
  // The why.
  last_tick_at: number | null;
  last_pulse_at: number | null;
  last_verdict: string | null;
  last_reason: string;
  last_outcome: string | null;
  last_error: string | null;
  last_resume_at: number | null;
  last_resume_task_id: string | null;
  disabled_reason: string | null;
  /** The last log entry of this bot and what it said (a repeat of the same skip is counted on it). */
  last_log_id: string | null;
  last_log_key: string | null;
  /** Unused since the log's cap is store-wide (`heartbeat_log.seq`); kept, not dropped. */
  log_seq: number;
  /** A person asked for a check now: the next check ignores user-active, quiet hours and cooldown. */
  forced_at: number | null;
  /** A person stopped the bot: work that stopped before this is theirs, never resumed. */
  stopped_at: number | null;
  /** Every write bumps it: the tick's schedule write is compare-and-set, so a change in between wins. */
  version: number;
  created_at: number;
  updated_at: number;
}

/** Store-wide settings a person changed at run time (over the config file), one row. */
export interface HeartbeatSettingsTable {
  id: string;
  /** JSON of the overridden keys. */
  overrides: string;
  updated_at: number;
}

export interface HeartbeatLogTable {
  id: string;
  bot_id: string | null;
  /** Store-wide, increasing: orders entries written in the same millisecond (the cap keeps the newest 200). */
  seq: number;
  at: number;
  last_at: number;
  repeats: number;
  mode: string;
  tier: number;
  outcome: string;
  rule: string | null;
  skip: string | null;
  verdict: string | null;
  reason: string;
  task_id: string | null;
  /** JSON `{task_id, message_id}`. */
  dispatched: string | null;
  escalated: number;
  model: string | null;
  ms: number | null;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
}

export interface HeartbeatCheckinsTable {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  /** The interrupted message a check-in is about (rule 3, no task). */
  message_id: string | null;
  /** The bot message that asks the question (not a turn of the conversation: triage looks past it). */
  asked_message_id: string | null;
  source: CheckinSource;
  question: string;
  state: CheckinState;
  created_at: number;
  resolved_at: number | null;
  /** Who resolved it and through which face (null: pending, by the heartbeat itself, or before migration 0002). */
  answered_by: string | null;
  answered_via: string | null;
}

export interface HeartbeatFollowupsTable {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  kind: FollowUpKind;
  origin: FollowUpOrigin;
  note: string;
  due_at: number | null;
  state: FollowUpState;
  created_at: number;
  updated_at: number;
}

/** Counters per scope (`global` or a bot id) and local day; budgets are checked against them. */
export interface HeartbeatBudgetsTable {
  scope: string;
  day_key: string;
  pulses: number;
  resumes: number;
  errors: number;
  pulse_input_tokens: number;
  pulse_output_tokens: number;
  /** Heartbeat resumes that settled, their model calls and tokens. */
  resume_runs: number;
  resume_calls: number;
  resume_input_tokens: number;
  resume_output_tokens: number;
  /** Every full bot call seen settle (any source): the measured prompt size of a full call. */
  full_calls: number;
  full_input_tokens: number;
  updated_at: number;
}

export interface HeartbeatTables {
  heartbeat_bots: HeartbeatBotsTable;
  heartbeat_settings: HeartbeatSettingsTable;
  heartbeat_log: HeartbeatLogTable;
  heartbeat_checkins: HeartbeatCheckinsTable;
  heartbeat_followups: HeartbeatFollowupsTable;
  heartbeat_budgets: HeartbeatBudgetsTable;
}

export const HEARTBEAT_TABLES = [
  'heartbeat_bots',
  'heartbeat_settings',
  'heartbeat_log',
  'heartbeat_checkins',
  'heartbeat_followups',
  'heartbeat_budgets',
] as const;
