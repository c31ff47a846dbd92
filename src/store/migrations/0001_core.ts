import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('instance_state')
    .ifNotExists()
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('model_calls')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('world', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('input_tokens', 'integer', (c) => c.notNull())
    .addColumn('output_tokens', 'integer', (c) => c.notNull())
    .addColumn('estimated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('model_calls_at').ifNotExists().on('model_calls').column('at').execute();
  await db.schema.createIndex('model_calls_world_at').ifNotExists().on('model_calls').columns(['world', 'at']).execute();

  await db.schema
    .createTable('tick_leases')
    .ifNotExists()
    .addColumn('world', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text')
    .addColumn('generation', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('tick_leases').ifExists().execute();
  await db.schema.dropTable('model_calls').ifExists().execute();
  await db.schema.dropTable('instance_state').ifExists().execute();
}
