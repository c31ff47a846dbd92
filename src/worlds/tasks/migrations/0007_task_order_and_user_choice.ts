/**
 * HEARTBEAT.md tasks keep their line's position (`origin_order`) so lists follow the file, and a
 * task the user switched off remembers it (`user_disabled`), so its line leaving and coming back
 * does not switch it on again behind their back.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').addColumn('origin_order', 'integer').execute();
  await db.schema
    .alterTable('subconscious_tasks')
    .addColumn('user_disabled', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Until now a task could only be off because the user said so or because its line left.
  await sql`update subconscious_tasks set user_disabled = 1 where enabled = 0 and origin_present = 1`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').dropColumn('user_disabled').execute();
  await db.schema.alterTable('subconscious_tasks').dropColumn('origin_order').execute();
}
