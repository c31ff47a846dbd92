/**
 * The runtimes module's reads and writes (issue 18 §6). Tasks keep the bots host's rules: every
 * write bumps `version` (compare-and-set), a claim is a one-shot `{token, at, by}` written with
 * `attempts + 1`, a stale one may be taken over, a refunded one gives its attempt back — so the
 * heartbeat claims an external runtime's task exactly as it claims a built-in bot's.
 */
import type { Kysely, Selectable, Updateable } from 'kysely';
import { SubconsciousError, type Clock } from '../core/index.js';
import type { BotApproval, Message, MessageRole, MessageStatus, Task, TaskErrorKind, TaskStatus, Thread } from '../protocol/bots.js';
import type { DispatchKind, DispatchState } from '../protocol/runtimes.js';
import { claimTask, releaseTaskClaim, renewTaskClaim } from '../bots/task-claims.js';
import { num, numOrNull, toApproval, toMessage, toTask, toThread } from './rows.js';
import type {
  RuntimesBotsTable,
  RuntimesDispatchesTable,
  RuntimesHostsTable,
  RuntimesMessagesTable,
  RuntimesRunsTable,
  RuntimesTables,
  RuntimesTasksTable,
  RuntimesThreadsTable,
} from './tables.js';

export type HostRow = Selectable<RuntimesHostsTable>;
export type BotRow = Selectable<RuntimesBotsTable>;
export type ThreadRow = Selectable<RuntimesThreadsTable>;
export type MessageRow = Selectable<RuntimesMessagesTable>;
export type TaskRow = Selectable<RuntimesTasksTable>;
export type RunRow = Selectable<RuntimesRunsTable>;
export type DispatchRow = Selectable<RuntimesDispatchesTable>;
export type TaskPatch = Omit<Updateable<RuntimesTasksTable>, 'id' | 'version' | 'updated_at' | 'created_at'>;
export type DispatchPatch = Omit<Updateable<RuntimesDispatchesTable>, 'id' | 'version' | 'updated_at' | 'created_at'>;

/** Statuses a task never leaves by the heartbeat's doing (the same as the bots host's). */
export { FINAL_STATUSES } from '../bots/task-claims.js';
export const OPEN_STATUSES: readonly TaskStatus[] = ['queued', 'working'];
/** Dispatches still under way (not acknowledged, or a resume acknowledged and not reported). */
export const LIVE_STATES: readonly DispatchState[] = ['pending', 'delivered', 'acked'];
export const UNACKED_STATES: readonly DispatchState[] = ['pending', 'delivered'];
const RESUMABLE_KINDS: TaskErrorKind[] = ['interrupted', 'preempted', 'timeout', 'provider', 'rate_limit', 'approval_expired'];

type Db = Kysely<RuntimesTables>;

export class RuntimeStore {
  constructor(
    readonly db: Db,
    private readonly clock: Clock,
  ) {}

  now(): number {
    return this.clock.now();
  }

  // ── runtimes ────────────────────────────────────────────────────────────

