/**
 * A typed view of the tables one layer or module owns (DESIGN.md "Layers": a module never gets
 * the whole database). The connection is the same; only the type changes.
 *
 *   const db = tablesView<MemoryTables>(store.db);   // Kysely<MemoryTables>
 */
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any store connection, whatever it was typed as
export function tablesView<T extends object>(db: Kysely<any>): Kysely<T> {
  return db as Kysely<T>;
}
