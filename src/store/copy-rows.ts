/**
 * Copy a table's rows from one store into another (`simulate`'s scratch store), by named
 * columns so a source with columns this version does not know still copies, in chunks (SQLite
 * caps the parameters of one statement). Returns the rows copied.
 */
import type { Kysely } from 'kysely';

export async function copyRows(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any module's table: the caller names it and its columns
  from: Kysely<any>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
  to: Kysely<any>,
  table: string,
  columns: readonly string[],
  chunk = Math.max(1, Math.floor(500 / columns.length)),
): Promise<number> {
  const rows = (await from.selectFrom(table).select(columns).execute()) as Record<string, unknown>[];
  for (let i = 0; i < rows.length; i += chunk)
    await to
      .insertInto(table)
      .values(rows.slice(i, i + chunk))
      .execute();
  return rows.length;
}
