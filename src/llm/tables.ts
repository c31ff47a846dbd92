/**
 * The model layer's tables: the ledger (base migration `0001_core`) and what `auto` learned
 * about each endpoint's structured output (`0012_model_structured_output`).
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 */
import type { ColumnType, Generated } from 'kysely';

/** The model-call ledger: every call through `llm/` is one row, written before the call. */
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
  /** `pending` (the call is being made), `done`, or `interrupted` (its process died mid-call). Migration 0010. */
  state: Generated<string>;
  /** The process making the call (`host:pid:tag`, core/process-identity.ts). */
  owner: ColumnType<string | null, string | null | undefined, string | null>;
  finished_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** What `structured_output = "auto"` learned per endpoint (`baseUrl|model`). Migration 0011. */
export interface ModelStructuredOutputTable {
  endpoint: string;
  /** `json_object` or `off`: the format the endpoint takes. */
  mode: string;
  learned_at: number;
  reason: string;
}

export interface LedgerTables {
  model_calls: ModelCallsTable;
  model_structured_output: ModelStructuredOutputTable;
}
