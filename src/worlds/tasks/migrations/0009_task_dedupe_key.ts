/**
 * The duplicate-task refusal moves into the database (issue 9): `dedupe_key` (see dedupe.ts) is
 * unique among user tasks not completed. Duplicates an older version let in (a batch of identical
 * adds) are kept, the oldest holding the key and the others a key of their own, so nothing is lost.
 */
import { sql, type Kysely } from 'kysely';
import { dedupeKey } from '../dedupe.js';

interface Row {
  id: string;
  title: string;
  recurrence: string;
  needs_tools: number;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subconscious_tasks').addColumn('dedupe_key', 'text').execute();
  const rows =
    await sql<Row>`select id, title, recurrence, needs_tools from subconscious_tasks where source = 'user' and completed = 0 order by created_at, id`.execute(
      db,
    );
  const taken = new Set<string>();
  for (const r of rows.rows) {
    let key = dedupeKey(r.title, r.recurrence, Number(r.needs_tools) === 1);
    if (taken.has(key)) key = `duplicate:${r.id}`;
    taken.add(key);
    await sql`update subconscious_tasks set dedupe_key = ${key} where id = ${r.id}`.execute(db);
  }
  await sql`create unique index subconscious_tasks_dedupe on subconscious_tasks (dedupe_key) where completed = 0`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists subconscious_tasks_dedupe`.execute(db);
  await db.schema.alterTable('subconscious_tasks').dropColumn('dedupe_key').execute();
}
