/**
 * The tick lock: the coordinator's named lease, named after the world, so it also works across
 * processes (several workers on one Postgres). It has a short TTL and is renewed while the tick
 * runs; a holder that died (SIGKILL) stops renewing and its lease lapses; on this host a lease
 * whose holder process is gone is taken at once. A quiet tick costs one conditional UPDATE to
 * take it and one to release it (coordination/leases.ts).
 */
import type { Lease, LeaseProvider } from '../coordination/index.js';

export const LEASE_TTL_MS = 120_000;

export class TickLease {
  private held: Lease | null = null;

  constructor(
    private readonly leases: LeaseProvider,
    private readonly world: string,
    private readonly ttlMs = LEASE_TTL_MS,
  ) {}

  /** Take the lease if free, lapsed, ours, or left by a dead local process; its generation, or null. */
  async acquire(): Promise<{ generation: number } | null> {
    this.held = await this.leases.lease(this.world, this.ttlMs);
    return this.held ? { generation: this.held.generation } : null;
  }

  /** Extend the lease; false when it was lost (another holder took it, or took and left it). */
  renew(): Promise<boolean> {
    return this.held ? this.held.renew() : Promise.resolve(false);
  }

  async release(): Promise<void> {
    const held = this.held;
    this.held = null;
    await held?.release();
  }

  /** Who holds it now (for a clear "skipped" message), or null. */
  currentHolder(): Promise<string | null> {
    return this.leases.leaseHolder(this.world);
  }
}
