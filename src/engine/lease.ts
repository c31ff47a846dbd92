/**
 * The tick lock, held in the store so it also works across processes (several workers on one
 * Postgres). A lease has a short TTL and is renewed while the tick runs; a holder that died
 * (SIGKILL) stops renewing and its lease lapses. On this host, a lease whose holder process is
 * gone is reclaimed at once, so a restarted daemon resumes without waiting for the TTL.
 */
import { sql, type Kysely } from 'kysely';
import { ownerIsGone } from '../core/process-identity.js';
import type { EngineTables } from './tables.js';

export const LEASE_TTL_MS = 120_000;

export class TickLease {
  /** The generation this holder took; a renewal of any other generation fails. */
  private held: number | null = null;

  constructor(
    private readonly db: Kysely<EngineTables>,
    private readonly world: string,
    private readonly holder: string,
    private readonly now: () => number,
    private readonly ttlMs = LEASE_TTL_MS,
  ) {}

  /**
   * Take the lease if free, expired, ours, or left by a dead local process. Returns the new
   * generation, or null. The common case is one conditional UPDATE (a quiet tick must be cheap).
   */
  async acquire(): Promise<{ generation: number } | null> {
    const now = this.now();
    const take = (onlyFrom?: string) =>
      this.db
        .updateTable('tick_leases')
        .set({ holder: this.holder, expires_at: now + this.ttlMs, generation: sql<number>`generation + 1` })
        .where('world', '=', this.world)
        .where((eb) =>
          onlyFrom !== undefined ? eb('holder', '=', onlyFrom) : eb.or([eb('holder', 'is', null), eb('expires_at', '<=', now), eb('holder', '=', this.holder)]),
        )
        .returning('generation')
        .executeTakeFirst();
    const took = (row: { generation: number | string } | undefined) => {
      if (!row) return null;
      this.held = Number(row.generation);
      return { generation: this.held };
    };
    const taken = await take();
    if (taken) return took(taken);
    const current = await this.db.selectFrom('tick_leases').select('holder').where('world', '=', this.world).executeTakeFirst();
    if (!current) {
      await this.db
        .insertInto('tick_leases')
        .values({ world: this.world, holder: null, generation: 0, expires_at: 0 })
        .onConflict((oc) => oc.column('world').doNothing())
        .execute();
      return took(await take());
    }
    if (current.holder && ownerIsGone(current.holder)) {
      // Compare-and-set on the dead holder, so two restarted processes cannot both reclaim it.
      return took(await take(current.holder));
    }
    return null;
  }

  /** Extend the lease; false when it was lost (another holder took it, or took and left it). */
  async renew(): Promise<boolean> {
    if (this.held === null) return false;
    const res = await this.db
      .updateTable('tick_leases')
      .set({ expires_at: this.now() + this.ttlMs })
      .where('world', '=', this.world)
      .where('holder', '=', this.holder)
      .where('generation', '=', this.held)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async release(): Promise<void> {
    this.held = null;
    await this.db.updateTable('tick_leases').set({ holder: null, expires_at: 0 }).where('world', '=', this.world).where('holder', '=', this.holder).execute();
  }

  /** Who holds it now (for a clear "skipped" message), or null. */
  async currentHolder(): Promise<string | null> {
    const row = await this.db.selectFrom('tick_leases').select(['holder', 'expires_at']).where('world', '=', this.world).executeTakeFirst();
    return row && row.holder && row.expires_at > this.now() ? row.holder : null;
  }
}
