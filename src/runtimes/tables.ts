/**
 * The runtimes module's tables (issue 18 §6): external agent runtimes, their bots and what they
 * report (threads, messages, tasks, runs, approvals), and the dispatches sent to them. The
 * conventions of `src/store/schema.ts`: epoch ms in bigint columns, booleans as 0/1, JSON as text.
 *
 * Every row of a runtime's own things has the daemon's id `ext:<runtime_id>:<external id>` and
 * keeps the runtime's id in `external_id`; what the daemon writes itself (a heartbeat note, a
 * check-in question, a task minted for a follow-up) gets an external id `sc-<uuid>`.
 */
import type { ColumnType } from 'kysely';
import type { MessageRole, MessageStatus, TaskErrorKind, TaskStatus } from '../protocol/bots.js';
import type { DispatchKind, DispatchState, ExternalRunStatus } from '../protocol/runtimes.js';

export interface RuntimesHostsTable {
  id: string;
  name: string;
  delivery: 'webhook' | 'poll';
  webhook_url: string | null;
  secret_env: string | null;
  secret_file: string | null;
  instance_id: string | null;
  last_delivery_error: string | null;
  created_at: number;
  updated_at: number;
  seen_at: number;
}

export interface RuntimesBotsTable {
  id: string;
  runtime_id: string;
  external_id: string;
  name: string;
  label: string;
  description: string;
  /** The daemon's id of its direct thread. */
  thread_id: string;
  created_at: number;
  updated_at: number;
}

export interface RuntimesThreadsTable {
  id: string;
  runtime_id: string;
  external_id: string;
  kind: 'direct' | 'group';
  name: string;
  /** The bot of a direct thread (one per bot); null for groups. */
  direct_bot_id: string | null;
  /** JSON array of the daemon's bot ids. */
  bot_ids: string;
  next_seq: ColumnType<number, number | undefined, number>;
  user_active_at: number | null;
  read_at: number | null;
  created_at: number;
  updated_at: number;
  last_message_at: number | null;
}

export interface RuntimesMessagesTable {
  id: string;
  runtime_id: string;
  external_id: string;
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

export interface RuntimesTasksTable {
  id: string;
  runtime_id: string;
  external_id: string;
  bot_id: string;
  thread_id: string;
  message_id: string | null;
  title: string;
  /** `external` (the runtime's own work) or `heartbeat` (minted for a follow-up). */
  source: 'external' | 'heartbeat';
  status: TaskStatus;
  error_kind: TaskErrorKind | null;
  error: string | null;
  /** JSON `{summary, steps, at}`. */
  checkpoint: string | null;
  interrupted: number;
  attempts: number;
  last_heartbeat_at: number | null;
  claim_token: string | null;
  claim_at: number | null;
  claim_by: string | null;
  /** Open work the runtime holds is live until then (each report of it renews it); past it, with no report, it is an orphan. */
  lease_until: number | null;
  version: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface RuntimesRunsTable {
  id: string;
  runtime_id: string;
  external_id: string;
  bot_id: string;
  task_id: string | null;
  status: ExternalRunStatus;
  lease_until: number | null;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
}

export interface RuntimesApprovalsTable {
  id: string;
  runtime_id: string;
  external_id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  tool: string;
  server: string;
  reason: string;
  state: 'pending' | 'approved' | 'denied' | 'expired';
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  answered_at: number | null;
  expired_at: number | null;
}

export interface RuntimesDispatchesTable {
  id: string;
  runtime_id: string;
  kind: DispatchKind;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  text: string;
  note: string | null;
  /** The heartbeat note's message (a resume), or the question's (an ask). */
  message_id: string | null;
  attempt: number | null;
  /** The heartbeat's claim this resume holds (the ack consumes it). */
  claim_token: string | null;
  state: DispatchState;
  deliveries: number;
  next_attempt_at: number | null;
  last_error: string | null;
  lease_until: number | null;
  acked_by: string | null;
  /** An undelivered ask or cancel is given up then. */
  expires_at: number;
  version: number;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
  acked_at: number | null;
  finished_at: number | null;
}

export interface RuntimesTables {
  runtimes_hosts: RuntimesHostsTable;
  runtimes_bots: RuntimesBotsTable;
  runtimes_threads: RuntimesThreadsTable;
  runtimes_messages: RuntimesMessagesTable;
  runtimes_tasks: RuntimesTasksTable;
  runtimes_runs: RuntimesRunsTable;
  runtimes_approvals: RuntimesApprovalsTable;
  runtimes_dispatches: RuntimesDispatchesTable;
}
