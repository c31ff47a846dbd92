/**
 * JSON-RPC methods of the agent layer: the approval gate (list, approve, deny) and the MCP
 * servers' health (the "Fix in Skills" page and seed 1's "check connected skills" task).
 * Answering an approval emits `approvals.changed` on the event bus (ApprovalStore does it).
 */
import { z } from 'zod';
import { defineMethod, type RpcMethod } from '../core/index.js';
import { APPROVAL_STATES, type ApprovalStore } from './approvals.js';
import type { McpManager } from './mcp.js';

const idParams = z.object({ id: z.string().min(1, 'id is required') }).strict();

export function agentRpcMethods(deps: { approvals: ApprovalStore; mcp: McpManager }): RpcMethod[] {
  const { approvals, mcp } = deps;
  return [
    defineMethod(
      'approvals.list',
      z
        .object({
          state: z.enum(APPROVAL_STATES).optional(),
          run_id: z.string().min(1).optional(),
          limit: z.number().int().min(1).max(1000).optional(),
        })
        .strict(),
      'List tool-call approvals, newest first (filter by state or run).',
      async (p) => ({ approvals: await approvals.list({ state: p.state, runId: p.run_id, limit: p.limit }) }),
    ),
    defineMethod('approvals.approve', idParams, 'Approve a pending tool call: it runs once. Twice, or after expiry, is a conflict.', async (p) => ({
      approval: await approvals.approve(p.id),
    })),
    defineMethod('approvals.deny', idParams, 'Deny a pending tool call: it never runs and the model is told so.', async (p) => ({
      approval: await approvals.deny(p.id),
    })),
    defineMethod(
      'mcp.servers',
      z.object({ check: z.boolean().optional() }).strict(),
      'Health of each MCP tool server (status, tools, last error); `check: true` pings and starts them first.',
      async (p) => ({ servers: p.check ? await mcp.check() : mcp.health() }),
    ),
  ];
}
