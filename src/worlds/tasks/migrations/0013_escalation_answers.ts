/**
 * Approval cards say exactly what will run and how they were answered (issue 23): `action` is
 * the held tool call (tool, server, arguments, the tool's schema) as JSON, `context` what the run
 * used and read; `answer` accept | edit | respond | ignore with the edited arguments or the
 * text, who answered and through which face.
 */
import type { Kysely } from 'kysely';

const COLUMNS = ['action', 'context', 'answer', 'answer_arguments', 'answer_text', 'answered_by', 'answered_via'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const c of COLUMNS) await db.schema.alterTable('subconscious_escalations').addColumn(c, 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const c of COLUMNS) await db.schema.alterTable('subconscious_escalations').dropColumn(c).execute();
}
