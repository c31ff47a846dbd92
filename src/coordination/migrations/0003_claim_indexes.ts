/**
 * Indexes for the Postgres claim statement (pgboss-batch.ts), which every fetch sends:
 *
 * - `coord_holds_queued`: a queue's queued jobs in claim order, so the claim reads the first
 *   `limit` of them and joins only those to pg-boss's rows (without it, every queued job of the
 *   queue was joined and sorted to start a batch of 50).
 * - `coord_holds_waiting`: whether a waiting job's turn has come; without it, a scan of every
 *   finished row kept for the retention. Waiting rows are few, so both indexes stay small.
 *
 * SQLite's `coord_holds` is never used (its jobs are `coord_jobs`); the indexes are cheap there.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX coord_holds_queued ON coord_holds (queue, priority DESC, created_at, seq) WHERE state = 'queued'`.execute(db);
  await sql`CREATE INDEX coord_holds_waiting ON coord_holds (start_after) WHERE state = 'waiting'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const name of ['coord_holds_waiting', 'coord_holds_queued']) await db.schema.dropIndex(name).ifExists().execute();
}
