/**
 * The model layer's table: the ledger. Created by the store's base migration `0001_core`.
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 */
/** The model-call ledger: every call through `llm/` is one row. */
export interface ModelCallsTable {
  id: string;
  at: number;
  world: string;
  purpose: string;
  role: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  /** 1 when the server gave no usage figures and tokens were estimated (4 chars/token). */
  estimated: number;
  latency_ms: number;
  /** `ok` or the error kind (`rate_limit`, `rate_cap`, `timeout`, …). */
  outcome: string;
  error: string | null;
}

export interface LedgerTables {
  model_calls: ModelCallsTable;
}
