/**
 * The tick lock, held in the store so it also works across processes (several workers on one
 * Postgres). A lease has a short TTL and is renewed while the tick runs; a holder that died
 * (SIGKILL) stops renewing and its lease lapses. On this host, a lease whose holder process is
 * gone is reclaimed at once, so a restarted daemon resumes without waiting for the TTL.
 */
import os from 'node:os';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';

export const LEASE_TTL_MS = 120_000;

export interface LeaseHolder {
  host: string;
  pid: number;
  /** Distinguishes instances in one process. */
  tag: string;
}

export function holderId(h: LeaseHolder): string {
  return `${h.host}:${h.pid}:${h.tag}`;
}

export function thisProcess(tag: string): LeaseHolder {
  return { host: os.hostname(), pid: process.pid, tag };
}

function parseHolder(id: string | null): LeaseHolder | null {
  if (!id) return null;
  const parts = id.split(':');
  const pid = Number(parts[1]);
  if (parts.length < 3 || !Number.isInteger(pid)) return null;
  return { host: parts[0] ?? '', pid, tag: parts.slice(2).join(':') };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when the lease's holder is a process on this host that no longer exists. */
function holderIsDeadLocal(id: string | null): boolean {
  const h = parseHolder(id);
  return !!h && h.host === os.hostname() && h.pid !== process.pid && !processAlive(h.pid);
}

export class TickLease {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly world: string,
    private readonly holder: string,
    private readonly now: () => number,
    private readonly ttlMs = LEASE_TTL_MS,
  ) {}

  /** Take the lease if free, expired, ours, or left by a dead local process. Returns the new generation, or null. */
  async acquire(): Promise<{ generation: number } | null> {
    const now = this.now();
    return this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('tick_leases')
        .values({ world: this.world, holder: null, generation: 0, expires_at: 0 })
        .onConflict((oc) => oc.column('world').doNothing())
        .execute();
      const row = await trx.selectFrom('tick_leases').selectAll().where('world', '=', this.world).executeTakeFirstOrThrow();
      const free = row.holder === null || row.expires_at <= now || row.holder === this.holder || holderIsDeadLocal(row.holder);
      if (!free) return null;
      // Compare-and-set on what we read, so two processes racing here cannot both win.
      const res = await trx
        .updateTable('tick_leases')
        .set({ holder: this.holder, expires_at: now + this.ttlMs, generation: row.generation + 1 })
        .where('world', '=', this.world)
        .where('generation', '=', row.generation)
        .executeTakeFirst();
      return Number(res.numUpdatedRows) === 1 ? { generation: row.generation + 1 } : null;
    });
  }

  /** Extend the lease; false when it was lost (another holder took it after expiry). */
  async renew(): Promise<boolean> {
    const res = await this.db
      .updateTable('tick_leases')
      .set({ expires_at: this.now() + this.ttlMs })
      .where('world', '=', this.world)
      .where('holder', '=', this.holder)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async release(): Promise<void> {
    await this.db
      .updateTable('tick_leases')
      .set({ holder: null, expires_at: 0 })
      .where('world', '=', this.world)
      .where('holder', '=', this.holder)
      .execute();
  }

  /** Who holds it now (for a clear "skipped" message), or null. */
  async currentHolder(): Promise<string | null> {
    const row = await this.db.selectFrom('tick_leases').select(['holder', 'expires_at']).where('world', '=', this.world).executeTakeFirst();
    return row && row.holder && row.expires_at > this.now() ? row.holder : null;
  }
}
