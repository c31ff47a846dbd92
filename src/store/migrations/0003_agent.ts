/**
 * The agent runner's approval gate (issue 3): one durable row per writing tool call that
 * needed a human answer. `expires_at` is null for attended runs (they wait for the answer).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('approvals')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('world', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('arguments', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('answered_at', 'bigint')
    .execute();
  await db.schema.createIndex('approvals_state_created').ifNotExists().on('approvals').columns(['state', 'created_at']).execute();
  await db.schema.createIndex('approvals_run').ifNotExists().on('approvals').column('run_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('approvals').ifExists().execute();
}
