/**
 * Check-ins (seed 2 §6.5): one per `ask_user` verdict, exhausted candidate or `BLOCKED:` line.
 * A check-in waits for the person; a reply in its thread, a cancel, a dismiss or an answer
 * resolves it. At most 50 wait at once: a newer one supersedes the oldest.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../../core/index.js';
import type { AnswerVia } from '../../protocol/agent.js';
import { ANSWERED_CHECKINS_SHOWN, PENDING_CHECKINS_CAP, type Checkin, type CheckinSource, type CheckinState } from '../../protocol/heartbeat.js';
import { toCheckin } from './rows.js';
import type { HeartbeatCheckinsTable, HeartbeatTables } from './tables.js';

export type CheckinRow = Selectable<HeartbeatCheckinsTable>;

export interface NewCheckin {
  /** Deterministic (a re-run commit creates nothing twice). */
  id: string;
  botId: string;
  threadId: string;
  taskId: string | null;
  messageId?: string | null;
  source: CheckinSource;
  question: string;
}

export class CheckinStore {
  constructor(private readonly d: { db: Kysely<HeartbeatTables>; clock: Clock }) {}

  private get db() {
    return this.d.db;
  }

  /** Create it; undefined when a check-in with that id exists. `superseded`: pending ones pushed out by the cap. */
  async add(c: NewCheckin): Promise<{ checkin: Checkin; superseded: Checkin[] } | undefined> {
    const now = this.d.clock.now();
    const row: CheckinRow = {
      id: c.id,
      bot_id: c.botId,
      thread_id: c.threadId,
      task_id: c.taskId,
      message_id: c.messageId ?? null,
      asked_message_id: null,
      source: c.source,
      question: c.question,
      state: 'pending',
      created_at: now,
      resolved_at: null,
      answered_by: null,
      answered_via: null,
    };
    const res = await this.db
      .insertInto('heartbeat_checkins')
      .values(row)
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    // A conflict (the same deterministic id: a re-run commit) inserts nothing.
    if (Number(res.numInsertedOrUpdatedRows ?? 0) !== 1) return undefined;
    const superseded: Checkin[] = [];
    const over = await this.db
      .selectFrom('heartbeat_checkins')
      .selectAll()
      .where('state', '=', 'pending')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(PENDING_CHECKINS_CAP)
      .limit(1000)
      .execute();
    for (const o of over) {
      const done = await this.resolve(o.id, 'superseded');
      if (done) superseded.push(done);
    }
    return { checkin: toCheckin(row), superseded };
  }

  /** The message that asks the check-in's question. */
  async setAskedMessage(id: string, messageId: string): Promise<void> {
    await this.db.updateTable('heartbeat_checkins').set({ asked_message_id: messageId }).where('id', '=', id).execute();
  }

  /** Which of these messages ask a check-in's question (any state). */
  async askedIn(messageIds: readonly string[]): Promise<Set<string>> {
    if (messageIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('heartbeat_checkins')
      .select('asked_message_id')
      .where('asked_message_id', 'in', [...messageIds])
      .execute();
    return new Set(rows.map((r) => r.asked_message_id!));
  }

  async get(id: string): Promise<CheckinRow | undefined> {
    return this.db.selectFrom('heartbeat_checkins').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Pending check-ins of these bots (all when omitted), oldest first. */
  async pending(f: { botIds?: readonly string[] | undefined; threadId?: string | undefined; limit?: number } = {}): Promise<CheckinRow[]> {
    let q = this.db.selectFrom('heartbeat_checkins').selectAll().where('state', '=', 'pending');
    if (f.botIds !== undefined) {
      if (f.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...f.botIds]);
    }
    if (f.threadId !== undefined) q = q.where('thread_id', '=', f.threadId);
    return q
      .orderBy('created_at')
      .limit(f.limit ?? PENDING_CHECKINS_CAP)
      .execute();
  }

  /**
   * Check-ins a person resolved (answered in the thread, or answered, dismissed or retried through
   * a face, which the row names), newest first: the page says how each was answered.
   */
  async answeredLately(f: { botIds?: readonly string[] | undefined; limit?: number } = {}): Promise<CheckinRow[]> {
    let q = this.db
      .selectFrom('heartbeat_checkins')
      .selectAll()
      .where('resolved_at', 'is not', null)
      .where((eb) => eb.or([eb('answered_via', 'is not', null), eb('state', '=', 'answered')]));
    if (f.botIds !== undefined) {
      if (f.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...f.botIds]);
    }
    return q
      .orderBy('resolved_at', 'desc')
      .orderBy('id')
      .limit(f.limit ?? ANSWERED_CHECKINS_SHOWN)
      .execute();
  }

  /** Check-ins of these tasks created since `since` (any state): the terminal rule asks once. */
  async ofTasksSince(taskIds: readonly string[], source: CheckinSource): Promise<CheckinRow[]> {
    if (taskIds.length === 0) return [];
    return this.db
      .selectFrom('heartbeat_checkins')
      .selectAll()
      .where('task_id', 'in', [...taskIds])
      .where('source', '=', source)
      .execute();
  }

  /** Move one pending check-in to `state` (`who`: a person's answer, and through which face); undefined when it was not pending. */
  async resolve(id: string, state: Exclude<CheckinState, 'pending'>, who?: { by: string; via: AnswerVia }): Promise<Checkin | undefined> {
    const res = await this.db
      .updateTable('heartbeat_checkins')
      .set({ state, resolved_at: this.d.clock.now(), ...(who ? { answered_by: who.by, answered_via: who.via } : {}) })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    const row = await this.get(id);
    return row ? toCheckin(row) : undefined;
  }

  /** Resolve the pending check-ins that match (a thread's, a task's, a bot's). */
  async resolveWhere(f: { threadId?: string; taskId?: string; botId?: string }, state: Exclude<CheckinState, 'pending'>): Promise<Checkin[]> {
    let q = this.db.selectFrom('heartbeat_checkins').select('id').where('state', '=', 'pending');
    if (f.threadId !== undefined) q = q.where('thread_id', '=', f.threadId);
    if (f.taskId !== undefined) q = q.where('task_id', '=', f.taskId);
    if (f.botId !== undefined) q = q.where('bot_id', '=', f.botId);
    const out: Checkin[] = [];
    for (const { id } of await q.limit(PENDING_CHECKINS_CAP * 2).execute()) {
      const done = await this.resolve(id, state);
      if (done) out.push(done);
    }
    return out;
  }

  /** Pending check-ins per thread and bot (the needs-attention badges). */
  async counts(): Promise<{ thread_id: string; bot_id: string; count: number }[]> {
    const rows = await this.db
      .selectFrom('heartbeat_checkins')
      .select(['thread_id', 'bot_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'pending')
      .groupBy(['thread_id', 'bot_id'])
      .execute();
    return rows.map((r) => ({ thread_id: r.thread_id, bot_id: r.bot_id, count: Number(r.n) }));
  }

  async removeBot(botId: string): Promise<void> {
    await this.db.deleteFrom('heartbeat_checkins').where('bot_id', '=', botId).execute();
  }
}
