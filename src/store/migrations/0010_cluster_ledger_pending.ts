/**
 * The ledger is written before each model call (issue 17 §4): a row starts `pending` with the
 * process that makes the call (`owner`) and is finished after it (`done`); a pending row whose
 * owner died is closed `interrupted` at the next start. Every existing row was a finished call:
 * it becomes `done` with its figures untouched.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('model_calls')
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('done'))
    .execute();
  await db.schema.alterTable('model_calls').addColumn('owner', 'text').execute();
  await db.schema.alterTable('model_calls').addColumn('finished_at', 'bigint').execute();
  // Only unfinished rows are ever looked up by state: a partial index stays tiny.
  await sql`CREATE INDEX IF NOT EXISTS model_calls_unfinished ON model_calls (owner) WHERE state = 'pending'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS model_calls_unfinished`.execute(db);
  for (const column of ['finished_at', 'owner', 'state']) await db.schema.alterTable('model_calls').dropColumn(column).execute();
}
