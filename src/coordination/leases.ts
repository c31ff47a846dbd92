/**
 * Named exclusive leases (a world's tick lock) on `tick_leases` (name in `world`), the same on both dialects: one
 * conditional UPDATE takes a free, lapsed or own lease (a quiet tick stays cheap); a lease left by
 * a process on this host that is gone is taken at once by compare-and-set on the dead holder.
 * Each acquisition raises `generation`, so a stale holder's renewal (and writes) can be refused.
 */
import { sql, type Kysely } from 'kysely';
import { ownerIsGone } from '../core/process-identity.js';
import { precompile } from '../store/index.js';
import type { CoordinationTables } from './tables.js';
import type { Lease } from './types.js';

export async function takeLease(
  db: Kysely<CoordinationTables>,
  name: string,
  holder: string,
  ttlMs: number,
  now: () => number,
  held: Map<string, number>,
): Promise<Lease | null> {
  const q = leaseQueries(db);
  const take = async (onlyFrom?: string) => {
    const at = now();
    const result = onlyFrom !== undefined ? await q.takeFrom(holder, at + ttlMs, name, onlyFrom) : await q.take(holder, at + ttlMs, name, at);
    return result.rows[0];
  };
  let row = await take();
  if (!row) {
    const current = await db.selectFrom('tick_leases').select('holder').where('world', '=', name).executeTakeFirst();
    if (!current) {
      await db
        .insertInto('tick_leases')
        .values({ world: name, holder: null, generation: 0, expires_at: 0 })
        .onConflict((oc) => oc.column('world').doNothing())
        .execute();
      row = await take();
    } else if (current.holder && ownerIsGone(current.holder)) {
      row = await take(current.holder);
    }
  }
  if (!row) return null;
  const generation = Number(row.generation);
  held.set(name, generation);
  return {
    name,
    generation,
    async renew() {
      const res = await q.renew(now() + ttlMs, name, holder, generation);
      const ok = Number(res.numAffectedRows) === 1;
      if (!ok && held.get(name) === generation) held.delete(name);
      return ok;
    },
    async held() {
      const row = (await q.current(name)).rows[0];
      const ok = !!row && row.holder === holder && Number(row.generation) === generation && Number(row.expires_at) > now();
      if (!ok && held.get(name) === generation) held.delete(name);
      return ok;
    },
    async release() {
      if (held.get(name) === generation) held.delete(name);
      await q.release(name, holder, generation);
    },
  };
}

type LeaseQueries = ReturnType<typeof compileLeaseQueries>;
const compiledFor = new WeakMap<Kysely<CoordinationTables>, LeaseQueries>();

/** A quiet tick takes and releases a lease: its statements are compiled once per database. */
function leaseQueries(db: Kysely<CoordinationTables>): LeaseQueries {
  let q = compiledFor.get(db);
  if (!q) compiledFor.set(db, (q = compileLeaseQueries(db)));
  return q;
}

function compileLeaseQueries(db: Kysely<CoordinationTables>) {
  const takeWhere = (holder: string, expiresAt: number, name: string) =>
    db
      .updateTable('tick_leases')
      .set({ holder, expires_at: expiresAt, generation: sql<number>`generation + 1` })
      .where('world', '=', name)
      .returning('generation');
  return {
    /** Free, lapsed, or already ours. */
    take: precompile(db, 4, (holder: string, expiresAt: number, name: string, at: number) =>
      takeWhere(holder, expiresAt, name).where((eb) => eb.or([eb('holder', 'is', null), eb('expires_at', '<=', at), eb('holder', '=', holder)])),
    ),
    /** Compare-and-set on a dead holder. */
    takeFrom: precompile(db, 4, (holder: string, expiresAt: number, name: string, from: string) =>
      takeWhere(holder, expiresAt, name).where('holder', '=', from),
    ),
    renew: precompile(db, 4, (expiresAt: number, name: string, holder: string, generation: number) =>
      db.updateTable('tick_leases').set({ expires_at: expiresAt }).where('world', '=', name).where('holder', '=', holder).where('generation', '=', generation),
    ),
    current: precompile(db, 1, (name: string) => db.selectFrom('tick_leases').select(['holder', 'generation', 'expires_at']).where('world', '=', name)),
    release: precompile(db, 3, (name: string, holder: string, generation: number) =>
      db
        .updateTable('tick_leases')
        .set({ holder: null, expires_at: 0 })
        .where('world', '=', name)
        .where('holder', '=', holder)
        .where('generation', '=', generation),
    ),
  };
}

/** Who holds a lease now (live, not lapsed), for a clear "skipped" message; null when free. */
export async function leaseHolder(db: Kysely<CoordinationTables>, name: string, now: number): Promise<string | null> {
  const row = await db.selectFrom('tick_leases').select(['holder', 'expires_at']).where('world', '=', name).executeTakeFirst();
  return row && row.holder && row.expires_at > now && !ownerIsGone(row.holder) ? row.holder : null;
}

/** What takes named leases: a coordinator, or `localLeases` for a part that runs without one. */
export interface LeaseProvider {
  lease(name: string, ttlMs?: number): Promise<Lease | null>;
  leaseHolder(name: string): Promise<string | null>;
}

/**
 * Named leases under a given holder id, without a coordinator (an engine built in a test or a
 * bench, or "another process" simulated in one): the same table and the same code.
 */
export function localLeases(db: Kysely<CoordinationTables>, holder: string, clock: { now(): number }, defaultTtlMs: number): LeaseProvider {
  const held = new Map<string, number>();
  return {
    lease: (name, ttlMs) => takeLease(db, name, holder, ttlMs ?? defaultTtlMs, () => clock.now(), held),
    leaseHolder: (name) => leaseHolder(db, name, clock.now()),
  };
}
