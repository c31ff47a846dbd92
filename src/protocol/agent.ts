/**
 * The agent layer's face: the approval gate (list, approve, deny) and the MCP tool servers'
 * health (the Skills tab, seed 1's "check connected skills" task).
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

export const APPROVAL_STATES = ['pending', 'approved', 'denied', 'expired'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

/**
 * The four answers a person gives an approval (issue 23, as LangGraph's Agent Inbox names them):
 * `accept` runs the call as shown, `edit` runs it with changed arguments (checked against the
 * tool's schema), `respond` does not run it and sends the person's text back to the run, which
 * continues with it, `ignore` does not run it. `expire`: nobody answered in time.
 */
export const APPROVAL_ANSWERS = ['accept', 'edit', 'respond', 'ignore'] as const;
export type ApprovalAnswerKind = (typeof APPROVAL_ANSWERS)[number];
/** The face an answer came through (the page, the CLI, an RPC client, the MCP face, or the engine itself). */
export const ANSWER_VIAS = ['page', 'cli', 'rpc', 'mcp', 'subconscious'] as const;
export type AnswerVia = (typeof ANSWER_VIAS)[number];

/** Outside text the run had read when it asked: what and a short excerpt (data, never instructions). */
export type ReadItem = { what: string; excerpt: string };

/** What a person needs to decide, beside the call itself. */
export type ApprovalContext = {
  /** The model the run uses. */
  model: string | null;
  /** Tokens the run's model calls used so far (the ledger's figures). */
  spent: { calls: number; input_tokens: number; output_tokens: number };
  /** Estimated tokens for the rest of the run after this call (one more model step at the last step's size). */
  estimate: { input_tokens: number; output_tokens: number };
  read: ReadItem[];
};

/** How an approval was answered (null fields: not answered, or the answer had none). */
export type ApprovalAnswerRecord = {
  kind: ApprovalAnswerKind | 'expire';
  /** `edit`: the arguments the call ran with. */
  arguments: unknown;
  /** `respond`: the text sent back to the run. */
  text: string | null;
  by: string | null;
  via: AnswerVia | null;
};

export type Approval = {
  id: string;
  run_id: string;
  world: string;
  tool: string;
  server: string;
  arguments: unknown;
  reason: string;
  created_at: number;
  /** null: an attended run, which waits for the answer. */
  expires_at: number | null;
  state: ApprovalState;
  answered_at: number | null;
  /** The tool's JSON Schema for its arguments (null: not known, older rows). */
  input_schema: Record<string, unknown> | null;
  context: ApprovalContext | null;
  /** How it was answered (null: pending, or an older row). */
  answer: ApprovalAnswerRecord | null;
};

export type McpServerStatus = 'connected' | 'disconnected' | 'error' | 'starting';

export type McpServerHealth = {
  name: string;
  status: McpServerStatus;
  /** Tool names the server offers (empty until it connected once). */
  tools: string[];
  error?: string;
  /** Last time the server was known to answer (connect, list, call or ping). */
  last_checked_at: number | null;
  /** Start attempts after the first (after it died or failed to start). */
  restarts: number;
  /** The child process (stdio servers while running). */
  pid: number | null;
};

export type AgentEvents = {
  /** One event of a full-effort run (text delta, tool call, approval, step, settle). */
  'agent.run': { run_id: string; world: string; purpose: string; event: string; [detail: string]: unknown };
  'approvals.changed': {
    id: string;
    run_id: string;
    world: string;
    tool: string;
    server: string;
    state: ApprovalState;
    /** How it was answered, once it was. */
    answer?: ApprovalAnswerRecord['kind'];
    by?: string | null;
    via?: AnswerVia | null;
  };
  'mcp.changed': { server: string; status: McpServerStatus; error?: string; restarts: number; tools: number };
};

const id = z.string().min(1, 'id is required');
/** Who answered (a person's name, or "you" by default) and through which face. */
export const answeredByParams = {
  by: z.string().trim().min(1).max(80, 'at most 80 characters').optional(),
  via: z.enum(ANSWER_VIAS).optional(),
};
export const approvalAnswerParams = z
  .strictObject({
    id,
    answer: z.enum(APPROVAL_ANSWERS),
    /** `edit`: the changed arguments (an object, checked against the tool's schema). */
    arguments: z.record(z.string(), z.unknown()).optional(),
    /** `respond`: the text for the run. */
    text: z.string().trim().min(1, 'must not be empty').max(4000, 'at most 4000 characters').optional(),
    ...answeredByParams,
  })
  .refine((p) => p.answer !== 'edit' || p.arguments !== undefined, { path: ['arguments'], message: 'edit needs the changed arguments' })
  .refine((p) => p.answer !== 'respond' || p.text !== undefined, { path: ['text'], message: 'respond needs the text to send back' })
  .refine((p) => p.answer === 'edit' || p.arguments === undefined, { path: ['arguments'], message: 'only edit takes arguments' })
  .refine((p) => p.answer === 'respond' || p.text === undefined, { path: ['text'], message: 'only respond takes text' });

export const agentContract = defineContract<AgentEvents>()({
  methods: {
    'approvals.list': method(
      z.strictObject({
        state: z.enum(APPROVAL_STATES).optional(),
        run_id: z.string().min(1).optional(),
        limit: z.number().int().min(1).max(1000).optional(),
      }),
      'List tool-call approvals, newest first (filter by state or run).',
    ).returns<{ approvals: Approval[] }>(),
    'approvals.answer': method(
      approvalAnswerParams,
      'Answer a pending tool call: {id, answer: accept | edit (arguments: checked against the tool’s schema; the call runs with them) | respond (text: the call does not run, the run continues with the text) | ignore, by?, via?}. Twice, or after expiry, is a conflict.',
    ).returns<{ approval: Approval }>(),
    'approvals.approve': method(
      z.strictObject({ id, ...answeredByParams }),
      'Approve a pending tool call (the same as approvals.answer with accept): it runs once. Twice, or after expiry, is a conflict.',
    ).returns<{
      approval: Approval;
    }>(),
    'approvals.deny': method(
      z.strictObject({ id, ...answeredByParams }),
      'Deny a pending tool call (the same as approvals.answer with ignore): it never runs and the model is told so.',
    ).returns<{ approval: Approval }>(),
    'mcp.servers': method(
      z.strictObject({ check: z.boolean().optional() }),
      'Health of each MCP tool server (status, tools, last error); `check: true` pings and starts them first.',
    ).returns<{ servers: McpServerHealth[] }>(),
  },
  events: ['agent.run', 'approvals.changed', 'mcp.changed'],
});
