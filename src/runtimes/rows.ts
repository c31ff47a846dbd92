/** Ids and rows → the wire types (the bots host's `Task`, `Message`, … and `protocol/runtimes.ts`'s own). */
import type { Selectable } from 'kysely';
import type { Bot, BotApproval, Message, Task, TaskCheckpoint, Thread } from '../protocol/bots.js';
import { EXTERNAL_ID_PREFIX, type ExternalBot, type ExternalRuntime, type RuntimeDispatch } from '../protocol/runtimes.js';
import type {
  RuntimesApprovalsTable,
  RuntimesBotsTable,
  RuntimesDispatchesTable,
  RuntimesHostsTable,
  RuntimesMessagesTable,
  RuntimesTasksTable,
  RuntimesThreadsTable,
} from './tables.js';

export const num = (v: number | bigint | string): number => Number(v);
export const numOrNull = (v: number | bigint | string | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/** The daemon's id of a runtime's thing: `ext:<runtime>:<external id>`. */
export function internalId(runtimeId: string, externalId: string): string {
  return `${EXTERNAL_ID_PREFIX}${runtimeId}:${externalId}`;
}

/** Whether an id is one of an external runtime's (a prefix test: single-flight asks it on every check). */
export function isExternalId(id: string): boolean {
  return id.startsWith(EXTERNAL_ID_PREFIX);
}

/** The runtime an internal id belongs to, or null. */
export function runtimeOf(id: string): string | null {
  if (!isExternalId(id)) return null;
  const rest = id.slice(EXTERNAL_ID_PREFIX.length);
  const colon = rest.indexOf(':');
  return colon > 0 ? rest.slice(0, colon) : null;
}

export function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export function toBot(r: Selectable<RuntimesBotsTable>): Bot {
  return {
    id: r.id,
    name: r.name,
    label: r.label,
    description: r.description,
    persona: '',
    model_role: 'agent',
    model: null,
    tools: [],
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
  };
}

export function toExternalBot(r: Selectable<RuntimesBotsTable>, threadExternalId: string): ExternalBot {
  return {
    id: r.external_id,
    kind: 'external',
    runtime_id: r.runtime_id,
    subconscious_id: r.id,
    name: r.name,
    label: r.label,
    description: r.description,
    thread_id: threadExternalId,
    subconscious_thread_id: r.thread_id,
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
  };
}

export function toThread(r: Selectable<RuntimesThreadsTable>): Thread {
  const ids = parseJson<unknown>(r.bot_ids, []);
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    bot_ids: Array.isArray(ids) ? ids.filter((b): b is string => typeof b === 'string') : [],
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    last_message_at: numOrNull(r.last_message_at),
  };
}

export function toMessage(r: Selectable<RuntimesMessagesTable>): Message {
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

export function toTask(r: Selectable<RuntimesTasksTable>): Task {
  return {
    id: r.id,
    bot_id: r.bot_id,
    thread_id: r.thread_id,
    message_id: r.message_id,
    title: r.title,
    source: r.source,
    from_bot_id: null,
    routine_id: null,
    status: r.status,
    error_kind: r.error_kind,
    error: r.error,
    checkpoint: parseJson<TaskCheckpoint | null>(r.checkpoint, null),
    interrupted: num(r.interrupted) === 1,
    attempts: num(r.attempts),
    last_heartbeat_at: numOrNull(r.last_heartbeat_at),
    claimed_by: r.claim_token === null ? null : r.claim_by,
    claimed_at: r.claim_token === null ? null : numOrNull(r.claim_at),
    review_note: null,
    taken_over_from: null,
    version: num(r.version),
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    started_at: numOrNull(r.started_at),
    finished_at: numOrNull(r.finished_at),
  };
}

export function toApproval(r: Selectable<RuntimesApprovalsTable>): BotApproval {
  return {
    id: r.id,
    bot_id: r.bot_id,
    thread_id: r.thread_id,
    task_id: r.task_id,
    run_id: '',
    tool: r.tool,
    server: r.server,
    arguments: null,
    reason: r.reason,
    state: r.state,
    created_at: num(r.created_at),
    expires_at: numOrNull(r.expires_at),
    answered_at: numOrNull(r.answered_at),
    expired_at: numOrNull(r.expired_at),
  };
}

export function toRuntime(
  r: Selectable<RuntimesHostsTable>,
  counts: { bots: number; pending: number },
  reach: { reachable: boolean; unreachable_reason: string | null },
): ExternalRuntime {
  return {
    id: r.id,
    name: r.name,
    delivery: r.delivery === 'webhook' ? { kind: 'webhook', url: r.webhook_url ?? '', secret_env: r.secret_env, secret_file: r.secret_file } : { kind: 'poll' },
    instance_id: r.instance_id,
    bots: counts.bots,
    pending_dispatches: counts.pending,
    last_delivery_error: r.last_delivery_error,
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    seen_at: num(r.seen_at),
    ...reach,
  };
}

/**
 * Whether the daemon reaches a runtime now: a webhook one while its deliveries succeed, a poll
 * one while it keeps calling (seen within `pollGraceMs`).
 */
export function reachabilityOf(r: Selectable<RuntimesHostsTable>, now: number, pollGraceMs: number): { reachable: boolean; unreachable_reason: string | null } {
  if (r.delivery === 'webhook') {
    return r.last_delivery_error === null
      ? { reachable: true, unreachable_reason: null }
      : { reachable: false, unreachable_reason: `Its webhook is failing: ${r.last_delivery_error}` };
  }
  const quiet = now - num(r.seen_at);
  return quiet <= pollGraceMs
    ? { reachable: true, unreachable_reason: null }
    : { reachable: false, unreachable_reason: `It has not polled for ${Math.round(quiet / 1000)} s.` };
}

/** A dispatch as the runtime sees it: its own ids (from the rows it names), and the daemon's. */
export function toDispatch(
  r: Selectable<RuntimesDispatchesTable>,
  external: { bot: string; thread: string; task: string | null },
  leaseSeconds: number,
): RuntimeDispatch {
  return {
    id: r.id,
    runtime_id: r.runtime_id,
    kind: r.kind,
    bot_id: external.bot,
    thread_id: external.thread,
    task_id: external.task,
    text: r.text,
    note: r.note,
    attempt: numOrNull(r.attempt),
    lease_seconds: leaseSeconds,
    lease_until: numOrNull(r.lease_until),
    state: r.state,
    deliveries: num(r.deliveries),
    next_attempt_at: numOrNull(r.next_attempt_at),
    last_error: r.last_error,
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    delivered_at: numOrNull(r.delivered_at),
    acked_at: numOrNull(r.acked_at),
    finished_at: numOrNull(r.finished_at),
    subconscious: { bot_id: r.bot_id, thread_id: r.thread_id, task_id: r.task_id },
  };
}

/** The external id of an internal one (`ext:<runtime>:<id>` → `<id>`). */
export function externalOf(id: string): string {
  const runtime = runtimeOf(id);
  return runtime === null ? id : id.slice(EXTERNAL_ID_PREFIX.length + runtime.length + 1);
}
