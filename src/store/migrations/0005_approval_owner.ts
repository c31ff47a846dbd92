/**
 * Approvals record the process whose run waits on them (`host:pid`), so recovery in another
 * process (a CLI command, a second daemon) never expires an approval a live process waits on.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('approvals').addColumn('owner', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('approvals').dropColumn('owner').execute();
}
