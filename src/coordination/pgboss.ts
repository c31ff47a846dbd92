/**
 * The coordinator on Postgres, on pg-boss 10 (several workers on one database). pg-boss holds the
 * jobs (its schema, `pgboss` in the product), orders and claims them (`fetch` with `batchSize`,
 * priority, SKIP LOCKED), completes, fails and cancels them. What pg-boss 10 does not have, a side
 * table `coord_holds` adds, keyed by pg-boss's job id:
 *
 * - Leases under the injected clock: pg-boss's `expireInSeconds` is a run timeout with no renewal,
 *   so its jobs get the longest expiry it allows and `coord_holds` says who holds each under a
 *   lease it renews; a lapsed or dead holder's job is claimed again directly (it stays active in
 *   pg-boss), keeping its checkpoint and naming `takenOverFrom`.
 * - Groups: pg-boss's `singleton` policy gives one active job per key, but a fetch whose first
 *   candidate's key is busy fails as a whole (a unique violation swallowed as "no jobs"), so one
 *   busy bot would stall every other. Instead a group's later jobs wait here (`waiting`) and its
 *   best one is sent to pg-boss when the group is free; a higher-priority arrival takes back a
 *   head pg-boss has not started yet.
 * - Retries and `startAfter` run on the injected clock (pg-boss's run on the database's `now()`),
 *   so the same contract tests drive both implementations with a fake clock.
 * - Singleton keys: a unique index on live keys (pg-boss's `singletonKey` would mean the group).
 *
 * pg-boss's `data` is `{ payload }` (it takes objects only); the payload of record is ours.
 */
import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import PgBoss from 'pg-boss';
import { ownerIsGone } from '../core/process-identity.js';
import { BaseCoordinator, nextSeq, parseJson, queueSizes, retryDelay, type CoordinatorOptions } from './base.js';
import type { CoordHoldsTable, CoordinationTables } from './tables.js';
import type { Job, JobSpec, JobState, JsonValue, QueueSize } from './types.js';

/** Just under pg-boss's 24 h cap: the lease (ours) decides, not pg-boss's run timeout. */
const BOSS_EXPIRE_SECONDS = 23 * 3600;
const LIVE = ['waiting', 'queued', 'active', 'released'];

export interface PgBossCoordinatorOptions extends CoordinatorOptions {
  /** pg-boss's schema (`pgboss` in the product; one per test run). */
  schema: string;
}

type Db = Kysely<CoordinationTables>;

/** pg-boss's `db` option over our pool (or a transaction), so its statements join ours. */
function bossDb(db: Db): PgBoss.Db {
  return {
    async executeSql(text: string, values?: unknown[]) {
      const res = await db.executeQuery(CompiledQuery.raw(text, values ?? []));
      return { rows: res.rows };
    },
  } as PgBoss.Db;
}

export class PgBossCoordinator extends BaseCoordinator {
  private readonly schema: string;
  private booting: Promise<PgBoss> | null = null;
  private readonly queues = new Map<string, Promise<void>>();

