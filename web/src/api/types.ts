/**
 * The shapes the page reads from the daemon, imported type-only from the modules that produce
 * them (erased at build), so the page and the daemon cannot drift.
 */
export type { UsageSummary, UsageDay, UsageGroup, UsageCalls, UsageCallRow } from '../../../src/llm/usage-rpc.js';

export type { InstanceStatus as WorldStatus } from '../../../src/engine/types.js';
export type { StatusResult } from '../../../src/engine/rpc.js';
export type { Task, LogEntry, Escalation, LogDecision as Decision, EscalationPriority as Priority } from '../../../src/worlds/tasks/types.js';
import type { McpServerHealth } from '../../../src/agent/mcp.js';
export type McpServer = McpServerHealth;

export interface McpServersResult {
  servers: McpServer[];
}

/** An SSE message from `/events`. */
export interface LiveEvent {
  type: string;
  at: number;
  data: Record<string, unknown>;
}
