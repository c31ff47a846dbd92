/**
 * The coordinator on SQLite (one process, or a CLI beside the daemon): jobs in `coord_jobs` in the
 * same database file, with the same guarantees across a restart as pg-boss gives on Postgres.
 * A claim is one transaction that starts with a write (so two processes serialise on SQLite's
 * write lock instead of failing a read-then-write upgrade): put back what lapsed, then take the
 * best startable jobs, at most one per group (the group's best across queues).
 */
import { sql } from 'kysely';
import { ownerIsGone } from '../core/process-identity.js';
import { BaseCoordinator, nextSeq, parseJson, queueSizes, retryDelay, type CoordinatorOptions } from './base.js';
import type { CoordJobsTable } from './tables.js';
import type { CancelOptions, CancelTarget, DeadLetter, Job, JobSpec, JobState, JsonValue, QueueSize } from './types.js';

const LIVE: JobState[] = ['queued', 'active'];
const FINISHED: JobState[] = ['completed', 'cancelled', 'failed', 'dead'];

export interface SqliteCoordinatorOptions extends CoordinatorOptions {
  ids: () => string;
}

export class SqliteCoordinator extends BaseCoordinator {
  private readonly ids: () => string;

  constructor(opts: SqliteCoordinatorOptions) {
    super(opts);
    this.ids = opts.ids;
  }

  async send<P extends JsonValue>(spec: JobSpec<P>): Promise<string> {
    const now = this.clock.now();
    const id = this.ids();
    // ON CONFLICT on the live-key index: a key already queued or active keeps its job.
    const res = await this.db
      .insertInto('coord_jobs')
      .values({
        id,
        queue: spec.queue,
        payload: JSON.stringify(spec.payload),
        key: spec.key ?? null,
        grp: spec.group ?? null,
        priority: spec.priority ?? 0,
        state: 'queued',
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
        output: null,
        reason: null,
        created_at: now,
        seq: nextSeq(),
        updated_at: now,
      })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (res) {
      this.wake(spec.queue);
      return id;
    }
    const live = await this.db
      .selectFrom('coord_jobs')
      .select('id')
      .where('key', '=', spec.key ?? '')
      .where('state', 'in', LIVE)
      .executeTakeFirst();
    if (!live) return this.send(spec); // the holder settled it in between: send again
    return live.id;
  }

  async fetch<P extends JsonValue>(queue: string, opts: { batchSize?: number } = {}): Promise<Job<P>[]> {
    const batch = Math.max(1, opts.batchSize ?? 1);
    const me = this.workerId;
    const bad: Array<{ id: string; reason: string }> = [];
    const claimed = await this.db.transaction().execute(async (trx) => {
      const now = this.clock.now();
      await trx
        .updateTable('coord_jobs')
        .set({ state: 'queued', lapsed_from: sql`holder`, holder: null, updated_at: now })
        .where('state', '=', 'active')
        .where('lease_until', '<=', now)
        .execute();
      const holders = await trx.selectFrom('coord_jobs').select('holder').distinct().where('state', '=', 'active').where('holder', '!=', me).execute();
      for (const { holder } of holders) {
        if (holder && ownerIsGone(holder)) {
          await trx
            .updateTable('coord_jobs')
            .set({ state: 'queued', lapsed_from: holder, holder: null, updated_at: now })
            .where('state', '=', 'active')
            .where('holder', '=', holder)
            .execute();
        }
      }
      const busy = new Set(
        (await trx.selectFrom('coord_jobs').select('grp').distinct().where('state', '=', 'active').where('grp', 'is not', null).execute()).map((r) => r.grp!),
      );
      const candidates = await trx
        .selectFrom('coord_jobs')
        .selectAll()
        .where('queue', '=', queue)
        .where('state', '=', 'queued')
        .where('start_after', '<=', now)
        .orderBy('priority', 'desc')
        .orderBy('created_at')
        .orderBy('seq')
        .limit(batch * 4 + 20)
        .execute();
      const groups = [...new Set(candidates.flatMap((c) => (c.grp && !busy.has(c.grp) ? [c.grp] : [])))];
      // A group's next job is its best across every queue: a lower one here must wait for it.
      const heads = new Set<string>();
      if (groups.length > 0) {
        const rows = await trx
          .selectFrom('coord_jobs')
          .select(['id', 'grp'])
          .where('grp', 'in', groups)
          .where('state', '=', 'queued')
          .where('start_after', '<=', now)
          .orderBy('priority', 'desc')
          .orderBy('created_at')
          .orderBy('seq')
          .execute();
        const seen = new Set<string>();
        for (const r of rows) {
          if (seen.has(r.grp!)) continue;
          seen.add(r.grp!);
          heads.add(r.id);
        }
      }
      const out: CoordJobsTable[] = [];
      for (const c of candidates) {
        if (out.length >= batch) break;
        if (c.grp && (busy.has(c.grp) || !heads.has(c.id))) continue;
        const payload = parseJson(c.payload);
        if (!payload.ok) {
          bad.push({ id: c.id, reason: payload.reason });
          continue;
        }
        if (c.grp) busy.add(c.grp);
        const took = { state: 'active', holder: me, lease_until: now + this.leaseMs, attempt: c.attempt + 1, updated_at: now };
        await trx.updateTable('coord_jobs').set(took).where('id', '=', c.id).execute();
        out.push({ ...c, ...took });
      }
      return out;
    });
    for (const b of bad) {
      this.log.warn({ job: b.id, queue, reason: b.reason }, 'job moved aside: its payload does not parse');
      await this.deadLetter(b.id, b.reason);
    }
    return claimed.map((row) => toJob<P>(row));
  }

  async renew(jobId: string): Promise<boolean> {
    const now = this.clock.now();
    return this.mine(jobId, { lease_until: now + this.leaseMs, updated_at: now });
  }

