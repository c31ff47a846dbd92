/**
 * The log's execution state, indexed: every tick (and the tasks world's probe before it) asks
 * whether any row's execution began and was not applied, which read the whole log before.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('subconscious_log_exec_state').ifNotExists().on('subconscious_log').column('exec_state').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('subconscious_log_exec_state').ifExists().execute();
}
