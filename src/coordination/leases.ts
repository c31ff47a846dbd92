/**
 * Named exclusive leases (a world's tick lock) on `tick_leases` (name in `world`), the same on both dialects: one
 * conditional UPDATE takes a free, lapsed or own lease (a quiet tick stays cheap); a lease left by
 * a process on this host that is gone is taken at once by compare-and-set on the dead holder.
 * Each acquisition raises `generation`, so a stale holder's renewal (and writes) can be refused.
 */
import { sql, type Kysely } from 'kysely';
import { ownerIsGone } from '../core/process-identity.js';
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
  const take = (onlyFrom?: string) => {
    const at = now();
    return db
      .updateTable('tick_leases')
      .set({ holder, expires_at: at + ttlMs, generation: sql<number>`generation + 1` })
      .where('world', '=', name)
      .where((eb) =>
        onlyFrom !== undefined ? eb('holder', '=', onlyFrom) : eb.or([eb('holder', 'is', null), eb('expires_at', '<=', at), eb('holder', '=', holder)]),
      )
      .returning('generation')
      .executeTakeFirst();
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
      const res = await db
        .updateTable('tick_leases')
        .set({ expires_at: now() + ttlMs })
        .where('world', '=', name)
        .where('holder', '=', holder)
        .where('generation', '=', generation)
        .executeTakeFirst();
      const ok = Number(res.numUpdatedRows) === 1;
      if (!ok && held.get(name) === generation) held.delete(name);
      return ok;
    },
    async release() {
      if (held.get(name) === generation) held.delete(name);
      await db
        .updateTable('tick_leases')
        .set({ holder: null, expires_at: 0 })
        .where('world', '=', name)
        .where('holder', '=', holder)
        .where('generation', '=', generation)
        .execute();
    },
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
