/**
 * The shapes the page reads from the daemon: the protocol's wire types (the page imports nothing
 * else from `src/`), under the names the page uses.
 */
import type { McpServerHealth, ProductEvents, WireEvent } from '../../../src/protocol/index.js';

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

/** An SSE message from `/events`: one member per product event, so `e.type` narrows `e.data`. */
export type LiveEvent = WireEvent<ProductEvents>;
