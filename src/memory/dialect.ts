/**
 * Which SQL dialect a connection speaks, for a module that got only its `Kysely` view (the
 * module context carries no dialect name). Recall needs it: FTS5 on SQLite, `tsvector` on
 * Postgres. The compiled text of a parameterised query tells, without touching the database:
 * Postgres numbers its parameters (`$1`), SQLite writes `?`.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../store/index.js';
import type { MemoryTables } from './tables.js';

export function dialectOf(db: Kysely<MemoryTables>): DialectName {
  const compiled = db.selectFrom('memory_state').select('seq').where('id', '=', 1).compile();
  return compiled.sql.includes('$1') ? 'postgres' : 'sqlite';
}
