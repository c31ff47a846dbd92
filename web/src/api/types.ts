/**
 * The shapes the page reads from the daemon: the protocol's wire types (the page imports nothing
 * else from `src/`), under the names the page uses.
 */
import type { McpServerHealth } from '../../../src/protocol/index.js';

export type {
  UsageSummary,
  UsageDay,
  UsageGroup,
  UsageCalls,
  UsageCallRow,
  InstanceStatus as WorldStatus,
  StatusResult,
  Task,
  LogEntry,
  Escalation,
  LogDecision as Decision,
  EscalationPriority as Priority,
} from '../../../src/protocol/index.js';

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
