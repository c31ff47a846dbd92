/**
 * The agent layer's services, by key (core/services.ts): modules ask for the runner (full-effort
 * runs), the approval store and the tool servers' health instead of importing the app's wiring.
 */
import { serviceKey } from '../core/services.js';
import type { McpServerHealth } from '../protocol/agent.js';
import type { ApprovalStore } from './approvals.js';
import type { AgentRunner } from './runner.js';

/** What is known of the MCP tool servers, without starting anything (`health`) or after pinging (`check`). */
export interface SkillsHealth {
  health(): McpServerHealth[] | Promise<McpServerHealth[]>;
  check?(): Promise<McpServerHealth[]>;
}

export const AgentRunnerKey = serviceKey<AgentRunner>('agent.runner');
export const ApprovalStoreKey = serviceKey<ApprovalStore>('agent.approvals');
export const SkillsKey = serviceKey<SkillsHealth>('agent.skills');
