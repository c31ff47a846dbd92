/**
 * Removing a task is a soft delete with undo (issue 10 §3): `removed_at` marks it removed (kept,
 * hidden, never evaluated) until `subconscious.tasks_restore` brings it back. A removed task gives
 * up its `dedupe_key`, so the same wording may be added again meanwhile.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').addColumn('removed_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').dropColumn('removed_at').execute();
}
