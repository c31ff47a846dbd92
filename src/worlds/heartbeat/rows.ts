/** Table rows → the wire types of `protocol/heartbeat.ts` (bigint columns come back as strings on Postgres). */
import type { Selectable } from 'kysely';
import type { AnswerVia } from '../../protocol/agent.js';
import type { CandidateRule, Checkin, FollowUp, HeartbeatLogEntry, HeartbeatMode, LogOutcome, SkipRule, Verdict } from '../../protocol/heartbeat.js';
import type { HeartbeatCheckinsTable, HeartbeatFollowupsTable, HeartbeatLogTable } from './tables.js';

export const num = (v: number | bigint | string): number => Number(v);
export const numOrNull = (v: number | bigint | string | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

export function toLogEntry(r: Selectable<HeartbeatLogTable>): HeartbeatLogEntry {
  let dispatched: HeartbeatLogEntry['dispatched'] = null;
  if (r.dispatched) {
    try {
      const d = JSON.parse(r.dispatched) as { task_id?: unknown; message_id?: unknown };
      if (typeof d.task_id === 'string' && typeof d.message_id === 'string') dispatched = { task_id: d.task_id, message_id: d.message_id };
    } catch {
      dispatched = null;
    }
  }
  return {
    id: r.id,
    bot_id: r.bot_id,
    at: num(r.at),
    last_at: num(r.last_at),
    repeats: num(r.repeats),
    mode: r.mode as HeartbeatMode,
    tier: num(r.tier) as 0 | 1 | 2,
    outcome: r.outcome as LogOutcome,
    rule: r.rule as CandidateRule | null,
    skip: r.skip as SkipRule | null,
    verdict: r.verdict as Verdict | null,
    reason: r.reason,
    task_id: r.task_id,
    // Filled from the bots host where an entry leaves the heartbeat (titles.ts): the log keeps ids only.
    task_title: null,
    dispatched,
    escalated: num(r.escalated) === 1,
    model: r.model,
    ms: numOrNull(r.ms),
    error: r.error,
    input_tokens: num(r.input_tokens),
    output_tokens: num(r.output_tokens),
  };
}

export function toCheckin(r: Selectable<HeartbeatCheckinsTable>): Checkin {
  return {
    id: r.id,
    bot_id: r.bot_id,
    thread_id: r.thread_id,
    task_id: r.task_id,
    source: r.source,
    question: r.question,
    state: r.state,
    created_at: num(r.created_at),
    resolved_at: numOrNull(r.resolved_at),
    answered_by: r.answered_by ?? null,
    answered_via: (r.answered_via as AnswerVia | null) ?? null,
  };
}

export function toFollowUp(r: Selectable<HeartbeatFollowupsTable>): FollowUp {
  return {
    id: r.id,
    bot_id: r.bot_id,
    thread_id: r.thread_id,
    task_id: r.task_id,
    kind: r.kind,
    origin: r.origin,
    note: r.note,
    due_at: numOrNull(r.due_at),
    state: r.state,
    created_at: num(r.created_at),
  };
}
