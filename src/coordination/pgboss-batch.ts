/**
 * The Postgres coordinator's hot path as single statements: claim a batch, complete a batch.
 *
 * A claim used to be a scan of `coord_holds`, then pg-boss's `fetch` plus our update in a
 * transaction (five statements), and a batch complete the same shape again (four); at batch 50
 * that left the coordinator at about half of pg-boss used directly. Here each is one statement
 * whose data-modifying CTEs change pg-boss's `job` row and ours together: Postgres commits a
 * statement as a whole, so a worker killed at any point leaves both or neither (the chaos run's
 * "pg-boss ran it, nobody held it" cannot happen), with no transaction to open.
 *
 * These write pg-boss 10's `job` table themselves (as `send` already does to take a head back and
 * `prune` to delete): the same columns pg-boss's own fetch and complete change (`state`,
 * `started_on`, `completed_on`, `output`), so its maintenance (archive, expiry) sees its usual
 * rows. pg-boss is pinned at 10.x; a major upgrade re-reads its plans.js before this file.
 * Both are sent as named prepared statements (store/pg-prepared.ts): the claim's planning cost
 * about as much as running it.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { PREPARED } from '../store/index.js';
import type { CoordHoldsTable, CoordinationTables } from './tables.js';

type Db = Kysely<CoordinationTables>;

export interface ClaimArgs {
  queue: string;
  /** The queue's partition of pg-boss's `job` table (pg-boss 10 keeps one per queue: `queue.partition_name`). */
  partition: string;
  limit: number;
  holder: string;
  now: number;
  leaseUntil: number;
  /** `<host>:`: holders on this host, whose process the caller can see is gone. */
  hostPrefix: string;
  /** Hold back fresh claims while a waiting job's turn has come (the caller promotes it first). */
  deferToWaiting: boolean;
}

/** What a claim returns of each row: what a `Job` is made of, and its order. */
export type ClaimedRow = Pick<
  CoordHoldsTable,
  'job_id' | 'queue' | 'payload' | 'key' | 'grp' | 'priority' | 'state' | 'attempt' | 'checkpoint' | 'lapsed_from' | 'created_at' | 'seq'
>;
const CLAIMED = sql.raw('h.job_id, h.queue, h.payload, h.key, h.grp, h.priority, h.state, h.attempt, h.checkpoint, h.lapsed_from, h.created_at, h.seq');

export interface Claimed {
  /** Taken over (a lapsed lease, a released job) first, then fresh claims; each in priority order. */
  rows: ClaimedRow[];
  /** A waiting job in a free group (or of this queue) is due: fresh claims were held back. */
  waitingDue: boolean;
  /** Active jobs of this queue that another worker on this host holds under a live lease. */
  busyHere: Array<{ job_id: string; holder: string }>;
}

/**
 * A fetch's claim in one statement: take over this queue's lapsed and released jobs, then claim
 * queued ones (in pg-boss and here) up to `limit`, in our order (priority, then oldest on the
 * injected clock, then insertion).
 *
 * Every candidate row is locked with SKIP LOCKED: a job that another statement is cancelling,
 * taking back or claiming (it holds one of the rows) is skipped, never waited for — two workers
 * claiming at once get disjoint batches, and a claim cannot deadlock against a cancel that locks
 * the two rows in the other order. A fresh candidate must be `queued` here and not yet started in
 * pg-boss; pg-boss's `start_after` is not consulted because delays run on the injected clock in
 * `coord_holds` (a job reaches pg-boss only once due). While a waiting job's turn has come, fresh
 * claims are held back so the caller can promote it first (and it can win on priority).
 *
 * Written so that each part reads about `limit` rows whatever the statistics say, because they
 * are often wrong here: a new queue's pg-boss partition is unanalyzed or was analyzed nearly empty,
 * and a prepared statement keeps the plan made then while the tables grow (a day of finished
 * jobs is kept for the retention). Plain joins were planned as scans of the whole partition:
 *
 * - pg-boss's row is locked in a LATERAL subquery (its own FOR UPDATE is a fence the planner
 *   keeps): the claim walks `coord_holds_queued` in order and looks each job up by pg-boss's
 *   primary key. As a join it once joined the queue's whole backlog against every candidate (50 ×
 *   depth comparisons, 6 of a 7.6 ms claim). Its state is compared as text so that pg-boss's
 *   partial fetch index (`state < 'active'`, keyed by name only) is not a candidate: the planner
 *   took it and filtered the backlog for each id.
 * - The updates find their rows by key with `= ANY(ARRAY(…))`, not a join (a join was planned as a
 *   hash over the whole partition), on the queue's own partition (no run-time pruning per claim).
 */
