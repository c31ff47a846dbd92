/**
 * What a person needs to trust a row (issue 10) and what makes an execution happen once (issue 9):
 * - `tasks_ticks`: per evaluated tick, the situation report as sent and each evaluation call's raw
 *   answer and figures;
 * - log `exec_result`: an execution's outcome, written as soon as it finished (`exec_state =
 *   'executed'`), so a commit resumed after a crash applies it instead of executing again; log
 *   `detail`: the execution's answer, tool calls and figures, and the runs behind the row;
 * - escalations: the skill a skill-related one is about, and who resolved it (a person, or the
 *   world itself when that skill is healthy again) with a note.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tasks_ticks')
    .ifNotExists()
    .addColumn('tick_id', 'text', (c) => c.primaryKey())
    .addColumn('tick_at', 'bigint', (c) => c.notNull())
    .addColumn('report', 'text')
    .addColumn('report_tokens', 'integer')
    .addColumn('evaluations', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('tasks', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('input_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('duration_ms', 'integer')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tasks_ticks_at').ifNotExists().on('tasks_ticks').column('tick_at').execute();
  await db.schema.alterTable('subconscious_log').addColumn('exec_result', 'text').execute();
  await db.schema.alterTable('subconscious_log').addColumn('detail', 'text').execute();
  await db.schema.createIndex('subconscious_log_tick_at').ifNotExists().on('subconscious_log').columns(['tick_at', 'tick_id']).execute();
  await db.schema.alterTable('subconscious_escalations').addColumn('skill_server', 'text').execute();
  await db.schema.alterTable('subconscious_escalations').addColumn('resolved_by', 'text').execute();
  await db.schema.alterTable('subconscious_escalations').addColumn('resolution', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of ['resolution', 'resolved_by', 'skill_server']) await db.schema.alterTable('subconscious_escalations').dropColumn(column).execute();
  await db.schema.dropIndex('subconscious_log_tick_at').ifExists().execute();
  for (const column of ['detail', 'exec_result']) await db.schema.alterTable('subconscious_log').dropColumn(column).execute();
  await db.schema.dropTable('tasks_ticks').ifExists().execute();
}
