/**
 * The tasks world's domain types (seed 1) and the small interfaces it needs from its
 * neighbours: the agent runner (`TaskAgent`), the MCP manager (`SkillsHealth`) and memory
 * (`MemorySource`). The real `AgentRunner` and `McpManager` satisfy them structurally.
 */

export type TaskSource = 'system' | 'user';
export type TaskOrigin = 'default' | 'heartbeat_md' | 'user';

/** What the model may decide for one task. */
export type ModelDecision = 'noop' | 'act' | 'escalate';

/** A log row's state, as the seed's table lists it (dot colour and text per value). */
export type LogDecision = 'in_progress' | 'act' | 'noop' | 'escalate' | 'failed' | 'cancelled' | 'dismissed';

export type ExecState = 'none' | 'running' | 'done';
/** `local`: text task on the local model; `full`/`analysis`: the agent runner in that mode. */
export type ExecMode = 'local' | 'full' | 'analysis';

export type EscalationPriority = 'critical' | 'important' | 'normal';
export type EscalationStatus = 'pending' | 'approved' | 'dismissed';

export interface Task {
  id: string;
  title: string;
  source: TaskSource;
  origin: TaskOrigin;
  recurrence: string;
  enabled: boolean;
  needs_tools: boolean;
  last_run_at: number | null;
  next_run_at: number | null;
  completed: boolean;
  created_at: number;
  updated_at: number;
}

export interface LogEntry {
  id: string;
  task_id: string;
  task_title: string;
  tick_id: string;
  tick_at: number;
  decision: LogDecision;
  model_decision: ModelDecision | null;
  reason: string | null;
  result: string | null;
  duration_ms: number | null;
  exec_state: ExecState;
  exec_mode: ExecMode | null;
  run_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface Escalation {
  id: string;
  task_id: string;
  log_id: string;
  title: string;
  description: string;
  analysis: string | null;
  priority: EscalationPriority;
  status: EscalationStatus;
  skill_related: boolean;
  created_at: number;
  resolved_at: number | null;
}

/** Seed 1's `[heartbeat]` section, resolved by the config loader. */
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
