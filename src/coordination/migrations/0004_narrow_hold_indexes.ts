/**
 * Narrower `coord_holds` indexes. Every claim (queued → active) and every completion (active →
 * completed) changes `state`, which every index but the primary key names, so no update is HOT
 * and each one wrote an entry in every index whose predicate the new row meets. The full
 * `(queue, state)` and `(grp, state)` indexes took one at each transition, and kept an entry for
 * every finished row (a day of them, for the retention), though no statement looks finished rows
 * up by queue or group. They become partial:
 *
 * - `coord_holds_held (queue, state)`: active and released jobs (lapsed leases, this host's
 *   holders, jobs held per worker, a batch complete): as many as are held, not a day's worth.
 * - `coord_holds_failed (queue, state)`: failed and dead jobs (sizes, dead letters); rare.
 * - `coord_holds_group_live (grp, state)`: a group's live jobs (is the group free, cancel by
 *   group); jobs without a group are not in it.
 *
 * A job without a group now writes two index entries to be claimed (primary key, held) and one to
 * be completed (primary key), instead of three and three. `sizes()` and `prune()` read the table
 * as before (a sequential scan; the maintenance loop and the page, not the hot path).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const name of ['coord_holds_queue', 'coord_holds_group']) await db.schema.dropIndex(name).ifExists().execute();
  await sql`CREATE INDEX coord_holds_held ON coord_holds (queue, state) WHERE state IN ('active', 'released')`.execute(db);
  await sql`CREATE INDEX coord_holds_failed ON coord_holds (queue, state) WHERE state IN ('failed', 'dead')`.execute(db);
  await sql`CREATE INDEX coord_holds_group_live ON coord_holds (grp, state)
    WHERE grp IS NOT NULL AND state IN ('waiting', 'queued', 'active', 'released')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const name of ['coord_holds_group_live', 'coord_holds_failed', 'coord_holds_held']) await db.schema.dropIndex(name).ifExists().execute();
  await db.schema.createIndex('coord_holds_queue').on('coord_holds').columns(['queue', 'state']).execute();
  await db.schema.createIndex('coord_holds_group').on('coord_holds').columns(['grp', 'state']).execute();
}
