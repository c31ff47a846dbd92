/**
 * The database's table types. One interface per table, all gathered in `Database`.
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 * Each module appends its own tables here, next to a migration under `migrations/`.
 */

/** Namespaced key/value state: keys are `<world>:<key>` (seed 4). */
export interface InstanceStateTable {
  key: string;
  value: string; // JSON
  updated_at: number;
}

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

/** Per-world tick leases: the cross-process tick lock. */
export interface TickLeasesTable {
  world: string;
  holder: string | null;
  generation: number;
  expires_at: number;
}

export interface Database {
  instance_state: InstanceStateTable;
  model_calls: ModelCallsTable;
  tick_leases: TickLeasesTable;
}
