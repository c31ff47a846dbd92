/** Table rows → the wire types of `protocol/bots.ts` (what the page, the CLI and events carry). */
import type { Selectable } from 'kysely';
import type { Bot, BotApproval, Message, Note, Routine, Task, TaskCheckpoint, Thread } from '../protocol/bots.js';
import type { BotsApprovalsTable, BotsBotsTable, BotsMessagesTable, BotsNotesTable, BotsRoutinesTable, BotsTasksTable, BotsThreadsTable } from './tables.js';

export const num = (v: number | bigint | string): number => Number(v);
export const numOrNull = (v: number | bigint | string | null): number | null => (v === null ? null : Number(v));

export function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export function toBot(r: Selectable<BotsBotsTable>): Bot {
  const tools = parseJson<unknown>(r.tools, []);
  return {
    id: r.id,
    name: r.name,
    label: r.label,
    description: r.description,
    persona: r.persona,
    model_role: r.model_role === 'local' ? 'local' : 'agent',
    model: r.model,
    tools: Array.isArray(tools) ? tools.filter((t): t is string => typeof t === 'string') : [],
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
  };
}

export function toThread(r: Selectable<BotsThreadsTable>, botIds: string[]): Thread {
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    bot_ids: botIds,
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    last_message_at: numOrNull(r.last_message_at),
  };
}

export function toMessage(r: Selectable<BotsMessagesTable>): Message {
  return {
    id: r.id,
    thread_id: r.thread_id,
    seq: num(r.seq),
    role: r.role,
    bot_id: r.bot_id,
    task_id: r.task_id,
    text: r.text,
    status: r.status,
    error: r.error,
    interrupted: num(r.interrupted) === 1,
    heartbeat: num(r.heartbeat) === 1,
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
  };
}

/** The checkpoint as a task shows it: without a run's answer record (`answer.ts`; its message carries the text). */
function publicCheckpoint(text: string | null): TaskCheckpoint | null {
  const cp = parseJson<(TaskCheckpoint & { answer?: unknown }) | null>(text, null);
  if (!cp || typeof cp !== 'object' || !('answer' in cp)) return cp;
  const { answer: _answer, ...rest } = cp;
  return rest;
}

/**
 * The task columns a `Task` is made of (with what says whether its run is alive): a read of many
 * tasks for triage selects these, not the prompt (the person's whole request) and the other columns
 * a task's own run needs.
 */
export const TASK_OUT_COLUMNS = [
  'id',
  'bot_id',
  'thread_id',
  'message_id',
  'title',
  'source',
  'from_bot_id',
  'routine_id',
  'status',
  'error_kind',
  'error',
  'checkpoint',
  'interrupted',
  'attempts',
  'last_heartbeat_at',
  'claim_token',
  'claim_by',
  'claim_at',
  'owner',
  'owner_seen_at',
  'review_note',
  'taken_over_from',
  'version',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
] as const satisfies readonly (keyof BotsTasksTable)[];
export type TaskOutRow = Pick<Selectable<BotsTasksTable>, (typeof TASK_OUT_COLUMNS)[number]>;

export function toTask(r: TaskOutRow): Task {
  return {
    id: r.id,
    bot_id: r.bot_id,
    thread_id: r.thread_id,
    message_id: r.message_id,
    title: r.title,
    source: r.source,
    from_bot_id: r.from_bot_id,
    routine_id: r.routine_id,
    status: r.status,
    error_kind: r.error_kind,
    error: r.error,
    checkpoint: publicCheckpoint(r.checkpoint),
    interrupted: num(r.interrupted) === 1,
    attempts: num(r.attempts),
    last_heartbeat_at: numOrNull(r.last_heartbeat_at),
    claimed_by: r.claim_token === null ? null : r.claim_by,
    claimed_at: r.claim_token === null ? null : numOrNull(r.claim_at),
    review_note: r.review_note,
    taken_over_from: r.taken_over_from ?? null,
    version: num(r.version),
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    started_at: numOrNull(r.started_at),
    finished_at: numOrNull(r.finished_at),
  };
}

export function toApproval(r: Selectable<BotsApprovalsTable>): BotApproval {
  return {
    id: r.approval_id,
    bot_id: r.bot_id,
    thread_id: r.thread_id,
    task_id: r.task_id,
    run_id: r.run_id,
    tool: r.tool,
    server: r.server,
    arguments: parseJson<unknown>(r.arguments, null),
    reason: r.reason,
    state: r.state,
    created_at: num(r.created_at),
    expires_at: numOrNull(r.expires_at),
    answered_at: numOrNull(r.answered_at),
    expired_at: numOrNull(r.expired_at),
  };
}

export function toRoutine(r: Selectable<BotsRoutinesTable>): Routine {
  return {
    id: r.id,
    bot_id: r.bot_id,
    schedule: r.schedule,
    timezone: r.timezone,
    prompt: r.prompt,
    enabled: num(r.enabled) === 1,
    next_run_at: numOrNull(r.next_run_at),
    last_run_at: numOrNull(r.last_run_at),
    last_task_id: r.last_task_id,
    last_outcome: r.last_outcome,
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
  };
}

export function toNote(r: Selectable<BotsNotesTable>): Note {
  return { id: r.id, bot_id: r.bot_id, thread_id: r.thread_id, task_id: r.task_id, kind: r.kind, text: r.text, created_at: num(r.created_at) };
}
