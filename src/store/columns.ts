/**
 * A read's answer as columns, for reads of thousands of small rows (the usage tab's 2,700
 * groups): a column of numbers is one Float64Array, moved from the read thread rather than
 * copied; any other column is codes into its distinct values. The main thread then reads
 * values by index and builds no object per row (a row object per group cost it more than the
 * statement's wait: `usage.summary` held `subconscious.status` up behind it).
 */
export type Column = Float64Array | { values: readonly unknown[]; codes: Uint32Array };

export interface Columns {
  length: number;
  columns: Readonly<Record<string, Column>>;
}

/** Runs one read statement and answers in columns (`Store.readColumns`). */
export type ColumnReader = (query: { sql: string; parameters: readonly unknown[] }) => Promise<Columns>;

/** The value of `column` in row `i`. */
export function valueAt(column: Column, i: number): unknown {
  return column instanceof Float64Array ? column[i] : column.values[column.codes[i]!];
}