  checkpoint(jobId: string, data: JsonValue): Promise<boolean> {
    return this.mine(jobId, { checkpoint: JSON.stringify(data), updated_at: this.clock.now() });
  }

  protected async settle(jobId: string, how: { complete: JsonValue | undefined } | { fail: string; retry: boolean }): Promise<boolean> {
    const now = this.clock.now();
    if ('complete' in how) {
      return this.mine(jobId, { state: 'completed', holder: null, output: how.complete === undefined ? null : JSON.stringify(how.complete), updated_at: now });
    }
    const row = await this.db.selectFrom('coord_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
    if (!row || row.state !== 'active' || row.holder !== this.workerId) return false;
    if (how.retry && row.retries < row.retry_limit) {
      const delay = retryDelay(Number(row.retry_delay_ms), row.retry_backoff === 1, row.retries);
      return this.mine(jobId, {
        state: 'queued',
        holder: null,
        lapsed_from: null,
        retries: row.retries + 1,
        start_after: now + delay,
        reason: how.fail,
        updated_at: now,
      });
    }
    return this.mine(jobId, { state: 'failed', holder: null, reason: how.fail, updated_at: now });
  }

  protected async settleMany(jobIds: readonly string[]): Promise<string[]> {
    const rows = await this.db
      .updateTable('coord_jobs')
      .set({ state: 'completed', holder: null, output: null, updated_at: this.clock.now() })
      .where('id', 'in', jobIds)
      .where('state', '=', 'active')
      .where('holder', '=', this.workerId)
      .returning('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /** An update of a job this worker holds now; false when it is not ours (any more). */
  private async mine(jobId: string, set: Partial<CoordJobsTable>): Promise<boolean> {
    const res = await this.db
      .updateTable('coord_jobs')
      .set(set)
      .where('id', '=', jobId)
      .where('state', '=', 'active')
      .where('holder', '=', this.workerId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async cancel(target: CancelTarget, opts: CancelOptions = {}): Promise<number> {
    let q = this.db
      .updateTable('coord_jobs')
      .set({ state: 'cancelled', holder: null, updated_at: this.clock.now() })
      .where('state', 'in', opts.waitingOnly ? ['queued'] : LIVE);
    if ('id' in target) q = q.where('id', '=', target.id);
    else if ('key' in target) q = q.where('key', '=', target.key);
    else {
      q = q.where('grp', '=', target.group);
      if (target.queue !== undefined) q = q.where('queue', '=', target.queue);
    }
    return Number((await q.executeTakeFirst()).numUpdatedRows);
  }

  async deadLetter(jobId: string, reason: string): Promise<void> {
    await this.db
      .updateTable('coord_jobs')
      .set({ state: 'dead', holder: null, reason, updated_at: this.clock.now() })
      .where('id', '=', jobId)
      .where('state', 'in', LIVE)
      .execute();
  }

  async getJob<P extends JsonValue>(jobId: string): Promise<Job<P> | null> {
    const row = await this.db.selectFrom('coord_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
    return row ? toJob<P>(row) : null;
  }

  async liveJob<P extends JsonValue>(key: string): Promise<Job<P> | null> {
    const row = await this.db.selectFrom('coord_jobs').selectAll().where('key', '=', key).where('state', 'in', LIVE).executeTakeFirst();
    return row ? toJob<P>(row) : null;
  }

  /** Why a job ended as it did (`fail` / `deadLetter` reason), or null. */
  async reason(jobId: string): Promise<string | null> {
    const row = await this.db.selectFrom('coord_jobs').select('reason').where('id', '=', jobId).executeTakeFirst();
    return row?.reason ?? null;
  }

  async sizes(): Promise<QueueSize[]> {
    const rows = await this.db
      .selectFrom('coord_jobs')
      .select(['queue', 'state', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', 'in', ['queued', 'active', 'failed', 'dead'])
      .groupBy(['queue', 'state'])
      .execute();
    return queueSizes(rows);
  }

  async deadLetters(limit = 50): Promise<DeadLetter[]> {
    const rows = await this.db.selectFrom('coord_jobs').selectAll().where('state', '=', 'dead').orderBy('updated_at', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: r.id,
      queue: r.queue,
      key: r.key,
      group: r.grp,
      reason: r.reason ?? 'moved aside',
      createdAt: Number(r.created_at),
      movedAt: Number(r.updated_at),
    }));
  }

  async prune(olderThan: number): Promise<number> {
    const res = await this.db.deleteFrom('coord_jobs').where('state', 'in', FINISHED).where('updated_at', '<', olderThan).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  protected async jobsHeld(): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('coord_jobs')
      .select(['holder', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'active')
      .groupBy('holder')
      .execute();
    return new Map(rows.map((r) => [r.holder!, Number(r.n)]));
  }

  protected async releaseAll(): Promise<void> {
    await this.db
      .updateTable('coord_jobs')
      .set({ state: 'queued', holder: null, lapsed_from: null, updated_at: this.clock.now() })
      .where('state', '=', 'active')
      .where('holder', '=', this.workerId)
      .execute();
  }
}

function toJob<P extends JsonValue>(row: CoordJobsTable): Job<P> {
  const payload = parseJson(row.payload);
  const checkpoint = parseJson(row.checkpoint);
  return {
    id: row.id,
    queue: row.queue,
    payload: (payload.ok ? payload.value : null) as P,
    key: row.key,
    group: row.grp,
    priority: row.priority,
    state: row.state as JobState,
    attempt: row.attempt,
    checkpoint: checkpoint.ok ? checkpoint.value : null,
    takenOverFrom: row.state === 'active' ? row.lapsed_from : null,
    createdAt: Number(row.created_at),
  };
}
