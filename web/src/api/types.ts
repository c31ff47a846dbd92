/**
 * The shapes the page reads from the daemon. Usage types come from the server module itself
 * (type-only, erased at build) so the two cannot drift; the rest mirror the RPC docs.
 */
export type { UsageSummary, UsageDay, UsageGroup, UsageCalls, UsageCallRow } from '../../../src/server/methods/usage.js';

export interface WorldStatus {
  world: string;
  enabled: boolean;
  /** null: not checked yet. */
  provider_available: boolean | null;
  provider_unavailable_reason: string | null;
  interval_minutes: number;
  last_tick_at: number | null;
  total_ticks: number;
  consecutive_failures: number;
  halted: boolean;
  halt_reason: string | null;
  running: boolean;
  last_outcome: string | null;
  last_summary: string | null;
  last_error: string | null;
  next_tick_at: number | null;
}

export interface StatusResult {
  instances: WorldStatus[];
}

export interface Task {
  id: string;
  title: string;
  source: 'system' | 'user';
  recurrence: string;
  enabled: boolean;
  needs_tools: boolean;
  last_run_at: number | null;
  next_run_at: number | null;
  completed: boolean;
  created_at: number;
}

export type Decision = 'in_progress' | 'act' | 'noop' | 'escalate' | 'failed' | 'cancelled' | 'dismissed';

export interface LogEntry {
  id: string;
  task_id: string;
  task_title: string | null;
  tick_at: number;
  decision: Decision;
  result: string | null;
  duration_ms: number | null;
  created_at: number;
}

export type Priority = 'critical' | 'important' | 'normal';

export interface Escalation {
  id: string;
  task_id: string;
  log_id: string | null;
  title: string;
  description: string;
  priority: Priority;
  status: 'pending' | 'approved' | 'dismissed';
  skill_related: boolean;
  created_at: number;
  resolved_at: number | null;
}

export interface McpServer {
  name: string;
  status: string;
  /** Tool names (empty until the server connected once). */
  tools: string[];
  error?: string;
  last_checked_at: number | null;
  restarts?: number;
}

export interface McpServersResult {
  servers: McpServer[];
}

/** An SSE message from `/events`. */
export interface LiveEvent {
  type: string;
  at: number;
  data: Record<string, unknown>;
}
