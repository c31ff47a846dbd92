/**
 * The agent layer's RPC handlers (`protocol/agent.ts`): the approval gate (list, answer — with approve and deny as its older names)
 * and the MCP servers' health. Answering an approval emits `approvals.changed` (ApprovalStore does it).
 */
import type { Handlers } from '../protocol/contract.js';
import type { agentContract } from '../protocol/agent.js';
import type { ApprovalStore } from './approvals.js';
import type { McpManager } from './mcp.js';

export function agentRpcHandlers(deps: { approvals: ApprovalStore; mcp: McpManager }): Handlers<(typeof agentContract)['methods']> {
  const { approvals, mcp } = deps;
  return {
    'approvals.list': async (p) => ({ approvals: await approvals.list({ state: p.state, runId: p.run_id, limit: p.limit }) }),
    'approvals.answer': async ({ id, ...answer }) => ({ approval: await approvals.answer(id, answer) }),
    // The older names: accept and ignore.
    'approvals.approve': async (p) => ({ approval: await approvals.approve(p.id, { by: p.by, via: p.via }) }),
    'approvals.deny': async (p) => ({ approval: await approvals.deny(p.id, { by: p.by, via: p.via }) }),
    'mcp.servers': async (p) => ({ servers: p.check ? await mcp.check() : mcp.health() }),
  };
}
