/**
 * Seed 2 §5.5's claim on a task row, the one set of writes for every host's tasks table (the bots
 * host's `bots_tasks`, an external runtime's `runtimes_tasks`, which share these columns): take
 * it (only at `version`, not final or working, no live claim — one older than `staleBefore` is
 * taken over; the attempt is counted and `last_heartbeat_at` stamped in the same write), keep it
 * alive, let it go (with `refund`: the claimed run never started, so its attempt is given back).
 * Each answers whether it changed the row; the store reads the row back its own way.
 */
import type { Kysely } from 'kysely';
import type { TaskStatus } from '../protocol/bots.js';

/** Statuses a task never leaves by itself: never resumed, never resurrected, never claimed. */
export const FINAL_STATUSES: readonly TaskStatus[] = ['done', 'cancelled', 'dismissed'];

/** The columns a claim reads and writes. */
interface ClaimColumns {
  id: string;
  status: TaskStatus;
  version: number;
  attempts: number;
  claim_token: string | null;
  claim_at: number | null;
  claim_by: string | null;
  last_heartbeat_at: number | null;
  updated_at: number;
}

export type ClaimTable = 'bots_tasks' | 'runtimes_tasks';

/**
 * `table` of any database (or transaction) that holds it, typed by the columns above alone (the
 * writes touch no other); the SQL names the real table.
 */
const update = <DB>(db: Kysely<DB>, table: ClaimTable) => (db as unknown as Kysely<{ tasks: ClaimColumns }>).updateTable(table as 'tasks');

export async function claimTask<DB>(
  db: Kysely<DB>,
  table: ClaimTable & keyof DB,
  id: string,
  c: { version: number; token: string; by: string; now: number; staleBefore: number },
): Promise<boolean> {
  const res = await update(db, table)
    .set((eb) => ({
      claim_token: c.token,
      claim_at: c.now,
      claim_by: c.by,
      attempts: eb('attempts', '+', 1),
      last_heartbeat_at: c.now,
      version: eb('version', '+', 1),
      updated_at: c.now,
    }))
    .where('id', '=', id)
    .where('version', '=', c.version)
    .where('status', 'not in', [...FINAL_STATUSES, 'working'])
    .where((eb) => eb.or([eb('claim_token', 'is', null), eb('claim_at', '<', c.staleBefore)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Keep a claim alive (its `at` moves to now). False when the token no longer holds it. */
export async function renewTaskClaim<DB>(db: Kysely<DB>, table: ClaimTable & keyof DB, id: string, token: string, now: number): Promise<boolean> {
  const res = await update(db, table)
    .set((eb) => ({ claim_at: now, version: eb('version', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .where('claim_token', '=', token)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Drop a claim (any claim when `token` is undefined). True when a claim was released. */
export async function releaseTaskClaim<DB>(
  db: Kysely<DB>,
  table: ClaimTable & keyof DB,
  id: string,
  opts: { token?: string | undefined; refund?: boolean | undefined; now: number },
): Promise<boolean> {
  let q = update(db, table)
    .set((eb) => ({
      claim_token: null,
      claim_at: null,
      claim_by: null,
      ...(opts.refund
        ? {
            attempts: eb
              .case()
              .when('attempts', '>', 0)
              .then(eb('attempts', '-', 1))
              .else(0)
              .end(),
          }
        : {}),
      version: eb('version', '+', 1),
      updated_at: opts.now,
    }))
    .where('id', '=', id)
    .where('claim_token', 'is not', null);
  if (opts.token !== undefined) q = q.where('claim_token', '=', opts.token);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
