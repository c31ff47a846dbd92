/** `coord_holds.settled_at`: when a pg-boss job finished, so retention can prune it (coord_jobs has `updated_at`). */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('coord_holds').addColumn('settled_at', 'bigint').execute();
  await db.schema.createIndex('coord_jobs_settled').on('coord_jobs').columns(['state', 'updated_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('coord_jobs_settled').ifExists().execute();
  await db.schema.alterTable('coord_holds').dropColumn('settled_at').execute();
}
