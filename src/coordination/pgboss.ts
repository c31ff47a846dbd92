/**
 * The coordinator on Postgres, on pg-boss 10 (several workers on one database). pg-boss holds the
 * jobs (its schema, `pgboss` in the product), fails and cancels them and keeps its tables (archive,
 * expiry). The hot path — claiming a batch and completing it — is one statement each that moves
 * pg-boss's job row and ours together (pgboss-batch.ts), not pg-boss's `fetch` / `complete` plus
 * ours in a transaction. What pg-boss 10 does not have, a side table `coord_holds` adds, keyed by
 * pg-boss's job id:
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
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import PgBoss from 'pg-boss';
import { ownerIsGone } from '../core/process-identity.js';
import { BaseCoordinator, nextSeq, parseJson, queueSizes, retryDelay, type CoordinatorOptions } from './base.js';
import { claimBatch, completeBatch, type ClaimedRow } from './pgboss-batch.js';
import type { CoordHoldsTable, CoordinationTables } from './tables.js';
import type { CancelOptions, CancelTarget, DeadLetter, Job, JobSpec, JobState, JsonValue, QueueSize } from './types.js';

/** Just under pg-boss's 24 h cap: the lease (ours) decides, not pg-boss's run timeout. */
const BOSS_EXPIRE_SECONDS = 23 * 3600;
const LIVE = ['waiting', 'queued', 'active', 'released'];
/** Live and held by no worker. */
const WAITING = ['waiting', 'queued', 'released'];
const FINISHED = ['completed', 'cancelled', 'failed', 'dead'];

export interface PgBossCoordinatorOptions extends CoordinatorOptions {
  /** pg-boss's schema (`pgboss` in the product; one per test run). */
  schema: string;
}

type Db = Kysely<CoordinationTables>;

/** pg-boss's `db` option over our pool (or a transaction), so its statements join ours. */
/**
 * pg-boss's statements on our pool. Its schema creation and migrations are one text
 * `BEGIN; …; COMMIT;`: when a statement in it fails — two workers starting at once both create
 * the schema, and the second gets "already exists", which pg-boss expects and ignores — the
 * session is left inside the aborted transaction. Back in the pool, that connection fails
 * whatever query it is given next ("current transaction is aborted, commands ignored until end
 * of transaction block"), so a daemon started beside another fell over. Such a text runs on one
 * connection, rolled back on failure before the connection goes back.
 */
export function bossDb(db: Db): PgBoss.Db {
  return {
    async executeSql(text: string, values?: unknown[]) {
      const query = CompiledQuery.raw(text, values ?? []);
      if (!/^\s*BEGIN\b/i.test(text)) return { rows: (await db.executeQuery(query)).rows };
      return db.connection().execute(async (conn) => {
        try {
          return { rows: (await conn.executeQuery(query)).rows };
        } catch (err) {
          await conn.executeQuery(CompiledQuery.raw('ROLLBACK')).catch(() => undefined);
          throw err;
        }
      });
    },
  } as PgBoss.Db;
}

export class PgBossCoordinator extends BaseCoordinator {
  private readonly schema: string;
  private booting: Promise<PgBoss> | null = null;
  private readonly queues = new Map<string, Promise<string>>();

