/**
 * Write rights become a person's explicit choice (issue 9). Until now a user task's write intent
 * was guessed from its title when nobody gave it, and nothing recorded whether a person had. So
 * every user task holding write rights is marked `older_version`: the page asks the person to
 * confirm or drop each one, and until they do it asks before every write. HEARTBEAT.md tasks are
 * read-only unless their line says `- [write] …`: their guessed rights go (the next import sets
 * them again from the marker).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('subconscious_tasks')
    .addColumn('write_choice', 'text', (c) => c.notNull().defaultTo('none'))
    .execute();
  await sql`update subconscious_tasks set write_choice = 'older_version' where source = 'user' and needs_tools = 1`.execute(db);
  await sql`update subconscious_tasks set needs_tools = 0 where origin = 'heartbeat_md'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').dropColumn('write_choice').execute();
}
