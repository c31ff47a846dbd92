/**
 * The bots host's contract (issue 11 §6): its RPC methods, the rows the page and the CLI see,
 * and its events. Every change is an event; a bot's text streams as `bots.message_delta`.
 * Browser-safe: zod only.
 */
import { USER_THREAD } from './memory.js';
import { z } from 'zod';
import { defineContract, method } from './contract.js';
import { APPROVAL_ANSWERS, answeredByParams } from './agent.js';

export const BOT_STATUSES = ['idle', 'queued', 'working'] as const;
export type BotStatus = (typeof BOT_STATUSES)[number];

export const TASK_STATUSES = ['queued', 'working', 'review', 'done', 'failed', 'cancelled', 'dismissed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const MESSAGE_STATUSES = ['queued', 'streaming', 'done', 'error', 'stopped'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

export const MESSAGE_ROLES = ['user', 'bot', 'system'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/** Who asked for a task: a person, a routine, another bot, another module, or the heartbeat. */
export const TASK_SOURCES = ['user', 'routine', 'handoff', 'external', 'heartbeat'] as const;
export type TaskSource = (typeof TASK_SOURCES)[number];

/** Why a task failed or stopped (seed 2 §10.3). */
export const TASK_ERROR_KINDS = ['interrupted', 'preempted', 'timeout', 'provider', 'rate_limit', 'approval_expired', 'cancelled', 'unknown'] as const;
export type TaskErrorKind = (typeof TASK_ERROR_KINDS)[number];

export const APPROVAL_STATES = ['pending', 'approved', 'denied', 'expired'] as const;
export type BotApprovalState = (typeof APPROVAL_STATES)[number];

/** A bot's `name` is its `@mention` handle. */
export const BOT_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
/** The longest message a person may send (a bigger one is refused, nothing is stored). */
export const MAX_MESSAGE_CHARS = 100_000;
export const MAX_PERSONA_CHARS = 20_000;
export const MAX_ROUTINE_PROMPT_CHARS = 4_000;
export const MAX_GROUP_BOTS = 20;
export const THREAD_PAGE_DEFAULT = 50;
export const THREAD_PAGE_MAX = 500;

export interface Bot {
  id: string;
  /** The `@mention` handle: lower-case letters, digits, `-` and `_`, unique. */
  name: string;
  label: string;
  description: string;
  persona: string;
  /** The model role the bot runs on (`agent` by default), and a model on that role's endpoint (null: the role's own). */
  model_role: 'local' | 'agent';
  model: string | null;
  /** The MCP servers the bot may use. */
  tools: string[];
  created_at: number;
  updated_at: number;
}

export interface BotWithStatus extends Bot {
  status: BotStatus;
  /** Jobs waiting behind the current run. */
  queued: number;
  /** The task running now (null when idle). */
  task_id: string | null;
  /** Review tasks + pending approvals (+ what other modules add, e.g. check-ins) over the bot's threads. */
  needs_attention: number;
  /** A heartbeat pulse is in flight ("Checking in…"). */
  checking: boolean;
}

/**
 * The system thread the memory world's `notify_user` notifications are delivered into (its id;
 * kind `system`, no bots, read-only; created on the first notification).
 */
export const SUBCONSCIOUS_THREAD_ID = USER_THREAD;

export interface Thread {
  id: string;
  /** `system`: the Subconscious thread (`SUBCONSCIOUS_THREAD_ID`), written by the host only. */
  kind: 'direct' | 'group' | 'system';
  /** A group's name; a direct thread is named after its bot. */
  name: string;
  bot_ids: string[];
  created_at: number;
  updated_at: number;
  last_message_at: number | null;
}

export interface Message {
  id: string;
  thread_id: string;
  /** Order within the thread (1, 2, …). */
  seq: number;
  role: MessageRole;
  /** The author (bot messages) or null. */
  bot_id: string | null;
  task_id: string | null;
  text: string;
  status: MessageStatus;
  error: string | null;
  /** The daemon stopped while this message streamed (its partial text is kept). */
  interrupted: boolean;
  /** Written by the heartbeat (a resume or a check-in). */
  heartbeat: boolean;
  created_at: number;
  updated_at: number;
}

export interface ThreadSummary extends Thread {
  /** Bot and system messages since the person last read the thread. */
  unread: number;
  needs_attention: number;
  last_message: Message | null;
}

export interface TaskCheckpointStep {
  toolCallId: string;
  tool: string;
  input: string;
  outcome: 'ok' | 'error' | 'denied' | 'expired' | 'cancelled';
  output: string;
  at: number;
}

/** Written at settle (seed 2 §7.6): what a resume needs to continue without redoing work. */
export interface TaskCheckpoint {
  summary: string;
  steps: TaskCheckpointStep[];
  at: number;
}

export interface Task {
  id: string;
  bot_id: string;
  thread_id: string;
  /** The bot message the current (or last) run streams into. */
  message_id: string | null;
  title: string;
  source: TaskSource;
  from_bot_id: string | null;
  routine_id: string | null;
  status: TaskStatus;
  error_kind: TaskErrorKind | null;
  error: string | null;
  checkpoint: TaskCheckpoint | null;
  interrupted: boolean;
  /** Heartbeat resumes attempted (incremented at claim). */
  attempts: number;
  last_heartbeat_at: number | null;
  /** A pending resume claim (who, when); the token itself never leaves the host. */
  claimed_by: string | null;
  claimed_at: number | null;
  /** What the bot recommends the person decide (a `review` task). */
  review_note: string | null;
  /** The worker this task's job was taken over from (its run was cut off there); null: none. */
  taken_over_from?: string | null;
  version: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface BotApproval {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  run_id: string;
  tool: string;
  server: string;
  arguments: unknown;
  reason: string;
  state: BotApprovalState;
  created_at: number;
  /** null: an attended run, which waits for the answer. */
  expires_at: number | null;
  answered_at: number | null;
  expired_at: number | null;
}

export interface Routine {
  id: string;
  bot_id: string;
  /** A cron expression (minute hour day-of-month month day-of-week). */
  schedule: string;
  timezone: string;
  prompt: string;
  enabled: boolean;
  next_run_at: number | null;
  last_run_at: number | null;
  last_task_id: string | null;
  /** What the last due slot did: `dispatched`, or why it was skipped. */
  last_outcome: string | null;
  created_at: number;
  updated_at: number;
}

export const NOTE_KINDS = ['memory', 'team_memory', 'followup', 'blocked', 'recommended_action', 'handoff', 'invalid'] as const;
export type NoteKind = (typeof NOTE_KINDS)[number];

/** A control line a bot ended its answer with, kept (MEMORY:, TEAM_MEMORY:, FOLLOWUP:, …). */
export interface Note {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  kind: NoteKind;
  text: string;
  created_at: number;
}

export interface ThreadView {
  thread: Thread;
  bots: Bot[];
  /** Oldest first. */
  messages: Message[];
  /** More messages before the first one returned (page with `before` = its `seq`). */
  has_more: boolean;
  /** The tasks behind the returned messages (for their status chips). */
  tasks: Task[];
  /** The thread's pending approvals, and those answered or expired in the last day. */
  approvals: BotApproval[];
}

export interface DispatchedTask {
  bot_id: string;
  task_id: string;
  message_id: string;
}

export interface SendResult {
  thread_id: string;
  message: Message;
  dispatched: DispatchedTask[];
}

export interface StopResult {
  bot_id: string;
  /** `nothing_to_stop`: the bot was idle (no run, queue, dispatch, pulse or claimed resume); nothing changed. */
  outcome: 'stopped' | 'nothing_to_stop';
  /** Tasks marked cancelled (the run and its queue). */
  cancelled_task_ids: string[];
  /** One sentence for a person: what the stop did. */
  message: string;
}

export interface Snapshot {
  bots: BotWithStatus[];
  threads: ThreadSummary[];
  pending_approvals: BotApproval[];
  at: number;
}

// ── params ──────────────────────────────────────────────────────────────────

const id = z.string().trim().min(1, 'must be a non-empty id').max(200, 'is too long to be an id');
const name = z
  .string()
  .trim()
  .toLowerCase()
  .regex(BOT_NAME_PATTERN, 'must be 1-32 lower-case letters, digits, - or _, starting with a letter (it is the @mention handle)');
const label = z.string().trim().min(1, 'must not be empty').max(80, 'at most 80 characters');
const description = z.string().trim().max(1000, 'at most 1000 characters');
const persona = z.string().trim().max(MAX_PERSONA_CHARS, `at most ${MAX_PERSONA_CHARS} characters`);
/** `agent` / `local` (a role), `agent:<model>` / `local:<model>`, or a model on the agent endpoint. */
const model = z.string().trim().min(1, 'must name a role (agent, local), role:model, or a model').max(200, 'at most 200 characters');
const tools = z.array(z.string().trim().min(1, 'a tool server name must not be empty').max(100)).max(50, 'at most 50 tool servers');
const text = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_MESSAGE_CHARS, `at most ${MAX_MESSAGE_CHARS} characters; send a shorter message or attach the content as a file the bot can read`);
const schedule = z.string().trim().min(1, 'must be a cron expression such as "0 9 * * 1-5" (weekdays at 9:00)').max(200);
const routinePrompt = z.string().trim().min(1, 'must not be empty').max(MAX_ROUTINE_PROMPT_CHARS, `at most ${MAX_ROUTINE_PROMPT_CHARS} characters`);
const timezone = z.string().trim().min(1).max(100);

const hasOne = (keys: readonly string[]) => (p: Record<string, unknown>) => keys.some((k) => p[k] !== undefined);

export const botCreateParams = z.strictObject({
  name,
  label: label.optional(),
  description: description.optional(),
  persona: persona.optional(),
  model: model.optional(),
  tools: tools.optional(),
});
export const botUpdateParams = z
  .strictObject({
    bot_id: id,
    name: name.optional(),
    label: label.optional(),
    description: description.optional(),
    persona: persona.optional(),
    model: model.optional(),
    tools: tools.optional(),
  })
  .refine(hasOne(['name', 'label', 'description', 'persona', 'model', 'tools']), {
    message: 'give at least one of name, label, description, persona, model, tools',
  });
/** `bots.send_message`'s client-chosen key: a send repeated with it (same thread) returns the first send's result. */
export const IDEMPOTENCY_KEY_MAX = 200;
const idempotencyKey = z
  .string()
  .min(1, 'must not be empty')
  .max(IDEMPOTENCY_KEY_MAX, `at most ${IDEMPOTENCY_KEY_MAX} characters`)
  .describe('A key of your choosing (1–200 characters): a send repeated with it in the same thread returns the first send’s result and stores nothing new.');
export const sendMessageParams = z
  .strictObject({ bot_id: id.optional(), thread_id: id.optional(), text, idempotency_key: idempotencyKey.optional() })
  .refine((p) => (p.bot_id === undefined) !== (p.thread_id === undefined), {
    message: 'give exactly one of bot_id (its direct thread) or thread_id (a group thread, with @name mentions)',
  });
export const createGroupParams = z.strictObject({
  name: label,
  bot_ids: z
    .array(id)
    .min(2, 'a group needs at least 2 bots (talk to one bot in its direct thread)')
    .max(MAX_GROUP_BOTS, `at most ${MAX_GROUP_BOTS} bots`)
    .refine((ids) => new Set(ids).size === ids.length, 'names a bot twice'),
});
export const routinesAddParams = z.strictObject({
  bot_id: id,
  schedule,
  prompt: routinePrompt,
  timezone: timezone.optional(),
  enabled: z.boolean().optional(),
});
export const routinesUpdateParams = z
  .strictObject({ id, schedule: schedule.optional(), prompt: routinePrompt.optional(), timezone: timezone.optional(), enabled: z.boolean().optional() })
  .refine(hasOne(['schedule', 'prompt', 'timezone', 'enabled']), { message: 'give at least one of schedule, prompt, timezone, enabled' });

// ── events ──────────────────────────────────────────────────────────────────

export type BotsEvents = {
  'bots.bot_changed': {
    bot_id: string;
    /** @deprecated The same as `bot_id` (the naming convention's old name), sent for one more release. */ id: string;
    bot: Bot | null;
  };
  'bots.status_changed': { bot_id: string; status: BotStatus; queued: number; task_id: string | null; checking: boolean };
  'bots.thread_changed': {
    thread_id: string;
    /** @deprecated The same as `thread_id` (the naming convention's old name), sent for one more release. */ id: string;
    thread: Thread | null;
  };
  /** A message was written or changed status (its full text; deltas stream separately). */
  'bots.message_changed': { message: Message };
  /** Text a bot just produced for `message_id` (control lines never appear). */
  'bots.message_delta': { message_id: string; thread_id: string; bot_id: string; task_id: string; delta: string };
  'bots.task_changed': { task: Task };
  /** A tool call of a bot's run (for the transcript): `call` before it runs, `result` after. */
  'bots.tool_step': {
    bot_id: string;
    thread_id: string;
    task_id: string;
    message_id: string;
    tool_call_id: string;
    tool: string;
    phase: 'call' | 'result';
    input: string;
    outcome: TaskCheckpointStep['outcome'] | null;
    output: string | null;
  };
  'bots.approval_changed': { approval: BotApproval };
  'bots.routine_changed': {
    routine_id: string;
    /** @deprecated The same as `routine_id` (the naming convention's old name), sent for one more release. */ id: string;
    routine: Routine | null;
  };
  /** A routine's slot came: it dispatched `task_id`, or was `skipped` (why). */
  'bots.routine_fired': { routine_id: string; bot_id: string; at: number; task_id: string | null; skipped: string | null };
  'bots.note_added': { note: Note };
  /** A person acted in a thread (sent, read, answered an approval); `read`: its unread count is 0 now. */
  'bots.user_activity': { thread_id: string; at: number; read: boolean };
  /** Restart repair ran: how many rows it marked interrupted / expired. */
  'bots.repaired': { tasks: number; messages: number; approvals: number };
};

export const botsContract = defineContract<BotsEvents>()({
  methods: {
    'bots.list': method(z.strictObject({}), 'List bots with their status (idle, queued, working) and needs-attention counts.').returns<BotWithStatus[]>(),
    'bots.create': method(
      botCreateParams,
      'Create a bot: {name (@mention handle), label?, description?, persona?, model?, tools? (MCP server names)}.',
    ).returns<Bot>(),
    'bots.update': method(botUpdateParams, 'Update a bot: {bot_id, name?, label?, description?, persona?, model?, tools?}.', {
      renamed: { id: 'bot_id' },
    }).returns<Bot>(),
    'bots.delete': method(z.strictObject({ bot_id: id }), 'Delete a bot: {bot_id}. Its run is stopped, its direct thread, tasks and routines removed.', {
      renamed: { id: 'bot_id' },
    }).returns<{
      id: string;
      deleted: true;
    }>(),
    'bots.threads_list': method(
      z.strictObject({ bot_id: id.optional() }),
      'List threads (of one bot with bot_id), newest activity first, with unread and needs-attention counts.',
    ).returns<ThreadSummary[]>(),
    'bots.thread': method(
      z.strictObject({
        thread_id: id,
        before: z.number().int().min(1).optional(),
        limit: z.number().int().min(1).max(THREAD_PAGE_MAX, `at most ${THREAD_PAGE_MAX}`).optional(),
      }),
      `A thread's messages (the newest ${THREAD_PAGE_DEFAULT} by default; before = a message seq pages back), with their tasks and approvals.`,
      { renamed: { id: 'thread_id' } },
    ).returns<ThreadView>(),
    'bots.send_message': method(
      sendMessageParams,
      "Send a message: {bot_id, text} to a bot's direct thread, or {thread_id, text} to a group thread where @name mentions say who answers. Optional idempotency_key (1–200 characters, yours): a send repeated with the same key in the same thread — its answer lost, the daemon restarted — returns the first send's result (same message and task ids) and stores nothing new.",
    ).returns<SendResult>(),
    'bots.create_group': method(createGroupParams, 'Create a group thread: {name, bot_ids (2 or more)}.').returns<Thread>(),
    'bots.stop_bot': method(z.strictObject({ bot_id: id }), 'Stop a bot: {bot_id}. Cancel its run and its queue for good.', {
      renamed: { id: 'bot_id' },
    }).returns<StopResult>(),
    'bots.cancel_intent': method(z.strictObject({ task_id: id }), 'Cancel a task (queued, working, failed or in review): it is never resumed.').returns<Task>(),
    'bots.dismiss_task': method(z.strictObject({ task_id: id }), 'Dismiss a finished, failed or review task (hide it; it is never resumed).').returns<Task>(),
    'bots.answer_approval': method(
      z
        .strictObject({
          id,
          /** The older form: true = accept, false = ignore. */
          approve: z.boolean().optional(),
          answer: z.enum(APPROVAL_ANSWERS).optional(),
          arguments: z.record(z.string(), z.unknown()).optional(),
          text: z.string().trim().min(1, 'must not be empty').max(4000, 'at most 4000 characters').optional(),
          ...answeredByParams,
        })
        .refine((p) => (p.approve === undefined) !== (p.answer === undefined), { path: ['answer'], message: 'give exactly one of answer or approve' }),
      'Answer a bot’s pending tool approval once: {id, answer: accept | edit (arguments, checked against the tool’s schema) | respond (text: the tool does not run, the bot continues with it) | ignore, by?, via?} — or the older {id, approve: true | false}. Twice, or after expiry, is a conflict.',
    ).returns<BotApproval>(),
    'bots.routines_list': method(z.strictObject({ bot_id: id.optional() }), 'List routines (scheduled prompts), of one bot with bot_id.').returns<Routine[]>(),
    'bots.routines_add': method(routinesAddParams, 'Add a routine: {bot_id, schedule (cron), prompt, timezone?, enabled?}.').returns<Routine>(),
    'bots.routines_update': method(routinesUpdateParams, 'Update a routine: {id, schedule?, prompt?, timezone?, enabled?}.').returns<Routine>(),
    'bots.routines_remove': method(z.strictObject({ id }), 'Remove a routine.').returns<Routine>(),
    'bots.mark_read': method(z.strictObject({ thread_id: id }), 'Mark a thread read (its unread count drops to 0).').returns<{
      thread_id: string;
      read_at: number;
    }>(),
    'bots.snapshot': method(
      z.strictObject({}),
      'Everything the Bots tab shows: bots with status, threads with unread and needs-attention counts, pending approvals.',
    ).returns<Snapshot>(),
  },
  events: [
    'bots.bot_changed',
    'bots.status_changed',
    'bots.thread_changed',
    'bots.message_changed',
    'bots.message_delta',
    'bots.task_changed',
    'bots.tool_step',
    'bots.approval_changed',
    'bots.routine_changed',
    'bots.routine_fired',
    'bots.note_added',
    'bots.user_activity',
    'bots.repaired',
  ],
});

export type BotsMethods = (typeof botsContract)['methods'];
