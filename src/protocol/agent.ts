/**
 * The agent layer's face: the approval gate (list, approve, deny) and the MCP tool servers'
 * health (the Skills tab, seed 1's "check connected skills" task).
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

export const APPROVAL_STATES = ['pending', 'approved', 'denied', 'expired'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

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
  'approvals.changed': { id: string; run_id: string; world: string; tool: string; server: string; state: ApprovalState };
  'mcp.changed': { server: string; status: McpServerStatus; error?: string; restarts: number; tools: number };
};

const id = z.string().min(1, 'id is required');

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
    'approvals.approve': method(z.strictObject({ id }), 'Approve a pending tool call: it runs once. Twice, or after expiry, is a conflict.').returns<{
      approval: Approval;
    }>(),
    'approvals.deny': method(z.strictObject({ id }), 'Deny a pending tool call: it never runs and the model is told so.').returns<{ approval: Approval }>(),
    'mcp.servers': method(
      z.strictObject({ check: z.boolean().optional() }),
      'Health of each MCP tool server (status, tools, last error); `check: true` pings and starts them first.',
    ).returns<{ servers: McpServerHealth[] }>(),
  },
  events: ['agent.run', 'approvals.changed', 'mcp.changed'],
});