  constructor(opts: PgBossCoordinatorOptions) {
    super(opts);
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) throw new Error(`pg-boss schema "${opts.schema}" must be lower-case letters, digits and underscores`);
    this.schema = opts.schema;
  }

  /** pg-boss starts at the first job operation: a process that only takes tick leases never pays for it. */
  private boss(): Promise<PgBoss> {
    this.booting ??= (async () => {
      // pg-boss's own retention matches ours: finished jobs are archived after it, then deleted.
      const keep = Math.max(60, Math.round(this.retentionMs / 1000));
      const boss = new PgBoss({
        db: bossDb(this.db),
        schema: this.schema,
        schedule: false,
        archiveCompletedAfterSeconds: keep,
        archiveFailedAfterSeconds: keep,
        deleteAfterSeconds: keep,
      });
      boss.on('error', (err) => this.log.warn({ err }, 'pg-boss reported an error'));
      await boss.start();
      return boss;
    })();
    return this.booting;
  }

  /** The queue exists in pg-boss; resolves with the name of its partition of pg-boss's `job` table. */
  private ensureQueue(queue: string): Promise<string> {
    let ready = this.queues.get(queue);
    if (!ready) {
      ready = (async () => {
        const boss = await this.boss();
        if (!(await boss.getQueue(queue))) {
          await boss.createQueue(queue, { name: queue, policy: 'standard', retryLimit: 0, expireInSeconds: BOSS_EXPIRE_SECONDS }).catch(async (err) => {
            if (!(await boss.getQueue(queue))) throw err; // not a race with another worker creating it
          });
        }
        const row = await sql<{ partition_name: string }>`SELECT partition_name FROM ${sql.id(this.schema, 'queue')} WHERE name = ${queue}`.execute(this.db);
        return row.rows[0]!.partition_name;
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
          settled_at: null,
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
    const leaseUntil = now + this.leaseMs;
    const partition = await this.ensureQueue(queue);
    const claim = (limit: number, deferToWaiting: boolean) =>
      claimBatch(this.db, this.schema, { queue, partition, limit, holder: me, now, leaseUntil, hostPrefix: `${os.hostname()}:`, deferToWaiting });
    // 1. One statement: lapsed and released jobs taken over, then queued ones claimed — unless a
    //    waiting job's turn came (its group is free), which is promoted first (step 3).
    const first = await claim(batch, true);
    const out: ClaimedRow[] = [...first.rows];
    // 2. A holder on this host whose process is gone loses its jobs at once (a check only this
    //    process can make, so after the statement: with a full batch it waits for the next fetch).
    for (const h of first.busyHere) {
      if (out.length >= batch) break;
      if (!ownerIsGone(h.holder)) continue;
      const took = await this.db
        .updateTable('coord_holds')
        .set({ state: 'active', holder: me, lease_until: leaseUntil, attempt: sql`attempt + 1`, lapsed_from: h.holder })
        .where('job_id', '=', h.job_id)
        .where('state', '=', 'active')
        .where('holder', '=', h.holder)
        .returningAll()
        .executeTakeFirst();
      if (took) out.push(took);
    }
    // 3. Send each free group's best waiting job (and due delayed ones) to pg-boss, then claim.
    if (first.waitingDue) {
      await this.promote(queue, now);
      if (out.length < batch) out.push(...(await claim(batch - out.length, false)).rows);
    }
    const jobs: Job<P>[] = [];
    for (const row of out) {
      const payload = parseJson(row.payload);
      if (payload.ok) jobs.push(toJob<P>(row, payload.value));
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
    const now = this.clock.now();
    if ('complete' in how) {
      await this.boss(); // its schema exists before we write to it
      const output = JSON.stringify({ value: how.complete ?? null });
      return (await completeBatch(this.db, this.schema, [jobId], this.workerId, now, output)).length === 1;
    }
    const boss = await this.boss();
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
      if (how.retry && row.retries < row.retry_limit) {
        // Stays active in pg-boss; claimable again (by any worker) once the delay passed.
        const delay = retryDelay(Number(row.retry_delay_ms), row.retry_backoff === 1, row.retries);
        await this.mine(
          jobId,
          { state: 'released', holder: null, lapsed_from: null, retries: row.retries + 1, start_after: now + delay, reason: how.fail },
          trx,
        );
      } else {
        await this.mine(jobId, { state: 'failed', holder: null, reason: how.fail, settled_at: now }, trx);
        await boss.fail(row.queue, jobId, { reason: how.fail }, { db: bossDb(trx) });
      }
      return true;
    });
  }

  /** One statement for the whole batch, here and in pg-boss (see pgboss-batch.ts). */
  protected async settleMany(jobIds: readonly string[]): Promise<string[]> {
    await this.boss(); // its schema exists before we write to it
    return completeBatch(this.db, this.schema, jobIds, this.workerId, this.clock.now(), null);
  }

  async cancel(target: CancelTarget, opts: CancelOptions = {}): Promise<number> {
    return this.moveAside(target, 'cancelled', null, opts.waitingOnly ? WAITING : LIVE);
  }

  async deadLetter(jobId: string, reason: string): Promise<void> {
    await this.moveAside({ id: jobId }, 'dead', reason, LIVE);
  }

  /** Cancel or dead-letter live jobs here and in pg-boss, in one transaction. */
  private async moveAside(target: CancelTarget, state: 'cancelled' | 'dead', reason: string | null, from: readonly string[]): Promise<number> {
    const boss = await this.boss();
    return this.db.transaction().execute(async (trx) => {
      let q = trx.updateTable('coord_holds').set({ state, holder: null, reason, settled_at: this.clock.now() }).where('state', 'in', from);
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

  async liveJob<P extends JsonValue>(key: string): Promise<Job<P> | null> {
    const row = await this.db.selectFrom('coord_holds').selectAll().where('key', '=', key).where('state', 'in', LIVE).executeTakeFirst();
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

  async deadLetters(limit = 50): Promise<DeadLetter[]> {
    const rows = await this.db
      .selectFrom('coord_holds')
      .selectAll()
      .where('state', '=', 'dead')
      .orderBy(sql`coalesce(settled_at, created_at)`, 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: r.job_id,
      queue: r.queue,
      key: r.key,
      group: r.grp,
      reason: r.reason ?? 'moved aside',
      createdAt: Number(r.created_at),
      movedAt: r.settled_at === null ? null : Number(r.settled_at),
    }));
  }

  /** Our rows past the retention, and the same jobs in pg-boss (its own archive settings keep the rest bounded). */
  async prune(olderThan: number): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const gone = await trx
        .deleteFrom('coord_holds')
        .where('state', 'in', FINISHED)
        .where(sql<boolean>`coalesce(settled_at, created_at) < ${olderThan}`)
        .returning('job_id')
        .execute();
      if (gone.length === 0) return 0;
      const ids = gone.map((g) => g.job_id);
      await this.boss(); // its schema exists before we delete from it
      for (const table of ['job', 'archive']) await sql`DELETE FROM ${sql.id(this.schema, table)} WHERE id = ANY(${ids}::uuid[])`.execute(trx);
      return gone.length;
    });
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

/** `payload`: already parsed by the caller (a fetch checks it parses), else parsed here. */
function toJob<P extends JsonValue>(row: ClaimedRow, payload?: JsonValue | null): Job<P> {
  const parsed = payload === undefined ? parseJson(row.payload) : ({ ok: true, value: payload } as const);
  const checkpoint = parseJson(row.checkpoint);
  return {
    id: row.job_id,
    queue: row.queue,
    payload: (parsed.ok ? parsed.value : null) as P,
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
