/**
 * What `structured_output = "auto"` learned per model endpoint (issue 19): the server refused a
 * `response_format`, so the endpoint uses a narrower one. Kept so a restart does not probe again
 * (and every worker on a shared store knows it); shown in `subconscious.status`.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('model_structured_output')
    .ifNotExists()
    .addColumn('endpoint', 'text', (c) => c.primaryKey())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('learned_at', 'bigint', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('model_structured_output').ifExists().execute();
}
