/** The coordination layer's tables (see ../tables.ts); named leases use the shipped `tick_leases`. */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('coord_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('queue', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('key', 'text')
    .addColumn('grp', 'text')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retry_limit', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retry_delay_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('retry_backoff', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('start_after', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('holder', 'text')
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lapsed_from', 'text')
    .addColumn('checkpoint', 'text')
    .addColumn('output', 'text')
    .addColumn('reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('coord_jobs_next').on('coord_jobs').columns(['queue', 'state', 'priority', 'created_at']).execute();
  // The singleton key, enforced by the database too: one live job per key.
  await sql`CREATE UNIQUE INDEX coord_jobs_live_key ON coord_jobs (key) WHERE key IS NOT NULL AND state IN ('queued', 'active')`.execute(db);

  await db.schema
    .createTable('coord_holds')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('queue', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('key', 'text')
    .addColumn('grp', 'text')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retry_limit', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retry_delay_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('retry_backoff', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('start_after', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('holder', 'text')
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lapsed_from', 'text')
    .addColumn('checkpoint', 'text')
    .addColumn('reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('coord_holds_queue').on('coord_holds').columns(['queue', 'state']).execute();
  await db.schema.createIndex('coord_holds_group').on('coord_holds').columns(['grp', 'state']).execute();
  await sql`CREATE UNIQUE INDEX coord_holds_live_key ON coord_holds (key) WHERE key IS NOT NULL AND state IN ('waiting', 'queued', 'active', 'released')`.execute(
    db,
  );

  await db.schema
    .createTable('coord_workers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('stopped_at', 'bigint')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['coord_workers', 'coord_holds', 'coord_jobs']) await db.schema.dropTable(t).ifExists().execute();
}
