/**
 * Tasks: the unit of work behind a request (issue 11 §1, seed 2 §10.3). Every write bumps
 * `version`, so a writer that read a task can change it only if nobody changed it since
 * (compare-and-set): the heartbeat's claims (§5.5), `begin()`'s re-check, cancel and dismiss.
 *
 * Claims: a one-shot lock `{token, at, by}` written with `attempts + 1` before a resume is
 * dispatched; `begin()` consumes it, `cancel`/`dismiss`/`stop` release it, a claim older than
 * the stale window may be taken over (attempts stay counted), and a job dropped before it ran
 * refunds its attempt.
 */
import type { Kysely, Selectable, Updateable } from 'kysely';
import { SubconsciousError, ownerIsGone, type Clock, type IdGen } from '../core/index.js';
import { perDatabase, precompile } from '../store/index.js';
import type { Task, TaskErrorKind, TaskSource, TaskStatus } from '../protocol/bots.js';
import { num, TASK_OUT_COLUMNS, toTask, type TaskOutRow } from './rows.js';
import { claimTask, releaseTaskClaim, renewTaskClaim } from './task-claims.js';
import type { BotsTables, BotsTasksTable } from './tables.js';

export type TaskRow = Selectable<BotsTasksTable>;

export interface OpenWorkOptions {
  botIds?: readonly string[];
  kinds?: readonly TaskErrorKind[];
  limit?: number;
  sortHere?: boolean;
}

export { FINAL_STATUSES } from './task-claims.js';
export const OPEN_STATUSES: readonly TaskStatus[] = ['queued', 'working'];

/** `openSince`'s test for one row already read: open, not written and not leased since `before`. */
export function isOpenSince(r: Pick<TaskRow, 'status' | 'updated_at' | 'owner_seen_at'>, before: number): boolean {
  return OPEN_STATUSES.includes(r.status) && Number(r.updated_at) < before && (r.owner_seen_at === null || Number(r.owner_seen_at) < before);
}

/** Seed 2 §5.5: a claim older than this may be taken over by the next tick. */
export const STALE_CLAIM_MS = 5 * 60_000;

/** The heartbeat's sweeps run these on every tick: compiled once per database. */
const sweepQueries = perDatabase((db: Kysely<BotsTables>) => ({
  staleClaims: precompile(db, 2, (before: number, limit: number) =>
    db.selectFrom('bots_tasks').selectAll().where('claim_at', '<', before).where('claim_token', 'is not', null).orderBy('claim_at').limit(limit),
  ),
  openSince: precompile(db, 2, (before: number, limit: number) =>
    db
      .selectFrom('bots_tasks')
      .selectAll()
      .where('status', 'in', [...OPEN_STATUSES])
      .where('updated_at', '<', before)
      .where((eb) => eb.or([eb('owner_seen_at', 'is', null), eb('owner_seen_at', '<', before)]))
      .orderBy('updated_at')
      .limit(limit),
  ),
}));

export interface NewTask {
  botId: string;
  threadId: string;
  title: string;
  prompt: string;
  source: TaskSource;
  fromBotId?: string | null | undefined;
  routineId?: string | null | undefined;
  handoffDepth?: number | undefined;
  requestMessageId?: string | null | undefined;
  owner?: string | null | undefined;
}

export type TaskPatch = Omit<Updateable<BotsTasksTable>, 'id' | 'version' | 'updated_at' | 'created_at'>;

export interface TaskStoreOptions {
  db: Kysely<BotsTables>;
  clock: Clock;
  ids: IdGen;
}

export class TaskStore {
  constructor(private readonly o: TaskStoreOptions) {}

  private get db() {
    return this.o.db;
  }

