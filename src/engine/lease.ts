/**
 * The tick lock: the coordinator's named lease, named after the world, so it also works across
 * processes (several workers on one Postgres). It has a short TTL and is renewed while the tick
 * runs; a holder that died (SIGKILL) stops renewing and its lease lapses; on this host a lease
 * whose holder process is gone is taken at once. A quiet tick costs one conditional UPDATE to
 * take it, one read to check it before commit, and one UPDATE to release it
 * (coordination/leases.ts).
 */
import type { Lease, LeaseProvider } from '../coordination/index.js';

export const LEASE_TTL_MS = 120_000;

export class TickLease {
  private current: Lease | null = null;

  constructor(
    private readonly leases: LeaseProvider,
    private readonly world: string,
    private readonly ttlMs = LEASE_TTL_MS,
  ) {}

  /** Take the lease if free, lapsed, ours, or left by a dead local process; its generation, or null. */
  async acquire(): Promise<{ generation: number } | null> {
    this.current = await this.leases.lease(this.world, this.ttlMs);
    return this.current ? { generation: this.current.generation } : null;
  }

  /** Extend the lease; false when it was lost (another holder took it, or took and left it). */
  renew(): Promise<boolean> {
    return this.current ? this.current.renew() : Promise.resolve(false);
  }

  /** Still ours (a read, no write): what a quiet tick checks before it commits. */
  held(): Promise<boolean> {
    return this.current ? this.current.held() : Promise.resolve(false);
  }

  async release(): Promise<void> {
    const held = this.current;
    this.current = null;
    await held?.release();
  }

  /** Who holds it now (for a clear "skipped" message), or null. */
  currentHolder(): Promise<string | null> {
    return this.leases.leaseHolder(this.world);
  }
}
