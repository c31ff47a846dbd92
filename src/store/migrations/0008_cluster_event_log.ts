/**
 * The bounded store of recent events (`event_log`): every event a worker emits is one row, its id
 * the SSE `id:` every `/events` connection sends, so a client that reconnects with
 * `Last-Event-ID` gets what it missed and every worker on one database sends the same ids.
 * Rows are pruned by count and age (store/event-log.ts); `id` never goes back (AUTOINCREMENT,
 * a sequence), so a pruned id is never given to another event.
 */
import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  const id = ctx.dialect === 'postgres' ? sql`id bigserial PRIMARY KEY` : sql`id integer PRIMARY KEY AUTOINCREMENT`;
  await sql`CREATE TABLE IF NOT EXISTS event_log (${id}, type text NOT NULL, payload text NOT NULL, at bigint NOT NULL)`.execute(db);
  await db.schema.createIndex('event_log_at').ifNotExists().on('event_log').column('at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('event_log').ifExists().execute();
}