  async create(t: NewTask): Promise<TaskRow> {
    const now = this.o.clock.now();
    const row: TaskRow = {
      id: this.o.ids(),
      bot_id: t.botId,
      thread_id: t.threadId,
      message_id: null,
      request_message_id: t.requestMessageId ?? null,
      title: t.title,
      prompt: t.prompt,
      source: t.source,
      from_bot_id: t.fromBotId ?? null,
      routine_id: t.routineId ?? null,
      handoff_depth: t.handoffDepth ?? 0,
      status: 'queued',
      error_kind: null,
      error: null,
      checkpoint: null,
      interrupted: 0,
      attempts: 0,
      last_heartbeat_at: null,
      claim_token: null,
      claim_at: null,
      claim_by: null,
      owner: t.owner ?? null,
      owner_seen_at: t.owner ? now : null,
      run_id: null,
      review_note: null,
      taken_over_from: null,
      version: 1,
      created_at: now,
      updated_at: now,
      started_at: null,
      finished_at: null,
    };
    await this.db.insertInto('bots_tasks').values(row).execute();
    return row;
  }

  /** The tasks a person's message asked for (one per bot it went to). */
  async byRequestMessage(messageId: string): Promise<TaskRow[]> {
    return this.db.selectFrom('bots_tasks').selectAll().where('request_message_id', '=', messageId).orderBy('created_at').execute();
  }

