/**
 * Approvals carry what a person needs to decide (issue 23): the tool's input schema (to read and
 * edit the arguments), the run's context (model, cost so far and estimate, outside text it read)
 * and how they answered (accept / edit with the edited arguments / respond with text / ignore),
 * by whom and through which face.
 */
import type { Kysely } from 'kysely';

const COLUMNS = ['input_schema', 'context', 'answer', 'answer_arguments', 'answer_text', 'answered_by', 'answered_via'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const c of COLUMNS) await db.schema.alterTable('approvals').addColumn(c, 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const c of COLUMNS) await db.schema.alterTable('approvals').dropColumn(c).execute();
}
