/**
 * A log row that starts executing records the process running it (`host:pid`), so a restarted
 * daemon on the same host fails an execution whose process died at once, instead of waiting out
 * every cap that could still have ended it.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_log').addColumn('exec_owner', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_log').dropColumn('exec_owner').execute();
}
