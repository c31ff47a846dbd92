/**
 * The bots host's tables (issue 11 §1, seed 2 §10.3). Conventions of `src/store/schema.ts`:
 * epoch ms in bigint columns, booleans as 0/1, structured values as JSON text.
 *
 * Seed 2's heartbeat reads these (never a scan of every bot in JavaScript): open work is found
 * through `bots_tasks_status_kind` (status, error_kind) and `bots_messages_interrupted`; its own
 * per-bot state (next check, budgets, log, check-ins, follow-ups) lives in its own tables.
 */
import type { ColumnType } from 'kysely';
import type { BotApprovalState, MessageRole, MessageStatus, NoteKind, TaskErrorKind, TaskSource, TaskStatus } from '../protocol/bots.js';

export interface BotsBotsTable {
  id: string;
  /** The @mention handle, unique. */
  name: string;
  label: string;
  description: string;
  persona: string;
  model_role: 'local' | 'agent';
  /** A model on the role's endpoint; null: the role's own. */
  model: string | null;
  /** JSON array of MCP server names. */
  tools: string;
  created_at: number;
  updated_at: number;
}

export interface BotsThreadsTable {
  id: string;
  kind: 'direct' | 'group' | 'system';
  name: string;
  /** The bot of a direct thread (unique: one direct thread per bot); null for groups. */
  direct_bot_id: string | null;
  /** The last message seq handed out (messages are numbered per thread). */
  next_seq: ColumnType<number, number | undefined, number>;
  created_at: number;
  updated_at: number;
  last_message_at: number | null;
}

export interface BotsThreadMembersTable {
  thread_id: string;
  bot_id: string;
  /** Order in the group as created. */
  position: number;
}

export interface BotsMessagesTable {
  id: string;
  thread_id: string;
  seq: number;
  role: MessageRole;
  bot_id: string | null;
  task_id: string | null;
  text: string;
  status: MessageStatus;
  error: string | null;
  interrupted: number;
  heartbeat: number;
  created_at: number;
  updated_at: number;
}

export interface BotsTasksTable {
  id: string;
  bot_id: string;
  thread_id: string;
  /** The bot message the current (or last) run streams into. */
  message_id: string | null;
  /** The thread message that asked for it (a person's message), when there is one. */
  request_message_id: string | null;
  title: string;
  /** The request as the bot got it (host-trusted text). */
  prompt: string;
  source: TaskSource;
  from_bot_id: string | null;
  routine_id: string | null;
  /** Handoffs in the chain that led here (a loop guard). */
  handoff_depth: number;
  status: TaskStatus;
  error_kind: TaskErrorKind | null;
  error: string | null;
  /** JSON `{summary, steps, at}` written at settle. */
  checkpoint: string | null;
  interrupted: number;
  attempts: number;
  last_heartbeat_at: number | null;
  claim_token: string | null;
  claim_at: number | null;
  claim_by: string | null;
  /** `host:pid` of the process that queued or runs it (restart repair touches only dead owners' rows). */
  owner: string | null;
  /** The owner's lease: renewed by the owning process every host tick while the task is open (orphans are found by it). */
  owner_seen_at: number | null;
  run_id: string | null;
  /** The worker whose run of it was cut off and which this one took over (issue 17 §5); null: none. */
  taken_over_from: string | null;
  review_note: string | null;
  /** Compare-and-set: every write bumps it. */
  version: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
}

/** The agent layer's approvals of bot runs, linked to their bot, thread and task (state mirrored). */
export interface BotsApprovalsTable {
  approval_id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  message_id: string | null;
  run_id: string;
  tool: string;
  server: string;
  arguments: string;
  reason: string;
  state: BotApprovalState;
  created_at: number;
  expires_at: number | null;
  answered_at: number | null;
  expired_at: number | null;
}

export interface BotsRoutinesTable {
  id: string;
  bot_id: string;
  /** A cron expression (no `cron:` prefix). */
  schedule: string;
  timezone: string;
  prompt: string;
  enabled: number;
  next_run_at: number | null;
  last_run_at: number | null;
  last_task_id: string | null;
  last_outcome: string | null;
  created_at: number;
  updated_at: number;
}

/** Per-thread user activity (seed 2 §10.2 `userActivity`) and the read mark behind unread counts. */
export interface BotsThreadActivityTable {
  thread_id: string;
  user_active_at: number | null;
  read_at: number | null;
}

/** Control lines kept from settled runs (MEMORY:, TEAM_MEMORY:, FOLLOWUP:, BLOCKED:, …). */
export interface BotsNotesTable {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  kind: NoteKind;
  text: string;
  created_at: number;
}

/** `bots.send_message` idempotency keys (`send-keys.ts`): unique per (thread, key). */
export interface BotsSendKeysTable {
  thread_id: string;
  idempotency_key: string;
  message_id: string;
  /** JSON of the first send's dispatched replies; null until they all were. */
  dispatched: string | null;
  created_at: number;
}

export interface BotsTables {
  bots_bots: BotsBotsTable;
  bots_threads: BotsThreadsTable;
  bots_thread_members: BotsThreadMembersTable;
  bots_messages: BotsMessagesTable;
  bots_tasks: BotsTasksTable;
  bots_approvals: BotsApprovalsTable;
  bots_routines: BotsRoutinesTable;
  bots_thread_activity: BotsThreadActivityTable;
  bots_notes: BotsNotesTable;
  bots_send_keys: BotsSendKeysTable;
}
