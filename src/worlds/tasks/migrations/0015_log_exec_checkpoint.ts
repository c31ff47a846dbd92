/**
 * An execution's step-level checkpoint (issue 17), kept with its log row while it runs: the runs
 * it started, the tool steps that returned, the writing calls begun and not returned, and the
 * final answer once it arrived — so a take-over continues it instead of failing it as interrupted.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_log').addColumn('exec_checkpoint', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_log').dropColumn('exec_checkpoint').execute();
}
