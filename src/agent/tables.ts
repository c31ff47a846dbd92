/**
 * The agent layer's table: the approval gate (base migrations `0003_agent`, `0005_approval_owner`,
 * `0011_approval_answers`).
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 */
import type { ApprovalState } from '../protocol/agent.js';

/** The agent runner's approval gate (issue 3): one row per writing tool call awaiting a human. */
export interface ApprovalsTable {
  id: string;
  run_id: string;
  /** `host:pid` of the process whose run waits on this row. */
  owner: string | null;
  world: string;
  /** The MCP tool's own name (not the model-facing `server__tool`). */
  tool: string;
  server: string;
  arguments: string; // JSON
  reason: string;
  created_at: number;
  /** null: an attended run, which waits for the answer. */
  expires_at: number | null;
  state: ApprovalState;
  answered_at: number | null;
  /** The tool's JSON Schema for its arguments (JSON; migration 0011). */
  input_schema: string | null;
  /** `ApprovalContext` (JSON): model, tokens spent and estimated, outside text read. */
  context: string | null;
  /** accept | edit | respond | ignore | expire */
  answer: string | null;
  /** `edit`: the arguments the call runs with (JSON). */
  answer_arguments: string | null;
  /** `respond`: the text sent back to the run. */
  answer_text: string | null;
  answered_by: string | null;
  answered_via: string | null;
}

export interface AgentTables {
  approvals: ApprovalsTable;
}
