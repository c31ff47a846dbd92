/** The table behind `FindingStore`: what `structured_output = "auto"` learned per endpoint. */
import type { Kysely } from 'kysely';
import type { FindingStore } from './output-guard.js';
import type { LedgerTables } from './tables.js';
import type { StructuredFinding } from './types.js';

const MODES = new Set<string>(['json_schema', 'json_object', 'off']);

export function findingTable(db: Kysely<LedgerTables>): FindingStore {
  return {
    async load() {
      const rows = await db.selectFrom('model_structured_output').selectAll().execute();
      return rows
        .filter((r) => MODES.has(r.mode))
        .map((r) => ({ endpoint: r.endpoint, finding: { mode: r.mode as StructuredFinding['mode'], learned_at: Number(r.learned_at), reason: r.reason } }));
    },
    async save(endpoint, finding) {
      const row = { endpoint, mode: finding.mode, learned_at: finding.learned_at, reason: finding.reason };
      await db
        .insertInto('model_structured_output')
        .values(row)
        .onConflict((oc) => oc.column('endpoint').doUpdateSet({ mode: row.mode, learned_at: row.learned_at, reason: row.reason }))
        .execute();
    },
  };
}