  async row(id: string): Promise<TaskRow | undefined> {
    return this.db.selectFrom('bots_tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * This bot's tasks whose bot message is a heartbeat one still queued: heartbeat work that waits
   * for a worker (any worker's), which a person's message sets aside (seed 2 §7.4).
   */
  async waitingHeartbeatOf(botId: string): Promise<TaskRow[]> {
    return this.db
      .selectFrom('bots_tasks as t')
      .innerJoin('bots_messages as m', 'm.id', 't.message_id')
      .selectAll('t')
      .where('t.bot_id', '=', botId)
      .where('t.status', '!=', 'working')
      .where('m.heartbeat', '=', 1)
      .where('m.status', '=', 'queued')
      .execute();
  }

  async get(id: string): Promise<Task | undefined> {
    const r = await this.row(id);
    return r ? toTask(r) : undefined;
  }

  async requireRow(id: string): Promise<TaskRow> {
    const r = await this.row(id);
    if (!r) throw new SubconsciousError('not_found', `No task with id "${id}".`, { hint: 'Tasks are listed in a thread (bots.thread).' });
    return r;
  }

  async byIds(ids: readonly string[]): Promise<Task[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('bots_tasks')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
    return rows.map(toTask);
  }

  /**
   * Write `patch` and bump the version, only while the row still matches: `version` (exact),
   * and/or `status` in a list. Returns the new row, or undefined when the row moved on.
   */
  async update(id: string, patch: TaskPatch, when: { version?: number; status?: readonly TaskStatus[] } = {}): Promise<TaskRow | undefined> {
    const now = this.o.clock.now();
    // Taking a task over (or letting it go) starts (or ends) its owner's lease.
    const lease = patch.owner === undefined || patch.owner_seen_at !== undefined ? {} : { owner_seen_at: patch.owner === null ? null : now };
    let q = this.db
      .updateTable('bots_tasks')
      .set((eb) => ({ ...patch, ...lease, version: eb('version', '+', 1), updated_at: now }))
      .where('id', '=', id);
    if (when.version !== undefined) q = q.where('version', '=', when.version);
    if (when.status) q = q.where('status', 'in', [...when.status]);
    const res = await q.executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return undefined;
    return this.row(id);
  }

  // ── claims (seed 2 §5.5) ────────────────────────────────────────────────

  /**
   * Claim a task for a resume: only if its version is still `version`, it is not final, and it
   * holds no live claim (one older than `staleMs` may be taken over). Counts the attempt and
   * stamps `last_heartbeat_at` in the same write. Undefined: someone else moved first.
   */
  async claim(id: string, c: { version: number; token: string; by: string; staleMs?: number }): Promise<TaskRow | undefined> {
    const now = this.o.clock.now();
    const staleBefore = now - (c.staleMs ?? STALE_CLAIM_MS);
    return (await claimTask(this.db, 'bots_tasks', id, { version: c.version, token: c.token, by: c.by, now, staleBefore })) ? this.row(id) : undefined;
  }

  /** Keep a claim alive (its `at` moves to now). False when the token no longer holds it. */
  async renewClaim(id: string, token: string): Promise<boolean> {
    return renewTaskClaim(this.db, 'bots_tasks', id, token, this.o.clock.now());
  }

  /**
   * Drop a claim (any claim when `token` is undefined). `refund`: the claimed run never started,
   * so its attempt is given back (seed 2 §7.4). Returns the row when a claim was released.
   */
  async releaseClaim(id: string, opts: { token?: string | undefined; refund?: boolean } = {}): Promise<TaskRow | undefined> {
    return (await releaseTaskClaim(this.db, 'bots_tasks', id, { ...opts, now: this.o.clock.now() })) ? this.row(id) : undefined;
  }

  /** Claims older than `staleMs` (crash safety: the next tick may reclaim them). */
  async staleClaims(staleMs = STALE_CLAIM_MS, limit = 100): Promise<TaskRow[]> {
    const before = this.o.clock.now() - staleMs;
    return (await sweepQueries(this.db).staleClaims(before, limit)).rows;
  }

  /** A human action (approval, "Check now", a reply after settle) resets the attempt count (§7.5). */
  async resetAttempts(id: string): Promise<TaskRow | undefined> {
    return this.update(id, { attempts: 0 });
  }

  // ── reads for the page and the heartbeat ────────────────────────────────

  /**
   * Unfinished tasks of the given bots (or all): queued/working, and failed ones whose kind a
   * resume may fix. An indexed select on (status, error_kind). `lean`: only the columns a `Task`
   * is made of (`TASK_OUT_COLUMNS`; triage reads many).
   */
  async openWork(opts: OpenWorkOptions & { lean: true }): Promise<TaskOutRow[]>;
  async openWork(opts?: OpenWorkOptions): Promise<TaskRow[]>;
  async openWork(opts: OpenWorkOptions & { lean?: boolean } = {}): Promise<TaskOutRow[]> {
    const kinds = [...(opts.kinds ?? ['interrupted', 'preempted', 'timeout', 'provider', 'rate_limit', 'approval_expired'])];
    const from = this.db.selectFrom('bots_tasks');
    let q = (opts.lean ? from.select([...TASK_OUT_COLUMNS]) : from.selectAll()).where((eb) =>
      eb.or([eb('status', 'in', [...OPEN_STATUSES]), eb.and([eb('status', '=', 'failed'), eb('error_kind', 'in', kinds)])]),
    );
    if (opts.botIds) {
      if (opts.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...opts.botIds]);
    }
    // Newest first: when the limit cuts, it is the oldest failures that fall off, never recent work.
    const limit = opts.limit ?? 1000;
    if (opts.sortHere) {
      // SQLite sorts whole rows (31 columns) in a temporary b-tree: read them as they come, one over
      // the limit, and sort here; only a read the limit cuts is asked again in order.
      const rows = await q.limit(limit + 1).execute();
      if (rows.length <= limit) return rows.sort((a, b) => Number(b.updated_at) - Number(a.updated_at));
    }
    return q.orderBy('updated_at', 'desc').limit(limit).execute();
  }

  /**
   * Per bot, what the store says runs and waits (issue 17 §3: every worker shows the same status):
   * the working task (one per bot: the job's group) and the queued count. One grouped, indexed select on status.
   */
  async openByBot(): Promise<Map<string, { working: string | null; queued: number }>> {
    const [queued, working] = await Promise.all([
      this.db
        .selectFrom('bots_tasks')
        .select(['bot_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where(
          'status',
          'in',
          OPEN_STATUSES.filter((s) => s !== 'working'),
        )
        .groupBy('bot_id')
        .execute(),
      this.db.selectFrom('bots_tasks').select(['bot_id', 'id', 'owner']).where('status', '=', 'working').execute(),
    ]);
    const out = new Map<string, { working: string | null; queued: number }>();
    const at = (botId: string) => out.get(botId) ?? out.set(botId, { working: null, queued: 0 }).get(botId)!;
    for (const r of queued) at(r.bot_id).queued += Number(r.n);
    // A run whose process is gone (this host: its pid no longer runs) is not working: it was cut off
    // and waits for its take-over; a remote owner is trusted until its lease lapses.
    for (const r of working) if (!ownerIsGone(r.owner)) at(r.bot_id).working = r.id;
    return out;
  }

  /**
   * Seed 2 rule 2's candidates: queued/working tasks not written since `before` (`isOpenSince`) whose owner's
   * lease was not renewed since then either (no owner, or an owner that stopped renewing: dead).
   * A live process's own work is told apart in memory by its runtime.
   */
  async openSince(before: number, opts: { botIds?: readonly string[] | undefined; limit?: number | undefined } = {}): Promise<TaskRow[]> {
    if (!opts.botIds) return (await sweepQueries(this.db).openSince(before, opts.limit ?? 500)).rows;
    let q = this.db
      .selectFrom('bots_tasks')
      .selectAll()
      .where('status', 'in', [...OPEN_STATUSES])
      .where('updated_at', '<', before)
      .where((eb) => eb.or([eb('owner_seen_at', 'is', null), eb('owner_seen_at', '<', before)]));
    if (opts.botIds) {
      if (opts.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...opts.botIds]);
    }
    return q
      .orderBy('updated_at')
      .limit(opts.limit ?? 500)
      .execute();
  }

  /**
   * Renew `owner`'s lease on these open tasks of its (one statement per 500). Not a write of the task: neither its
   * version nor `updated_at` moves, so claims' compare-and-set and the orphan age are untouched.
   */
  /**
   * A running task's checkpoint as its run goes (seed 2 §7.6): only while that run holds it
   * (`working`, its `run_id`). No version or `updated_at` change: it is progress of the run, not a
   * change of the task that a claim, a cancel or the orphan age should see.
   */
  async writeProgress(id: string, runId: string, checkpoint: string): Promise<boolean> {
    const res = await this.db
      .updateTable('bots_tasks')
      .set({ checkpoint })
      .where('id', '=', id)
      .where('run_id', '=', runId)
      .where('status', '=', 'working')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async renewOwnerLease(owner: string, taskIds: readonly string[]): Promise<number> {
    let n = 0;
    const now = this.o.clock.now();
    for (let i = 0; i < taskIds.length; i += 500) {
      const r = await this.db
        .updateTable('bots_tasks')
        .set({ owner_seen_at: now })
        .where('owner', '=', owner)
        .where('id', 'in', taskIds.slice(i, i + 500))
        .where('status', 'in', [...OPEN_STATUSES])
        // Never backwards: a renewal that waited behind a later one (a slow tick) must not age the lease.
        .where((w) => w.or([w('owner_seen_at', 'is', null), w('owner_seen_at', '<=', now)]))
        .executeTakeFirst();
      n += Number(r.numUpdatedRows);
    }
    return n;
  }

  /** Tasks in `review`, counted per thread or per bot (the needs-attention badges). */
  async reviewCounts(by: 'thread_id' | 'bot_id'): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('bots_tasks')
      .select([by, (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', '=', 'review')
      .groupBy(by)
      .execute();
    return new Map(rows.map((r) => [(r as Record<string, unknown>)[by] as string, num(r.n)]));
  }

  async lastOfRoutine(routineId: string): Promise<TaskRow | undefined> {
    return this.db.selectFrom('bots_tasks').selectAll().where('routine_id', '=', routineId).orderBy('created_at', 'desc').limit(1).executeTakeFirst();
  }
}
