/**
 * The coordination layer's own tables (same database file / schema as everything else).
 * Timestamps are epoch milliseconds from the injected clock, JSON is text, booleans are 0/1.
 *
 * - `coord_jobs`: the SQLite implementation's jobs (pg-boss keeps Postgres jobs in its schema).
 * - `coord_holds`: Postgres only — who holds a pg-boss job under which lease, its checkpoint, and
 *   a group's waiting jobs (pg-boss gets one job per group at a time, see pgboss.ts).
 * - `tick_leases` (shipped in the store's `0001_core`): named exclusive leases, both dialects; its
 *   `world` column is the lease's name (a world's tick lease is named after the world, as before).
 * - `coord_workers`: the workers registry, both dialects.
 */
export interface CoordJobsTable {
  id: string;
  queue: string;
  payload: string;
  key: string | null;
  grp: string | null;
  priority: number;
  state: string;
  attempt: number;
  /** Failures retried so far (take-overs do not count against `retry_limit`). */
  retries: number;
  retry_limit: number;
  retry_delay_ms: number;
  retry_backoff: number;
  start_after: number;
  holder: string | null;
  lease_until: number;
  /** The holder whose lease lapsed (or whose process is gone): the next claim names it. */
  lapsed_from: string | null;
  checkpoint: string | null;
  output: string | null;
  reason: string | null;
  created_at: number;
  /** Insertion order: ties on `created_at` (one clock tick) still start oldest first. */
  seq: number;
  updated_at: number;
}

export interface CoordHoldsTable {
  /** pg-boss's job id (the same uuid). */
  job_id: string;
  queue: string;
  /** The payload (also pg-boss's `data`): a waiting job is not in pg-boss yet, a take-over reads no pg-boss row. */
  payload: string;
  key: string | null;
  grp: string | null;
  priority: number;
  /**
   * `waiting`: not in pg-boss yet (its group has a live job, or its `start_after` is ahead);
   * `queued`: in pg-boss, not fetched; `active`: held under `lease_until`; `released`: active in
   * pg-boss but held by no one (a retry, a clean stop), claimable from `start_after`; then
   * `completed` / `failed` / `cancelled` / `dead`.
   */
  state: string;
  attempt: number;
  retries: number;
  retry_limit: number;
  retry_delay_ms: number;
  retry_backoff: number;
  start_after: number;
  holder: string | null;
  lease_until: number;
  lapsed_from: string | null;
  checkpoint: string | null;
  reason: string | null;
  created_at: number;
  seq: number;
  /** When it finished (completed / failed / cancelled / dead): retention prunes from here. */
  settled_at: number | null;
}

export interface TickLeasesTable {
  /** The lease's name. */
  world: string;
  holder: string | null;
  generation: number;
  expires_at: number;
}

export interface CoordWorkersTable {
  id: string;
  host: string;
  pid: number;
  role: string;
  started_at: number;
  last_seen_at: number;
  stopped_at: number | null;
}

export interface CoordinationTables {
  coord_jobs: CoordJobsTable;
  coord_holds: CoordHoldsTable;
  tick_leases: TickLeasesTable;
  coord_workers: CoordWorkersTable;
}
