/**
 * The tasks world's domain types (seed 1) and the small interfaces it needs from its
 * neighbours: the agent runner (`TaskAgent`), the MCP manager (`SkillsHealth`) and memory
 * (`MemorySource`). The real `AgentRunner` and `McpManager` satisfy them structurally.
 */

export type {
  TaskSource,
  TaskOrigin,
  ModelDecision,
  LogDecision,
  ExecState,
  ExecMode,
  EscalationPriority,
  EscalationStatus,
  Task,
  LogEntry,
  Escalation,
  ApproveResult,
} from '../../protocol/tasks.js';

/** The world's settings, from its `[worlds.tasks]` section. */
export interface TasksSettings {
  intervalMinutes: number;
  inferenceEnabled: boolean;
  contextBudgetTokens: number;
  /** IANA zone for `cron:` recurrences; default: this machine's zone. */
  timezone?: string;
}

/** What a full-effort run reports when it settles (a subset of the agent runner's `RunOutcome`). */
export interface AgentOutcome {
  status: 'done' | 'failed' | 'cancelled';
  errorKind?: string | undefined;
  error?: string | undefined;
  /** Visible text, control lines stripped. */
  text: string;
  /** Control lines of the final answer; `recommended_action` becomes an escalation. */
  controls?: readonly { kind: string; text?: string }[] | undefined;
}

export interface AgentStartRequest {
  world: string;
  purpose: string;
  system: string;
  prompt: string;
  mode: 'full' | 'analysis' | 'tainted';
  attended: boolean;
  /** Shown in the run's checkpoint when it produced no text. */
  title?: string | undefined;
  /** The tick's signal: a tick timeout or shutdown cancels the run. */
  signal?: AbortSignal | undefined;
}

/** The agent runner as the tasks world uses it. */
export interface TaskAgent {
  start(req: AgentStartRequest): { id: string; settled: Promise<AgentOutcome> };
}

export interface SkillHealth {
  name: string;
  status: string;
  tools?: number | unknown[] | undefined;
  error?: string | undefined;
  last_checked_at?: number | null | undefined;
}

/** The MCP manager as the situation report uses it. */
export interface SkillsHealth {
  /** A snapshot without I/O. */
  health(): Promise<SkillHealth[]> | SkillHealth[];
  /**
   * Ping connected servers and start the others, then report (preferred when present): a
   * snapshot alone calls a server that was simply never started "disconnected", which the
   * "Check connected skills" task would report as a problem.
   */
  check?(): Promise<SkillHealth[]>;
}

export interface MemoryItem {
  title: string;
  text: string;
  updatedAt: number;
}

/** Recent memory for the situation report. */
export interface MemorySource {
  recent(since: number | null, limit: number): Promise<MemoryItem[]>;
}
