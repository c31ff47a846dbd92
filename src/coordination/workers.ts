/**
 * The workers registry (`coord_workers`), the same on both dialects: a worker registers at start,
 * is seen again at each heartbeat (every third of a lease period) and marks itself stopped at a
 * clean stop. Alive: not stopped, seen within two lease periods, and — on this host — its process
 * still runs (a SIGKILLed worker shows dead at once).
 */
import os from 'node:os';
import type { Kysely } from 'kysely';
import { ownerIsGone } from '../core/process-identity.js';
import type { CoordinationTables } from './tables.js';
import type { WorkerInfo } from './types.js';

export class WorkersRegistry {
  constructor(
    private readonly db: Kysely<CoordinationTables>,
    private readonly id: string,
    private readonly role: WorkerInfo['role'],
    private readonly now: () => number,
    private readonly leaseMs: number,
  ) {}

  async register(): Promise<void> {
    const at = this.now();
    const row = { id: this.id, host: os.hostname(), pid: process.pid, role: this.role, started_at: at, last_seen_at: at, stopped_at: null };
    await this.db
      .insertInto('coord_workers')
      .values(row)
      .onConflict((oc) => oc.column('id').doUpdateSet({ last_seen_at: at, stopped_at: null }))
      .execute();
  }

  async seen(): Promise<void> {
    await this.db.updateTable('coord_workers').set({ last_seen_at: this.now() }).where('id', '=', this.id).execute();
  }

  async stopped(): Promise<void> {
    await this.db.updateTable('coord_workers').set({ stopped_at: this.now(), last_seen_at: this.now() }).where('id', '=', this.id).execute();
  }

  /** How many other workers are alive (as `list` says alive): whether anyone else reads what this one writes. */
  async othersAlive(): Promise<number> {
    const at = this.now();
    const rows = await this.db
      .selectFrom('coord_workers')
      .select('id')
      .where('id', '!=', this.id)
      .where('stopped_at', 'is', null)
      .where('last_seen_at', '>', at - 2 * this.leaseMs)
      .execute();
    return rows.filter((r) => !ownerIsGone(r.id)).length;
  }

  /** Forget workers not seen since `before` (they no longer show in the list anyway). */
  async prune(before: number): Promise<void> {
    await this.db.deleteFrom('coord_workers').where('last_seen_at', '<', before).execute();
  }

  /** Every worker seen in the last day, newest first; `held` counts jobs and leases per worker. */
  async list(held: Map<string, number>): Promise<WorkerInfo[]> {
    const at = this.now();
    const rows = await this.db
      .selectFrom('coord_workers')
      .selectAll()
      .where('last_seen_at', '>', at - 86_400_000)
      .orderBy('started_at', 'desc')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      host: r.host,
      pid: Number(r.pid),
      role: r.role === 'worker' ? 'worker' : 'face',
      startedAt: Number(r.started_at),
      lastSeenAt: Number(r.last_seen_at),
      jobsHeld: held.get(r.id) ?? 0,
      alive: r.stopped_at === null && Number(r.last_seen_at) > at - 2 * this.leaseMs && !ownerIsGone(r.id),
    }));
  }

  /** Leases held per worker (live ones only). */
  async leasesHeld(): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('tick_leases')
      .select(['holder', (eb) => eb.fn.countAll<number>().as('n')])
      .where('holder', 'is not', null)
      .where('expires_at', '>', this.now())
      .groupBy('holder')
      .execute();
    return new Map(rows.map((r) => [r.holder!, Number(r.n)]));
  }
}