export async function claimBatch(db: Db, bossSchema: string, a: ClaimArgs): Promise<Claimed> {
  const job = sql.id(bossSchema, a.partition);
  const result = await rows(
    db,
    sql<ClaimedRow & { kind: string | null; waiting_due: boolean; busy_here: string }>`${sql.raw(PREPARED)}
      WITH due AS (
        SELECT ${a.deferToWaiting} AND EXISTS (
          SELECT 1 FROM coord_holds w
          WHERE w.state = 'waiting' AND w.start_after <= ${a.now} AND (w.grp IS NOT NULL OR w.queue = ${a.queue})
            AND NOT EXISTS (SELECT 1 FROM coord_holds l WHERE l.grp = w.grp AND l.state IN ('queued', 'active', 'released'))
        ) AS waiting
      ), lapsed AS (
        SELECT job_id FROM coord_holds
        WHERE queue = ${a.queue}
          AND ((state = 'active' AND holder <> ${a.holder} AND lease_until <= ${a.now}) OR (state = 'released' AND start_after <= ${a.now}))
        ORDER BY priority DESC, created_at, seq
        LIMIT ${a.limit}
        FOR UPDATE SKIP LOCKED
      ), took AS (
        UPDATE coord_holds h
        SET state = 'active', holder = ${a.holder}, lease_until = ${a.leaseUntil}, attempt = h.attempt + 1,
            lapsed_from = CASE WHEN h.state = 'active' THEN h.holder END
        WHERE h.job_id = ANY(ARRAY(SELECT job_id FROM lapsed))
        RETURNING ${CLAIMED}
      ), pick AS (
        SELECT h.job_id
        FROM coord_holds h
        CROSS JOIN LATERAL (
          SELECT j.id FROM ${job} j
          WHERE j.name = ${a.queue} AND j.id = h.job_id::uuid AND j.state::text IN ('created', 'retry')
          FOR UPDATE SKIP LOCKED
        ) j
        WHERE h.queue = ${a.queue} AND h.state = 'queued'
          AND NOT (SELECT waiting FROM due)
        ORDER BY h.priority DESC, h.created_at, h.seq
        LIMIT ${a.limit} - (SELECT count(*) FROM lapsed)
        FOR UPDATE OF h SKIP LOCKED
      ), started AS (
        UPDATE ${job} j SET state = 'active', started_on = now()
        WHERE j.name = ${a.queue} AND j.id = ANY(ARRAY(SELECT job_id::uuid FROM pick))
        RETURNING j.id::text AS job_id
      ), held AS (
        UPDATE coord_holds h SET state = 'active', holder = ${a.holder}, lease_until = ${a.leaseUntil}, attempt = h.attempt + 1
        WHERE h.job_id = ANY(ARRAY(SELECT job_id FROM started))
        RETURNING ${CLAIMED}
      ), busy AS (
        SELECT coalesce(json_agg(json_build_object('job_id', job_id, 'holder', holder)), '[]'::json) AS list
        FROM coord_holds
        WHERE queue = ${a.queue} AND state = 'active' AND holder <> ${a.holder} AND lease_until > ${a.now}
          AND left(holder, ${a.hostPrefix.length}) = ${a.hostPrefix}
      )
      SELECT due.waiting AS waiting_due, busy.list::text AS busy_here, c.*
      FROM due CROSS JOIN busy
      LEFT JOIN (SELECT 'took' AS kind, took.* FROM took UNION ALL SELECT 'held' AS kind, held.* FROM held) c ON true`,
  );
  // Each row also carries `kind` and the two per-statement values (read from the first row only).
  const first = result[0]!;
  const order = (x: ClaimedRow, y: ClaimedRow) => y.priority - x.priority || Number(x.created_at) - Number(y.created_at) || Number(x.seq) - Number(y.seq);
  const took = result.filter((r) => r.kind === 'took').sort(order);
  const held = result.filter((r) => r.kind === 'held').sort(order);
  return { rows: [...took, ...held], waitingDue: first.waiting_due, busyHere: JSON.parse(first.busy_here) as Claimed['busyHere'] };
}

/**
 * Complete the jobs among `ids` that `holder` still holds, here and in pg-boss: one statement.
 * Returns the ids completed; one whose lease was lost (taken over, released) is left out, unchanged
 * in both tables. `output` is pg-boss's `output` column (JSON text, or null).
 */
export async function completeBatch(db: Db, bossSchema: string, ids: readonly string[], holder: string, now: number, output: string | null): Promise<string[]> {
  const job = sql.id(bossSchema, 'job');
  const done = await rows(
    db,
    sql<{ job_id: string }>`${sql.raw(PREPARED)}
      WITH done AS (
        UPDATE coord_holds SET state = 'completed', holder = NULL, settled_at = ${now}
        WHERE job_id = ANY(${[...ids]}::text[]) AND state = 'active' AND holder = ${holder}
        RETURNING job_id, queue
      ), boss AS (
        UPDATE ${job} j SET state = 'completed', completed_on = now(), output = ${output}::jsonb
        FROM done
        WHERE j.name = done.queue AND j.id = done.job_id::uuid AND j.state = 'active'
        RETURNING j.id
      )
      SELECT job_id FROM done`,
  );
  return done.map((r) => r.job_id);
}

async function rows<R>(db: Db, query: RawBuilder<R>): Promise<R[]> {
  return (await query.execute(db)).rows;
}