  host(id: string, db: Db = this.db): Promise<HostRow | undefined> {
    return db.selectFrom('runtimes_hosts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async requireHost(id: string): Promise<HostRow> {
    const row = await this.host(id);
    if (!row) {
      throw new SubconsciousError('not_found', `No runtime registered as "${id}".`, {
        hint: 'Register it first: runtime.register {runtime_id, delivery, bots}.',
        details: { field: 'runtime_id' },
      });
    }
    return row;
  }

  hosts(): Promise<HostRow[]> {
    return this.db.selectFrom('runtimes_hosts').selectAll().orderBy('id').execute();
  }

  async touch(id: string): Promise<void> {
    await this.db.updateTable('runtimes_hosts').set({ seen_at: this.now() }).where('id', '=', id).execute();
  }

  async setDeliveryError(id: string, error: string | null): Promise<void> {
    await this.db.updateTable('runtimes_hosts').set({ last_delivery_error: error }).where('id', '=', id).execute();
  }

  /** Bots and not-yet-acknowledged dispatches per runtime. */
  async hostCounts(): Promise<Map<string, { bots: number; pending: number }>> {
    const [bots, pending] = await Promise.all([
      this.db
        .selectFrom('runtimes_bots')
        .select(['runtime_id', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy('runtime_id')
        .execute(),
      this.db
        .selectFrom('runtimes_dispatches')
        .select(['runtime_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('state', 'in', [...UNACKED_STATES])
        .groupBy('runtime_id')
        .execute(),
    ]);
    const out = new Map<string, { bots: number; pending: number }>();
    const at = (id: string) => out.get(id) ?? out.set(id, { bots: 0, pending: 0 }).get(id)!;
    for (const r of bots) at(r.runtime_id).bots = num(r.n);
    for (const r of pending) at(r.runtime_id).pending = num(r.n);
    return out;
  }

  // ── bots and threads ────────────────────────────────────────────────────

  bot(id: string, db: Db = this.db): Promise<BotRow | undefined> {
    return db.selectFrom('runtimes_bots').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async requireBot(id: string): Promise<BotRow> {
    const row = await this.bot(id);
    if (!row)
      throw new SubconsciousError('not_found', `No bot with id "${id}".`, { hint: 'Bots of external runtimes are listed by runtime.list / runtime.register.' });
    return row;
  }

  async botsByIds(ids: readonly string[]): Promise<BotRow[]> {
    if (ids.length === 0) return [];
    return this.db
      .selectFrom('runtimes_bots')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
  }

  botsOf(runtimeId: string, db: Db = this.db): Promise<BotRow[]> {
    return db.selectFrom('runtimes_bots').selectAll().where('runtime_id', '=', runtimeId).orderBy('external_id').execute();
  }

  async countBots(): Promise<number> {
    const row = await this.db
      .selectFrom('runtimes_bots')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return num(row?.n ?? 0);
  }

  threadRow(id: string, db: Db = this.db): Promise<ThreadRow | undefined> {
    return db.selectFrom('runtimes_threads').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async thread(id: string): Promise<Thread | undefined> {
    const row = await this.threadRow(id);
    return row ? toThread(row) : undefined;
  }

  // ── messages ────────────────────────────────────────────────────────────

  message(id: string, db: Db = this.db): Promise<MessageRow | undefined> {
    return db.selectFrom('runtimes_messages').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** A new message, numbered by its thread's counter (which proves the thread exists). */
  async insertMessage(
    db: Db,
    m: {
      id: string;
      runtimeId: string;
      externalId: string;
      threadId: string;
      role: MessageRole;
      botId: string | null;
      taskId: string | null;
      text: string;
      status: MessageStatus;
      error?: string | null;
      interrupted?: boolean;
      heartbeat?: boolean;
      createdAt?: number;
    },
  ): Promise<Message> {
    const now = this.now();
    const bumped = await db
      .updateTable('runtimes_threads')
      .set((eb) => ({ next_seq: eb('next_seq', '+', 1), updated_at: now, last_message_at: now }))
      .where('id', '=', m.threadId)
      .returning('next_seq')
      .executeTakeFirst();
    if (!bumped) throw new SubconsciousError('not_found', `No thread with id "${m.threadId}".`);
    const row: MessageRow = {
      id: m.id,
      runtime_id: m.runtimeId,
      external_id: m.externalId,
      thread_id: m.threadId,
      seq: num(bumped.next_seq),
      role: m.role,
      bot_id: m.botId,
      task_id: m.taskId,
      text: m.text,
      status: m.status,
      error: m.error ?? null,
      interrupted: m.interrupted ? 1 : 0,
      heartbeat: m.heartbeat ? 1 : 0,
      created_at: m.createdAt ?? now,
      updated_at: now,
    };
    await db.insertInto('runtimes_messages').values(row).execute();
    return toMessage(row);
  }

  async page(threadId: string, opts: { before?: number | undefined; limit: number }): Promise<Message[]> {
    let q = this.db.selectFrom('runtimes_messages').selectAll().where('thread_id', '=', threadId);
    if (opts.before !== undefined) q = q.where('seq', '<', opts.before);
    const rows = await q.orderBy('seq', 'desc').limit(opts.limit).execute();
    return rows.reverse().map(toMessage);
  }

  /** Each thread's newest `limit` messages, oldest first, in one query (a range of the (thread, seq) index each). */
  async recentMany(threadIds: readonly string[], limit: number): Promise<Map<string, Message[]>> {
    const out = new Map<string, Message[]>();
    if (threadIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('runtimes_messages as m')
      .innerJoin('runtimes_threads as t', 't.id', 'm.thread_id')
      .selectAll('m')
      .where('m.thread_id', 'in', [...threadIds])
      .where((eb) => eb('m.seq', '>', eb('t.next_seq', '-', limit)))
      .orderBy('m.thread_id')
      .orderBy('m.seq')
      .execute();
    for (const r of rows) {
      const list = out.get(r.thread_id) ?? [];
      list.push(toMessage(r));
      out.set(r.thread_id, list);
    }
    return out;
  }

  async staleBotMessages(before: number, limit = 100): Promise<Message[]> {
    const rows = await this.db
      .selectFrom('runtimes_messages')
      .selectAll()
      .where('status', 'in', ['streaming', 'queued'])
      .where('role', '=', 'bot')
      .where('updated_at', '<', before)
      .orderBy('updated_at')
      .limit(limit)
      .execute();
    return rows.map(toMessage);
  }

  async interruptIfStale(id: string, before: number, error: string): Promise<Message | undefined> {
    const res = await this.db
      .updateTable('runtimes_messages')
      .set({ status: 'error', interrupted: 1, error, updated_at: this.now() })
      .where('id', '=', id)
      .where('status', 'in', ['streaming', 'queued'])
      .where('updated_at', '<', before)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    const row = await this.message(id);
    return row ? toMessage(row) : undefined;
  }

  // ── the person's activity ───────────────────────────────────────────────

  async markUserActive(threadId: string, at = this.now(), db: Db = this.db): Promise<number> {
    await db
      .updateTable('runtimes_threads')
      .set((eb) => ({
        user_active_at: eb
          .case()
          .when(eb.or([eb('user_active_at', 'is', null), eb('user_active_at', '<', at)]))
          .then(at)
          .else(eb.ref('user_active_at'))
          .end(),
      }))
      .where('id', '=', threadId)
      .execute();
    return at;
  }

  async activities(threadIds: readonly string[]): Promise<Map<string, { userActiveAt: number | null; readAt: number | null }>> {
    const out = new Map<string, { userActiveAt: number | null; readAt: number | null }>();
    if (threadIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('runtimes_threads')
      .select(['id', 'user_active_at', 'read_at'])
      .where('id', 'in', [...threadIds])
      .execute();
    for (const r of rows) out.set(r.id, { userActiveAt: numOrNull(r.user_active_at), readAt: numOrNull(r.read_at) });
    return out;
  }

  // ── tasks ───────────────────────────────────────────────────────────────

  taskRow(id: string, db: Db = this.db): Promise<TaskRow | undefined> {
    return db.selectFrom('runtimes_tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async task(id: string): Promise<Task | undefined> {
    const row = await this.taskRow(id);
    return row ? toTask(row) : undefined;
  }

  async tasksByIds(ids: readonly string[]): Promise<TaskRow[]> {
    if (ids.length === 0) return [];
    return this.db
      .selectFrom('runtimes_tasks')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
  }

  /** Write `patch` and bump the version, only while the row matches `when`. Undefined: it moved on. */
  async updateTask(
    id: string,
    patch: TaskPatch,
    when: { version?: number; status?: readonly TaskStatus[] } = {},
    db: Db = this.db,
  ): Promise<TaskRow | undefined> {
    const now = this.now();
    let q = db
      .updateTable('runtimes_tasks')
      .set((eb) => ({ ...patch, version: eb('version', '+', 1), updated_at: now }))
      .where('id', '=', id);
    if (when.version !== undefined) q = q.where('version', '=', when.version);
    if (when.status) q = q.where('status', 'in', [...when.status]);
    const res = await q.executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    return this.taskRow(id, db);
  }

  /** Seed 2 §5.5's claim: only at `version`, not final or working, no live claim (a stale one is taken over); attempts + 1. */
  async claim(id: string, c: { version: number; token: string; by: string; staleMs: number }): Promise<TaskRow | undefined> {
    const now = this.now();
    return (await claimTask(this.db, 'runtimes_tasks', id, { version: c.version, token: c.token, by: c.by, now, staleBefore: now - c.staleMs }))
      ? this.taskRow(id)
      : undefined;
  }

  async renewClaim(id: string, token: string): Promise<boolean> {
    return renewTaskClaim(this.db, 'runtimes_tasks', id, token, this.now());
  }

  async releaseClaim(id: string, opts: { token?: string | undefined; refund?: boolean | undefined } = {}, db: Db = this.db): Promise<TaskRow | undefined> {
    return (await releaseTaskClaim(db, 'runtimes_tasks', id, { ...opts, now: this.now() })) ? this.taskRow(id, db) : undefined;
  }

  async staleClaims(staleMs: number, limit = 100): Promise<TaskRow[]> {
    return this.db
      .selectFrom('runtimes_tasks')
      .selectAll()
      .where('claim_at', '<', this.now() - staleMs)
      .where('claim_token', 'is not', null)
      .orderBy('claim_at')
      .limit(limit)
      .execute();
  }

  /** Unfinished tasks: queued/working, and failed ones of a kind a resume may fix (newest first). */
  async openWork(
    opts: { botIds?: readonly string[] | undefined; kinds?: readonly TaskErrorKind[] | undefined; limit?: number | undefined } = {},
  ): Promise<TaskRow[]> {
    const kinds = [...(opts.kinds ?? RESUMABLE_KINDS)];
    let q = this.db
      .selectFrom('runtimes_tasks')
      .selectAll()
      .where((eb) => eb.or([eb('status', 'in', [...OPEN_STATUSES]), eb.and([eb('status', '=', 'failed'), eb('error_kind', 'in', kinds)])]));
    if (opts.botIds) {
      if (opts.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...opts.botIds]);
    }
    return q
      .orderBy('updated_at', 'desc')
      .limit(opts.limit ?? 1000)
      .execute();
  }

  /** Rule 2's candidates: open tasks untouched since `before` whose lease (the runtime's last report) ran out. */
  async lapsed(before: number, now: number, opts: { botIds?: readonly string[] | undefined; limit?: number | undefined } = {}): Promise<TaskRow[]> {
    let q = this.db
      .selectFrom('runtimes_tasks')
      .selectAll()
      .where('status', 'in', [...OPEN_STATUSES])
      .where('updated_at', '<', before)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]));
    if (opts.botIds) {
      if (opts.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...opts.botIds]);
    }
    return q
      .orderBy('updated_at')
      .limit(opts.limit ?? 500)
      .execute();
  }

  /** Tasks a runtime holds open (working or queued) — a restarted runtime's are cut off. */
  openOf(runtimeId: string): Promise<TaskRow[]> {
    return this.db
      .selectFrom('runtimes_tasks')
      .selectAll()
      .where('runtime_id', '=', runtimeId)
      .where('status', 'in', [...OPEN_STATUSES])
      .execute();
  }

  // ── runs ────────────────────────────────────────────────────────────────

  run(id: string, db: Db = this.db): Promise<RunRow | undefined> {
    return db.selectFrom('runtimes_runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Runs reported running whose lease has not run out (the bot is busy). */
  liveRuns(now: number, botIds?: readonly string[]): Promise<RunRow[]> {
    let q = this.db.selectFrom('runtimes_runs').selectAll().where('status', '=', 'running').where('lease_until', '>', now);
    if (botIds) {
      if (botIds.length === 0) return Promise.resolve([]);
      q = q.where('bot_id', 'in', [...botIds]);
    }
    return q.execute();
  }

  async endRunsOf(runtimeId: string): Promise<number> {
    const now = this.now();
    const res = await this.db
      .updateTable('runtimes_runs')
      .set({ status: 'failed', ended_at: now, updated_at: now, lease_until: null })
      .where('runtime_id', '=', runtimeId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  // ── approvals ───────────────────────────────────────────────────────────

  async expiredSinceMany(botIds: readonly string[], since: number, limit = 1000): Promise<BotApproval[]> {
    if (botIds.length === 0) return [];
    const rows = await this.db
      .selectFrom('runtimes_approvals')
      .selectAll()
      .where('bot_id', 'in', [...botIds])
      .where('state', '=', 'expired')
      .where('expired_at', '>', since)
      .orderBy('expired_at', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toApproval);
  }

  async pendingCounts(threadIds: readonly string[]): Promise<Map<string, number>> {
    if (threadIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('runtimes_approvals')
      .select(['thread_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('thread_id', 'in', [...threadIds])
      .where('state', '=', 'pending')
      .groupBy('thread_id')
      .execute();
    return new Map(rows.map((r) => [r.thread_id, num(r.n)]));
  }

  // ── dispatches ──────────────────────────────────────────────────────────

  dispatch(id: string, db: Db = this.db): Promise<DispatchRow | undefined> {
    return db.selectFrom('runtimes_dispatches').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insertDispatch(
    db: Db,
    d: {
      id: string;
      runtimeId: string;
      kind: DispatchKind;
      botId: string;
      threadId: string;
      taskId: string | null;
      text: string;
      note: string | null;
      messageId: string | null;
      attempt: number | null;
      claimToken: string | null;
      expiresAt: number;
    },
  ): Promise<DispatchRow> {
    const now = this.now();
    const row: DispatchRow = {
      id: d.id,
      runtime_id: d.runtimeId,
      kind: d.kind,
      bot_id: d.botId,
      thread_id: d.threadId,
      task_id: d.taskId,
      text: d.text,
      note: d.note,
      message_id: d.messageId,
      attempt: d.attempt,
      claim_token: d.claimToken,
      state: 'pending',
      deliveries: 0,
      next_attempt_at: now,
      last_error: null,
      lease_until: null,
      acked_by: null,
      expires_at: d.expiresAt,
      version: 1,
      created_at: now,
      updated_at: now,
      delivered_at: null,
      acked_at: null,
      finished_at: null,
    };
    await db.insertInto('runtimes_dispatches').values(row).execute();
    return row;
  }

  /** Write `patch` and bump the version while the row matches `when` (a version, or a list of states). */
  async updateDispatch(
    id: string,
    patch: DispatchPatch,
    when: { version?: number; states?: readonly DispatchState[] } = {},
    db: Db = this.db,
  ): Promise<DispatchRow | undefined> {
    let q = db
      .updateTable('runtimes_dispatches')
      .set((eb) => ({ ...patch, version: eb('version', '+', 1), updated_at: this.now() }))
      .where('id', '=', id);
    if (when.version !== undefined) q = q.where('version', '=', when.version);
    if (when.states) q = q.where('state', 'in', [...when.states]);
    const res = await q.executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    return this.dispatch(id, db);
  }

  /** Dispatches due for a delivery now (a first try, a retry, a redelivery with no ack), oldest first. */
  due(now: number, opts: { runtimeId?: string; delivery?: 'webhook' | 'poll'; limit: number }): Promise<DispatchRow[]> {
    let q = this.db
      .selectFrom('runtimes_dispatches as d')
      .innerJoin('runtimes_hosts as h', 'h.id', 'd.runtime_id')
      .selectAll('d')
      .where('d.state', 'in', [...UNACKED_STATES])
      .where('d.next_attempt_at', '<=', now);
    if (opts.runtimeId) q = q.where('d.runtime_id', '=', opts.runtimeId);
    if (opts.delivery) q = q.where('h.delivery', '=', opts.delivery);
    return q.orderBy('d.next_attempt_at').orderBy('d.created_at').limit(opts.limit).execute();
  }

  /** When the next webhook delivery is due (null: none waits). */
  async nextDue(): Promise<number | null> {
    const row = await this.db
      .selectFrom('runtimes_dispatches as d')
      .innerJoin('runtimes_hosts as h', 'h.id', 'd.runtime_id')
      .select((eb) => eb.fn.min('d.next_attempt_at').as('at'))
      .where('d.state', 'in', [...UNACKED_STATES])
      .where('h.delivery', '=', 'webhook')
      .executeTakeFirst();
    return numOrNull(row?.at as number | null | undefined);
  }

  /** The next moment the sweep has something to do: an acknowledged resume's lease ends, an unacknowledged dispatch expires. */
  async nextDeadline(): Promise<number | null> {
    const [lease, expiry] = await Promise.all([
      this.db
        .selectFrom('runtimes_dispatches')
        .select((eb) => eb.fn.min('lease_until').as('at'))
        .where('kind', '=', 'resume')
        .where('state', '=', 'acked')
        .executeTakeFirst(),
      this.db
        .selectFrom('runtimes_dispatches')
        .select((eb) => eb.fn.min('expires_at').as('at'))
        .where('state', 'in', [...UNACKED_STATES])
        .executeTakeFirst(),
    ]);
    const times = [lease?.at, expiry?.at].map((v) => numOrNull(v as number | null | undefined)).filter((v): v is number => v !== null);
    return times.length ? Math.min(...times) : null;
  }

  /** The live resume of a task (at most one: its claim, or its lease, holds the task). */
  liveResume(taskId: string, db: Db = this.db): Promise<DispatchRow | undefined> {
    return db
      .selectFrom('runtimes_dispatches')
      .selectAll()
      .where('task_id', '=', taskId)
      .where('kind', '=', 'resume')
      .where('state', 'in', [...LIVE_STATES])
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
  }

  /** Live resumes of these bots (or all). */
  liveResumes(botIds?: readonly string[]): Promise<DispatchRow[]> {
    let q = this.db
      .selectFrom('runtimes_dispatches')
      .selectAll()
      .where('kind', '=', 'resume')
      .where('state', 'in', [...LIVE_STATES]);
    if (botIds) {
      if (botIds.length === 0) return Promise.resolve([]);
      q = q.where('bot_id', 'in', [...botIds]);
    }
    return q.execute();
  }

  /** Acknowledged resumes whose lease ran out before `now`. */
  lapsedResumes(now: number, limit = 100): Promise<DispatchRow[]> {
    return this.db
      .selectFrom('runtimes_dispatches')
      .selectAll()
      .where('kind', '=', 'resume')
      .where('state', '=', 'acked')
      .where('lease_until', '<', now)
      .orderBy('lease_until')
      .limit(limit)
      .execute();
  }

  /** Dispatches nobody acknowledged within their time. */
  expiredUnacked(now: number, limit = 100): Promise<DispatchRow[]> {
    return this.db
      .selectFrom('runtimes_dispatches')
      .selectAll()
      .where('state', 'in', [...UNACKED_STATES])
      .where('expires_at', '<', now)
      .limit(limit)
      .execute();
  }

  ackedBy(runtimeId: string): Promise<DispatchRow[]> {
    return this.db.selectFrom('runtimes_dispatches').selectAll().where('runtime_id', '=', runtimeId).where('state', '=', 'acked').execute();
  }

  list(f: { runtimeId?: string | undefined; botId?: string | undefined; state?: DispatchState | undefined; limit: number }): Promise<DispatchRow[]> {
    let q = this.db.selectFrom('runtimes_dispatches').selectAll();
    if (f.runtimeId) q = q.where('runtime_id', '=', f.runtimeId);
    if (f.botId) q = q.where('bot_id', '=', f.botId);
    if (f.state) q = q.where('state', '=', f.state);
    return q.orderBy('created_at', 'desc').orderBy('id').limit(f.limit).execute();
  }
}
