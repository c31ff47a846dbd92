/**
 * The approvals of bot runs. The agent layer's `ApprovalStore` owns each approval and its one
 * move from `pending`; this table links it to its bot, thread and task and mirrors its state,
 * so the page lists a thread's approvals and the heartbeat finds a bot's expired ones (seed 2
 * rule 5: `expired_at` newer than the task's `last_heartbeat_at`) with an indexed query.
 */
import type { Kysely } from 'kysely';
import type { Approval } from '../agent/index.js';
import type { BotApproval, BotApprovalState } from '../protocol/bots.js';
import { num, toApproval } from './rows.js';
import type { BotsTables } from './tables.js';

export class ApprovalLinks {
  constructor(private readonly db: Kysely<BotsTables>) {}

  async link(a: Approval, at: { botId: string; threadId: string; taskId: string | null; messageId: string | null }): Promise<BotApproval> {
    const row = {
      approval_id: a.id,
      bot_id: at.botId,
      thread_id: at.threadId,
      task_id: at.taskId,
      message_id: at.messageId,
      run_id: a.run_id,
      tool: a.tool,
      server: a.server,
      arguments: JSON.stringify(a.arguments ?? null),
      reason: a.reason,
      state: a.state,
      created_at: a.created_at,
      expires_at: a.expires_at,
      answered_at: a.answered_at,
      expired_at: a.state === 'expired' ? a.answered_at : null,
    };
    await this.db
      .insertInto('bots_approvals')
      .values(row)
      .onConflict((oc) => oc.column('approval_id').doNothing())
      .execute();
    return toApproval(row);
  }

  /** Copy the agent store's state; returns the link when it changed. */
  async mirror(a: Approval): Promise<BotApproval | undefined> {
    const current = await this.get(a.id);
    if (!current || current.state === a.state) return undefined;
    await this.db
      .updateTable('bots_approvals')
      .set({ state: a.state, answered_at: a.answered_at, expired_at: a.state === 'expired' ? (a.answered_at ?? null) : null })
      .where('approval_id', '=', a.id)
      .execute();
    return this.get(a.id);
  }

  async get(id: string): Promise<BotApproval | undefined> {
    const row = await this.db.selectFrom('bots_approvals').selectAll().where('approval_id', '=', id).executeTakeFirst();
    return row ? toApproval(row) : undefined;
  }

  /** Newest first. */
  async list(f: { threadId?: string; botId?: string; runId?: string; state?: BotApprovalState; since?: number; limit?: number } = {}): Promise<BotApproval[]> {
    let q = this.db.selectFrom('bots_approvals').selectAll();
    if (f.threadId) q = q.where('thread_id', '=', f.threadId);
    if (f.botId) q = q.where('bot_id', '=', f.botId);
    if (f.runId) q = q.where('run_id', '=', f.runId);
    if (f.state) q = q.where('state', '=', f.state);
    if (f.since !== undefined) q = q.where('created_at', '>=', f.since);
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('approval_id')
      .limit(f.limit ?? 200)
      .execute();
    return rows.map(toApproval);
  }

  /** A thread's pending and recent approvals (`bots.thread`). */
  async forThread(threadId: string, since: number): Promise<BotApproval[]> {
    const rows = await this.db
      .selectFrom('bots_approvals')
      .selectAll()
      .where('thread_id', '=', threadId)
      .where((eb) => eb.or([eb('state', '=', 'pending'), eb('created_at', '>=', since)]))
      .orderBy('created_at')
      .limit(200)
      .execute();
    return rows.map(toApproval);
  }

  /** Pending approvals counted per thread or per bot (of those `ids` only, when given). */
  async pendingCounts(by: 'thread_id' | 'bot_id', ids?: readonly string[]): Promise<Map<string, number>> {
    if (ids?.length === 0) return new Map();
    let q = this.db
      .selectFrom('bots_approvals')
      .select([by, (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'pending');
    if (ids) q = q.where(by, 'in', [...ids]);
    const rows = await q.groupBy(by).execute();
    return new Map(rows.map((r) => [(r as Record<string, unknown>)[by] as string, num(r.n)]));
  }

  /** Rule 5 for many bots at once (the same index, one range per bot). */
  async expiredSinceMany(botIds: readonly string[], since: number, limit = 1000): Promise<BotApproval[]> {
    if (botIds.length === 0) return [];
    const rows = await this.db
      .selectFrom('bots_approvals')
      .selectAll()
      .where('bot_id', 'in', [...botIds])
      .where('state', '=', 'expired')
      .where('expired_at', '>', since)
      .orderBy('expired_at', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toApproval);
  }

  /** Seed 2 rule 5: a bot's approvals that expired after `since` (indexed on bot, state, expired_at). */
  async expiredSince(botId: string, since: number, limit = 50): Promise<BotApproval[]> {
    const rows = await this.db
      .selectFrom('bots_approvals')
      .selectAll()
      .where('bot_id', '=', botId)
      .where('state', '=', 'expired')
      .where('expired_at', '>', since)
      .orderBy('expired_at', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toApproval);
  }
}
