/**
 * Zero calls when nothing changed (issue 10): a task remembers the fingerprint of the inputs its
 * last "nothing new" was decided on, and when. A tick whose fingerprint for it is the same skips
 * it (no call, no row) until the safety net (`reevaluate_unchanged_after_minutes`) runs out.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').addColumn('noop_fingerprint', 'text').execute();
  await db.schema.alterTable('subconscious_tasks').addColumn('noop_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').dropColumn('noop_at').execute();
  await db.schema.alterTable('subconscious_tasks').dropColumn('noop_fingerprint').execute();
}