  constructor(opts: PgBossCoordinatorOptions) {
    super(opts);
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) throw new Error(`pg-boss schema "${opts.schema}" must be lower-case letters, digits and underscores`);
    this.schema = opts.schema;
  }

  /** pg-boss starts at the first job operation: a process that only takes tick leases never pays for it. */
  private boss(): Promise<PgBoss> {
    this.booting ??= (async () => {
      const boss = new PgBoss({ db: bossDb(this.db), schema: this.schema, schedule: false });
      boss.on('error', (err) => this.log.warn({ err }, 'pg-boss reported an error'));
      await boss.start();
      return boss;
    })();
    return this.booting;
  }

  private ensureQueue(queue: string): Promise<void> {
    let ready = this.queues.get(queue);
    if (!ready) {
      ready = (async () => {
        const boss = await this.boss();
        if (await boss.getQueue(queue)) return;
        await boss.createQueue(queue, { name: queue, policy: 'standard', retryLimit: 0, expireInSeconds: BOSS_EXPIRE_SECONDS }).catch(async (err) => {
          if (!(await boss.getQueue(queue))) throw err; // not a race with another worker creating it
        });
      })();
      ready.catch(() => this.queues.delete(queue));
      this.queues.set(queue, ready);
    }
    return ready;
  }

  async send<P extends JsonValue>(spec: JobSpec<P>): Promise<string> {
    await this.ensureQueue(spec.queue);
    const boss = await this.boss();
    const now = this.clock.now();
    const id = randomUUID();
    const priority = spec.priority ?? 0;
    const due = (spec.startAfter ?? 0) <= now;
    const sent = await this.db.transaction().execute(async (trx) => {
      if (spec.group !== undefined) await lockGroup(trx, spec.group);
      const live = spec.group !== undefined ? await groupLive(trx, spec.group) : [];
      const state = due && live.length === 0 ? 'queued' : 'waiting';
      const row = await trx
        .insertInto('coord_holds')
        .values({
          job_id: id,
          queue: spec.queue,
          payload: JSON.stringify(spec.payload),
          key: spec.key ?? null,
          grp: spec.group ?? null,
          priority,
          state,
          attempt: 0,
          retries: 0,
          retry_limit: spec.retryLimit ?? 0,
          retry_delay_ms: spec.retryDelayMs ?? 0,
          retry_backoff: spec.retryBackoff ? 1 : 0,
          start_after: spec.startAfter ?? 0,
          holder: null,
          lease_until: 0,
          lapsed_from: null,
          checkpoint: null,
          reason: null,
          created_at: now,
          seq: nextSeq(),
        })
        .onConflict((oc) => oc.doNothing())
        .returning('job_id')
        .executeTakeFirst();
      if (!row) return null;
      if (state === 'queued') {
        await boss.send(spec.queue, { payload: spec.payload }, { id, priority, retryLimit: 0, expireInSeconds: BOSS_EXPIRE_SECONDS, db: bossDb(trx) });
      } else if (due && live.length === 1 && live[0]!.state === 'queued' && live[0]!.priority < priority) {
        // A person's message before the heartbeat work pg-boss has not started yet: take that back.
        const head = live[0]!;
        const back = await sql`DELETE FROM ${sql.id(this.schema, 'job')} WHERE id = ${head.job_id}::uuid AND state = 'created' RETURNING id`.execute(trx);
        if (back.rows.length === 1) {
          await trx.updateTable('coord_holds').set({ state: 'waiting' }).where('job_id', '=', head.job_id).execute();
          await trx.updateTable('coord_holds').set({ state: 'queued' }).where('job_id', '=', id).execute();
          await boss.send(spec.queue, { payload: spec.payload }, { id, priority, retryLimit: 0, expireInSeconds: BOSS_EXPIRE_SECONDS, db: bossDb(trx) });
        }
      }
      return id;
    });
    if (sent) {
      this.wake(spec.queue);
      return sent;
    }
    const live = await this.db
      .selectFrom('coord_holds')
      .select('job_id')
      .where('key', '=', spec.key ?? '')
      .where('state', 'in', LIVE)
      .executeTakeFirst();
    return live ? live.job_id : this.send(spec); // settled in between: send again
  }

  async fetch<P extends JsonValue>(queue: string, opts: { batchSize?: number } = {}): Promise<Job<P>[]> {
    const batch = Math.max(1, opts.batchSize ?? 1);
    const me = this.workerId;
    const now = this.clock.now();
    const out: CoordHoldsTable[] = [];
    // 1. Jobs pg-boss already runs that no live worker holds: lapsed or dead holders, retries, released.
    const held = await this.db
      .selectFrom('coord_holds')
      .select(['job_id', 'state', 'holder', 'lease_until', 'start_after'])
      .where('queue', '=', queue)
      .where((eb) =>
        eb.or([eb.and([eb('state', '=', 'active'), eb('holder', '!=', me)]), eb.and([eb('state', '=', 'released'), eb('start_after', '<=', now)])]),
      )
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .orderBy('seq')
      .execute();
    for (const h of held) {
      if (out.length >= batch) break;
      const lapsed = h.state === 'released' || h.lease_until <= now || ownerIsGone(h.holder);
      if (!lapsed) continue;
      const took = await this.db
        .updateTable('coord_holds')
        .set({ state: 'active', holder: me, lease_until: now + this.leaseMs, attempt: sql`attempt + 1`, lapsed_from: h.state === 'active' ? h.holder : null })
        .where('job_id', '=', h.job_id)
        .where('state', '=', h.state)
        .where((eb) => (h.holder === null ? eb('holder', 'is', null) : eb('holder', '=', h.holder)))
        .returningAll()
        .executeTakeFirst();
      if (took) out.push(took);
    }
    // 2. Send each free group's best waiting job (and due delayed ones) to pg-boss.
    await this.promote(queue, now);
    // 3. pg-boss claims the rest.
    if (out.length < batch) {
      await this.ensureQueue(queue);
      const boss = await this.boss();
      const jobs = await boss.fetch(queue, { batchSize: batch - out.length });
      if (jobs.length > 0) {
        const ids = jobs.map((j) => j.id);
        const took = await this.db
          .updateTable('coord_holds')
          .set({ state: 'active', holder: me, lease_until: now + this.leaseMs, attempt: sql`attempt + 1` })
          .where('job_id', 'in', ids)
          .where('state', '=', 'queued')
          .returningAll()
          .execute();
        // Cancelled between pg-boss's claim and ours: pg-boss hears it too.
        const stray = ids.filter((i) => !took.some((t) => t.job_id === i));
        if (stray.length > 0) await boss.cancel(queue, stray);
        took.sort((a, b) => b.priority - a.priority || Number(a.created_at) - Number(b.created_at) || Number(a.seq) - Number(b.seq));
        out.push(...took);
      }
    }
    const jobs: Job<P>[] = [];
    for (const row of out) {
      const payload = parseJson(row.payload);
      if (payload.ok) jobs.push(toJob<P>(row));
      else {
        this.log.warn({ job: row.job_id, queue, reason: payload.reason }, 'job moved aside: its payload does not parse');
        await this.deadLetter(row.job_id, payload.reason);
      }
    }
    return jobs;
  }

  /** Waiting jobs whose turn came: each free group's best (in any queue), and this queue's due ones. */
  private async promote(queue: string, now: number): Promise<void> {
    const rows = await sql<{ job_id: string; grp: string | null }>`
      SELECT DISTINCT ON (COALESCE(w.grp, w.job_id)) w.job_id, w.grp
      FROM coord_holds w
      WHERE w.state = 'waiting' AND w.start_after <= ${now}
        AND (w.grp IS NOT NULL OR w.queue = ${queue})
        AND NOT EXISTS (SELECT 1 FROM coord_holds l WHERE l.grp = w.grp AND l.state IN ('queued', 'active', 'released'))
      ORDER BY COALESCE(w.grp, w.job_id), w.priority DESC, w.created_at, w.seq`.execute(this.db);
    if (rows.rows.length === 0) return;
    const boss = await this.boss();
    for (const r of rows.rows) {
      await this.db.transaction().execute(async (trx) => {
        if (r.grp !== null) {
          await lockGroup(trx, r.grp);
          if ((await groupLive(trx, r.grp)).length > 0) return;
        }
        const row = await trx
          .updateTable('coord_holds')
          .set({ state: 'queued' })
          .where('job_id', '=', r.job_id)
          .where('state', '=', 'waiting')
          .returningAll()
          .executeTakeFirst();
        if (!row) return;
        await this.ensureQueue(row.queue);
        const payload = parseJson(row.payload);
        await boss.send(
          row.queue,
          { payload: payload.ok ? payload.value : null },
          {
            id: row.job_id,
            priority: row.priority,
            retryLimit: 0,
            expireInSeconds: BOSS_EXPIRE_SECONDS,
            db: bossDb(trx),
          },
        );
      });
    }
  }

  async renew(jobId: string): Promise<boolean> {
    return this.mine(jobId, { lease_until: this.clock.now() + this.leaseMs });
  }

  checkpoint(jobId: string, data: JsonValue): Promise<boolean> {
    return this.mine(jobId, { checkpoint: JSON.stringify(data) });
  }

  private async mine(jobId: string, set: Partial<CoordHoldsTable>, db: Db = this.db): Promise<boolean> {
    const res = await db
      .updateTable('coord_holds')
      .set(set)
      .where('job_id', '=', jobId)
      .where('state', '=', 'active')
      .where('holder', '=', this.workerId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  protected async settle(jobId: string, how: { complete: JsonValue | undefined } | { fail: string; retry: boolean }): Promise<boolean> {
    const boss = await this.boss();
    const now = this.clock.now();
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('coord_holds')
        .selectAll()
        .where('job_id', '=', jobId)
        .where('state', '=', 'active')
        .where('holder', '=', this.workerId)
        .forUpdate()
        .executeTakeFirst();
      if (!row) return false;
      if ('complete' in how) {
        await this.mine(jobId, { state: 'completed', holder: null }, trx);
        await boss.complete(row.queue, jobId, { value: how.complete ?? null }, { db: bossDb(trx) });
      } else if (how.retry && row.retries < row.retry_limit) {
        // Stays active in pg-boss; claimable again (by any worker) once the delay passed.
        const delay = retryDelay(Number(row.retry_delay_ms), row.retry_backoff === 1, row.retries);
        await this.mine(
          jobId,
          { state: 'released', holder: null, lapsed_from: null, retries: row.retries + 1, start_after: now + delay, reason: how.fail },
          trx,
        );
      } else {
        await this.mine(jobId, { state: 'failed', holder: null, reason: how.fail }, trx);
        await boss.fail(row.queue, jobId, { reason: how.fail }, { db: bossDb(trx) });
      }
      return true;
    });
  }

  async cancel(target: { id: string } | { key: string } | { group: string; queue?: string }): Promise<number> {
    return this.moveAside(target, 'cancelled', null);
  }

  async deadLetter(jobId: string, reason: string): Promise<void> {
    await this.moveAside({ id: jobId }, 'dead', reason);
  }

  /** Cancel or dead-letter live jobs here and in pg-boss, in one transaction. */
  private async moveAside(
    target: { id: string } | { key: string } | { group: string; queue?: string },
    state: 'cancelled' | 'dead',
    reason: string | null,
  ): Promise<number> {
    const boss = await this.boss();
    return this.db.transaction().execute(async (trx) => {
      let q = trx.updateTable('coord_holds').set({ state, holder: null, reason }).where('state', 'in', LIVE);
      if ('id' in target) q = q.where('job_id', '=', target.id);
      else if ('key' in target) q = q.where('key', '=', target.key);
      else {
        q = q.where('grp', '=', target.group);
        if (target.queue !== undefined) q = q.where('queue', '=', target.queue);
      }
      const rows = await q.returning(['job_id', 'queue']).execute();
      const byQueue = new Map<string, string[]>();
      for (const r of rows) byQueue.set(r.queue, [...(byQueue.get(r.queue) ?? []), r.job_id]);
      for (const [queue, ids] of byQueue) {
        if (state === 'cancelled') await boss.cancel(queue, ids, { db: bossDb(trx) });
        else for (const id of ids) await boss.fail(queue, id, { reason }, { db: bossDb(trx) });
      }
      return rows.length;
    });
  }

  async getJob<P extends JsonValue>(jobId: string): Promise<Job<P> | null> {
    const row = await this.db.selectFrom('coord_holds').selectAll().where('job_id', '=', jobId).executeTakeFirst();
    return row ? toJob<P>(row) : null;
  }

  async sizes(): Promise<QueueSize[]> {
    const rows = await this.db
      .selectFrom('coord_holds')
      .select(['queue', 'state', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', 'in', [...LIVE, 'failed', 'dead'])
      .groupBy(['queue', 'state'])
      .execute();
    return queueSizes(rows.map((r) => ({ ...r, state: publicState(r.state) })));
  }

  protected async jobsHeld(): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('coord_holds')
      .select(['holder', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'active')
      .groupBy('holder')
      .execute();
    return new Map(rows.map((r) => [r.holder!, Number(r.n)]));
  }

  protected async releaseAll(): Promise<void> {
    await this.db
      .updateTable('coord_holds')
      .set({ state: 'released', holder: null, lapsed_from: null, start_after: 0 })
      .where('state', '=', 'active')
      .where('holder', '=', this.workerId)
      .execute();
  }

  protected override async shutdown(): Promise<void> {
    const booting = this.booting;
    this.booting = null;
    this.queues.clear();
    if (booting) await (await booting).stop({ graceful: false, wait: true, close: false });
  }
}

async function lockGroup(db: Db, group: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${'coord:' + group}))`.execute(db);
}

async function groupLive(db: Db, group: string): Promise<Array<{ job_id: string; state: string; priority: number }>> {
  return db
    .selectFrom('coord_holds')
    .select(['job_id', 'state', 'priority'])
    .where('grp', '=', group)
    .where('state', 'in', ['queued', 'active', 'released'])
    .execute();
}

function publicState(state: string): JobState {
  return state === 'waiting' || state === 'released' ? 'queued' : (state as JobState);
}

function toJob<P extends JsonValue>(row: CoordHoldsTable): Job<P> {
  const payload = parseJson(row.payload);
  const checkpoint = parseJson(row.checkpoint);
  return {
    id: row.job_id,
    queue: row.queue,
    payload: (payload.ok ? payload.value : null) as P,
    key: row.key,
    group: row.grp,
    priority: row.priority,
    state: publicState(row.state),
    attempt: row.attempt,
    checkpoint: checkpoint.ok ? checkpoint.value : null,
    takenOverFrom: row.state === 'active' ? row.lapsed_from : null,
    createdAt: Number(row.created_at),
  };
}
