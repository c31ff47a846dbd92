/**
 * The tasks world's domain types (seed 1) and the small interfaces it needs from its
 * neighbours: the agent runner (`TaskAgent`), the MCP manager (`SkillsHealth`) and memory
 * (`MemorySource`). The real `AgentRunner` and `McpManager` satisfy them structurally.
 */
import type { MemoryDiff } from '../../memory/diff.js';
import type { ApprovalContext } from '../../protocol/agent.js';
import type { BeforeToolCall, RecordedStep } from '../../agent/index.js';

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
  WriteChoice,
  TaskWhy,
  TaskWhyKind,
  LogDetail,
  LogGroup,
  LogGroups,
  LogLine,
  ModelCalls,
  ToolCallDetail,
  ExecutionDetail,
  ApprovalTrailItem,
  SystemHealth,
  ModelHealth,
} from '../../protocol/tasks.js';

/** The world's settings, from its `[worlds.tasks]` section. */
export interface TasksSettings {
  intervalMinutes: number;
  inferenceEnabled: boolean;
  contextBudgetTokens: number;
  /** IANA zone for `cron:` recurrences; default: this machine's zone. */
  timezone?: string;
  /**
   * The safety net of the unchanged-task skip: a task whose inputs did not change since its last
   * "nothing new" is evaluated again after this many minutes (0: never skipped, seed 1's literal
   * behaviour). Default 360.
   */
  reevaluateUnchangedAfterMinutes?: number;
  /** Globs the workspace scan ignores on top of the built-in noise list (`[worlds.tasks] workspace_ignore`). */
  workspaceIgnore?: readonly string[];
}

/** One tool step of an agent run, as the runner records it (`RecordedStep`). */
export interface AgentToolStep {
  tool: string;
  input: string;
  outcome: string;
  output: string;
  at: number;
}

/** What a full-effort run reports when it settles (a subset of the agent runner's `RunOutcome`). */
export interface AgentOutcome {
  status: 'done' | 'failed' | 'cancelled';
  errorKind?: string | undefined;
  error?: string | undefined;
  /** Visible text, control lines stripped. */
  text: string;
  /** Control lines of the final answer; `recommended_action` becomes an escalation. */
  controls?: readonly { kind: string; text?: string | undefined }[] | undefined;
  /** Model calls made (each one a ledger row). */
  steps?: number | undefined;
  toolSteps?: readonly AgentToolStep[] | undefined;
  startedAt?: number | undefined;
  finishedAt?: number | undefined;
}

/** An approval the runner asks for (the fields the tasks world reads). */
export interface AgentApprovalRequest {
  id: string;
  tool: string;
  server: string;
  arguments: unknown;
  /** The tool's JSON Schema (the card shows and checks the arguments by it). */
  input_schema?: Record<string, unknown> | null | undefined;
  /** The run's model, tokens and outside text read when it asked. */
  context?: ApprovalContext | null | undefined;
}

/** What a run tells while it goes (the runner's `RunEvent`s the tasks world listens to). */
export interface AgentRunEvent {
  type: string;
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  /** `model-call` events: the ledger row's latency. */
  latencyMs?: number | undefined;
  /** `tool-result` events: the step as recorded (kept in the execution's checkpoint); `step-finished`: its number. */
  step?: RecordedStep | number | undefined;
  /** `answered` events: the final answer (control lines stripped), its control lines and model calls. */
  runId?: string | undefined;
  text?: string | undefined;
  controls?: readonly { kind: string; text?: string | undefined }[] | undefined;
  steps?: number | undefined;
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
  /** Consulted when a writing tool asks for approval: a sentence refuses it at once (see the runner). */
  onApprovalRequested?: ((approval: AgentApprovalRequest) => string | undefined | Promise<string | undefined>) | undefined;
  /** Outside text in the prompt (the situation report), shown on the run's approvals. */
  reads?: readonly { what: string; excerpt: string }[] | undefined;
  /** A call the person answered on a card: made (or, with `response`, answered with their text) before the model's first step. */
  decided?: { server: string; tool: string; arguments: Record<string, unknown>; response?: string | undefined } | undefined;
  /** The run's id (default: a new one). */
  runId?: string | undefined;
  /** Awaited before each tool call runs: the execution records a writing call first (a throw: the call does not run). */
  beforeToolCall?: BeforeToolCall | undefined;
}

/** The agent runner as the tasks world uses it. */
export interface TaskAgent {
  start(req: AgentStartRequest): {
    id: string;
    settled: Promise<AgentOutcome>;
    events?: { subscribe(listener: (event: AgentRunEvent) => void): () => void } | undefined;
  };
}

/** The approval store as the tasks world uses it: approve what a task's words name; read a run's trail. */
export interface TaskApprovals {
  approve(id: string): Promise<unknown>;
  list(filter: {
    runId?: string | undefined;
  }): Promise<readonly { id: string; tool: string; server: string; arguments: unknown; state: string; created_at: number; answered_at: number | null }[]>;
}

/** The model layer as the tasks world's health probe uses it (no calls: `GET /models` only). */
export interface ModelsProbe {
  probe(role: 'local' | 'agent'): Promise<{ available: boolean; reason?: string | undefined }>;
  endpoint(role: 'local' | 'agent'): { model: string };
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

type Baseline = { id: string; label: string; seq: number; created_at: number };

/**
 * What the tasks world needs of the memory store (`MemoryStore` has it): its change sequence, diffs,
 * and its own checkpoint (a real one, so tombstone compaction keeps the deletions it has not seen).
 */
export interface MemoryChanges {
  head(): Promise<number>;
  diffSince(since: Baseline, opts?: { entriesPerNamespace?: number }): Promise<MemoryDiffLike>;
  createCheckpoint(label: string, opts?: { seq?: number | undefined; id?: string | undefined }): Promise<Baseline>;
  latestCheckpoint(label: string): Promise<Baseline | undefined>;
  pruneCheckpoints(label: string, keep: number, protect?: readonly string[]): Promise<number>;
}

/** A memory diff, as `renderDiff` (src/memory) reads it. */
export type MemoryDiffLike = MemoryDiff;

export interface MemoryItem {
  title: string;
  text: string;
  updatedAt: number;
}

/** Recent memory for the situation report. */
export interface MemorySource {
  recent(since: number | null, limit: number): Promise<MemoryItem[]>;
}
