/**
 * Follow-ups (seed 2 §8): a bot's `FOLLOWUP: 10m — …` (due: a Tier 0 candidate, rule 4),
 * `FOLLOWUP: when user replies — …` (resolved by the person's next message in the thread), and a
 * person's own "check back later" (rule 8). Cleared when their task completes; at most 20 wait
 * per bot (a newer one clears the oldest).
 */
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../../core/index.js';
import { FOLLOWUPS_CAP_PER_BOT, type FollowUp, type FollowUpKind, type FollowUpOrigin, type FollowUpState } from '../../protocol/heartbeat.js';
import { toFollowUp } from './rows.js';
import type { HeartbeatFollowupsTable, HeartbeatTables } from './tables.js';

export type FollowUpRow = Selectable<HeartbeatFollowupsTable>;

export interface NewFollowUp {
  id: string;
  botId: string;
  threadId: string;
  taskId: string | null;
  kind: FollowUpKind;
  origin: FollowUpOrigin;
  note: string;
  dueAt: number | null;
}

export class FollowUpStore {
  constructor(private readonly d: { db: Kysely<HeartbeatTables>; clock: Clock }) {}

  private get db() {
    return this.d.db;
  }

  /** Store it; `cleared`: the oldest pending ones of the bot past the cap of 20. */
  async add(f: NewFollowUp): Promise<{ followup: FollowUp; cleared: FollowUp[] } | undefined> {
    const now = this.d.clock.now();
    const row: FollowUpRow = {
      id: f.id,
      bot_id: f.botId,
      thread_id: f.threadId,
      task_id: f.taskId,
      kind: f.kind,
      origin: f.origin,
      note: f.note,
      due_at: f.dueAt === null ? null : Math.round(f.dueAt),
      state: 'pending',
      created_at: now,
      updated_at: now,
    };
    const res = await this.db
      .insertInto('heartbeat_followups')
      .values(row)
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0) !== 1) return undefined;
    const over = await this.db
      .selectFrom('heartbeat_followups')
      .select('id')
      .where('bot_id', '=', f.botId)
      .where('state', '=', 'pending')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(FOLLOWUPS_CAP_PER_BOT)
      .limit(1000)
      .execute();
    const cleared: FollowUp[] = [];
    for (const o of over) {
      const done = await this.move(o.id, 'pending', 'cleared');
      if (done) cleared.push(done);
    }
    return { followup: toFollowUp(row), cleared };
  }

  async get(id: string): Promise<FollowUpRow | undefined> {
    return this.db.selectFrom('heartbeat_followups').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async pending(botIds?: readonly string[]): Promise<FollowUpRow[]> {
    let q = this.db.selectFrom('heartbeat_followups').selectAll().where('state', '=', 'pending');
    if (botIds !== undefined) {
      if (botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...botIds]);
    }
    return q
      .orderBy('created_at')
      .limit(FOLLOWUPS_CAP_PER_BOT * Math.max(1, botIds?.length ?? 50))
      .execute();
  }

  /** Compare-and-set on the state: the one-shot lock a follow-up's own wake-up takes. */
  async move(id: string, from: FollowUpState, to: FollowUpState): Promise<FollowUp | undefined> {
    const res = await this.db
      .updateTable('heartbeat_followups')
      .set({ state: to, updated_at: this.d.clock.now() })
      .where('id', '=', id)
      .where('state', '=', from)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    const row = await this.get(id);
    return row ? toFollowUp(row) : undefined;
  }

  /** Pending ones that match, moved to `to` (a reply resolves `user` ones, a completed task clears its own). */
  async moveWhere(
    f: { threadId?: string; taskId?: string; botId?: string; kind?: FollowUpKind; exceptIds?: readonly string[] },
    to: FollowUpState,
  ): Promise<FollowUp[]> {
    let q = this.db.selectFrom('heartbeat_followups').select('id').where('state', '=', 'pending');
    if (f.threadId !== undefined) q = q.where('thread_id', '=', f.threadId);
    if (f.taskId !== undefined) q = q.where('task_id', '=', f.taskId);
    if (f.botId !== undefined) q = q.where('bot_id', '=', f.botId);
    if (f.kind !== undefined) q = q.where('kind', '=', f.kind);
    if (f.exceptIds !== undefined && f.exceptIds.length > 0) q = q.where('id', 'not in', [...f.exceptIds]);
    const out: FollowUp[] = [];
    for (const { id } of await q.limit(FOLLOWUPS_CAP_PER_BOT * 10).execute()) {
      const done = await this.move(id, 'pending', to);
      if (done) out.push(done);
    }
    return out;
  }

  async removeBot(botId: string): Promise<void> {
    await this.db.deleteFrom('heartbeat_followups').where('bot_id', '=', botId).execute();
  }
}
