/**
 * An approved escalation is a durable job (issue 17 §1): `subconscious.escalations_answer` (or
 * approve) commits a `tasks.approved_action` job keyed by the escalation before it answers, and any
 * worker's job loop runs it — a worker with no HTTP face too. Its worker killed mid-run, the job is
 * taken over (by another worker, or the same one after a restart) and its execution continues from
 * the row's checkpoint (exec-checkpoint.ts). The payload names only the escalation: the answer the
 * person gave (kind, arguments, text) is stored on it, so the job rebuilds the run from the store.
 */
import type { JobSpec, JsonValue } from '../../coordination/index.js';
import type { Escalation } from './types.js';

export const TASKS_APPROVED_QUEUE = 'tasks.approved_action';

/** Approved actions one worker runs at once. */
export const APPROVED_CONCURRENCY = 4;

export function approvedJobKey(escalationId: string): string {
  return `${TASKS_APPROVED_QUEUE}:${escalationId}`;
}

export function approvedJobSpec(escalationId: string): JobSpec {
  return { queue: TASKS_APPROVED_QUEUE, payload: { escalation_id: escalationId }, key: approvedJobKey(escalationId) };
}

/** The escalation a fetched payload names, or the reason it does not parse (the job is moved aside). */
export function parseApprovedPayload(payload: JsonValue): { ok: true; escalationId: string } | { ok: false; reason: string } {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return { ok: false, reason: 'the payload is not an object' };
  const id = payload.escalation_id;
  return typeof id === 'string' && id.length > 0 ? { ok: true, escalationId: id } : { ok: false, reason: 'escalation_id: expected a string' };
}

/** How the run of an approved card is made, from what the person answered (stored on the card). */
export interface ApprovedRun {
  /** A card in words that was simply accepted keeps the full run; every other answer runs tainted (a further write waits on the gate). */
  mode: 'full' | 'tainted';
  /** The held call to make first (accept / edit), or to answer with the person's text (respond). */
  decided: { server: string; tool: string; arguments: Record<string, unknown>; response?: string } | undefined;
  /** The person's reply to a card in words (respond). */
  reply: string | null;
}

export function approvedRun(escalation: Pick<Escalation, 'action' | 'answer'>): ApprovedRun {
  const { action, answer } = escalation;
  const text = answer?.kind === 'respond' ? (answer.text ?? '').trim() : '';
  const edited = answer?.kind === 'edit' && answer.arguments && typeof answer.arguments === 'object' ? (answer.arguments as Record<string, unknown>) : null;
  const decided = action ? { server: action.server, tool: action.tool, arguments: edited ?? action.arguments, ...(text ? { response: text } : {}) } : undefined;
  return { mode: !action && (answer?.kind ?? 'accept') === 'accept' ? 'full' : 'tainted', decided, reply: !action && text ? text : null };
}
