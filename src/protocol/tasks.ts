/**
 * The tasks world's face (seed 1's RPC table under `subconscious.*`): standing tasks, the
 * activity log (flat, grouped by tick, and one row's detail), escalations (unsolicited writes
 * waiting for the person's answer) and the system's health as the world sees it.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';
import { APPROVAL_ANSWERS, answeredByParams, type AnswerVia, type ApprovalAnswerRecord, type ApprovalContext } from './agent.js';

export type TaskSource = 'system' | 'user';
export type TaskOrigin = 'default' | 'heartbeat_md' | 'user';
/** What the model may decide for one task. */
export type ModelDecision = 'noop' | 'act' | 'escalate';
/**
 * A log row's state, as seed 1's table lists it (dot colour and text per value), and `resolved`:
 * an escalation that resolved by itself (the failing skill is healthy again).
 */
export const LOG_DECISIONS = ['in_progress', 'act', 'noop', 'escalate', 'failed', 'cancelled', 'dismissed', 'resolved'] as const;
export type LogDecision = (typeof LOG_DECISIONS)[number];
/** `executed`: the execution finished and its result is stored on the row, not yet applied (a resumed commit applies it). */
export type ExecState = 'none' | 'running' | 'executed' | 'done';
/** `local`: text task on the local model; `full`/`analysis`/`tainted`: the agent runner in that mode. */
export type ExecMode = 'local' | 'full' | 'analysis' | 'tainted';
export type EscalationPriority = 'critical' | 'important' | 'normal';
export const ESCALATION_STATUSES = ['pending', 'approved', 'dismissed', 'resolved'] as const;
export type EscalationStatus = (typeof ESCALATION_STATUSES)[number];

/**
 * Who gave a task its write rights (issue 9: a person's explicit choice, never a guess):
 * - `none`: nobody chose; the task is read-only;
 * - `person`: set by a person (the page's "Writes" choice, `--write`, `needs_tools` over RPC);
 * - `heartbeat_md`: its HEARTBEAT.md line is marked `- [write] …`: that only asks (a file is
 *   untrusted text); it stays read-only until a person confirms (then `person`);
 * - `older_version`: an older version guessed it from the title; it asks before every write until
 *   the person confirms or drops it.
 */
export type WriteChoice = 'none' | 'person' | 'heartbeat_md' | 'older_version';

/**
 * Why a task is (or is not) evaluated at the next tick, for the page and the CLI:
 * - `off`: switched off (`detail`: why, when it was not the person);
 * - `done`: a `once` task that ran;
 * - `not_due`: a `cron` task, next due at `at`;
 * - `unchanged`: nothing it is judged on changed since its last "nothing new" at `at`; it is
 *   looked at again when something changes, or at `until` (the safety net; null: never);
 * - `waiting`: an approval card waits for the person (`detail`: the action it asks about);
 * - `world_off`: the Tasks world itself is off, so no tick evaluates it (`detail`: why, and how to switch it on);
 * - `model_unavailable`: the local model did not answer the last probe (`detail`: the reason);
 * - `due`: evaluated at the next tick.
 */
export type TaskWhyKind = 'off' | 'done' | 'not_due' | 'unchanged' | 'waiting' | 'world_off' | 'model_unavailable' | 'due';
export type TaskWhy = { kind: TaskWhyKind; at: number | null; until: number | null; detail: string | null };

export type Task = {
  id: string;
  title: string;
  source: TaskSource;
  origin: TaskOrigin;
  recurrence: string;
  enabled: boolean;
  /** Write intent as the person chose it (see `write_choice`); false unless someone chose it. */
  needs_tools: boolean;
  write_choice: WriteChoice;
  /** The title sounds like it sends or changes things: the page suggests write rights, never grants them. */
  write_suggested: boolean;
  last_run_at: number | null;
  next_run_at: number | null;
  completed: boolean;
  created_at: number;
  updated_at: number;
  /** When its last evaluation decided "nothing new" with the inputs it still has (null: not so). */
  unchanged_since: number | null;
  why: TaskWhy;
};

export type LogEntry = {
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
};

/** The tool call a card holds: exactly what Accept runs (Edit changes `arguments`, checked against `input_schema`). */
export type EscalationAction = { tool: string; server: string; arguments: Record<string, unknown>; input_schema: Record<string, unknown> | null };

export type Escalation = {
  id: string;
  task_id: string;
  log_id: string;
  title: string;
  description: string;
  analysis: string | null;
  priority: EscalationPriority;
  status: EscalationStatus;
  skill_related: boolean;
  /** The skill (MCP server) a skill-related escalation is about, when known: "Fix in Skills" opens it. */
  skill_server: string | null;
  created_at: number;
  resolved_at: number | null;
  /** `person`: approved or skipped by a person; `subconscious`: resolved by itself (with `resolution`). */
  resolved_by: 'person' | 'subconscious' | null;
  resolution: string | null;
  /** The held tool call (null: a recommended action in words; the agent carries it out with its tools). */
  action: EscalationAction | null;
  /** What the run that raised it used and read (null: older rows). */
  context: ApprovalContext | null;
  /** How it was answered (null: pending, resolved by itself, or an older row). */
  answer: ApprovalAnswerRecord | null;
};

export type ApproveResult = {
  escalation: Escalation;
  /** The run carrying out the answer (null: ignore, which runs nothing). */
  run_id: string | null;
  /** Present when the caller waited for the run to settle. */
  log?: LogEntry | undefined;
};

/** One group of model calls, with the figures the model layer recorded in the ledger for them. */
export type ModelCalls = { model: string | null; calls: number; input_tokens: number; output_tokens: number; latency_ms: number };

/** One tool call of an execution: arguments and result as text, capped (`truncated` says so). */
export type ToolCallDetail = { tool: string; arguments: string; outcome: string; result: string; at: number; truncated: boolean };

export type ExecutionDetail = {
  mode: ExecMode;
  /** The ledger's purpose: `execute` (local text), `execute_write` (a write task, tainted), `execute_analysis`, `approved_action` (older rows: `execute_full`). */
  purpose: string;
  /** The answer as the model gave it (capped). */
  answer: string | null;
  calls: ModelCalls;
  tool_calls: ToolCallDetail[];
  run_id: string | null;
  /** The worker whose death cut it off, when another worker (or this one after a restart) continued it: "taken over from …". */
  taken_over_from: string | null;
};

/** One step of a row's approval trail: who answered what, and when. */
export type ApprovalTrailItem = {
  at: number;
  what: string;
  state: 'pending' | 'approved' | 'denied' | 'expired' | 'dismissed' | 'resolved';
  by: 'you' | 'subconscious' | null;
  note: string | null;
  /** A person's answer: the name they gave (an MCP client's own name over MCP); absent otherwise. */
  answered_by?: string | null;
  /** A person's answer: through which face (`page`, `cli`, `rpc`, `mcp`); absent otherwise. */
  answered_via?: AnswerVia | null;
};

/** `subconscious.log_detail`: everything behind one log row. */
export type LogDetail = {
  entry: LogEntry;
  /** The task as it is now (null: removed since). */
  task: Task | null;
  tick: { tick_id: string; tick_at: number; duration_ms: number | null; tasks: number } | null;
  /** The situation report exactly as the evaluation was sent it (null: none was built, e.g. an older row). */
  report: string | null;
  report_tokens: number | null;
  /** The evaluation call that decided this row (its batch): the model's raw answer and its figures. */
  evaluation: (ModelCalls & { raw_answer: string | null; tasks_in_call: number }) | null;
  execution: ExecutionDetail | null;
  /** A run the person approved afterwards ("Go ahead"). */
  approved_action: ExecutionDetail | null;
  approvals: ApprovalTrailItem[];
};

/** A log row in the grouped log: repeated identical failures are one line with a count. */
export type LogLine = { entry: LogEntry; count: number; task_titles: string[]; first_at: number; last_at: number };

/** One tick in the grouped log (or a run of ticks that all failed the same way: `ticks` > 1). */
export type LogGroup = {
  tick_id: string;
  tick_at: number;
  /** The last tick of a merged run (a repeated failure, or quiet ticks in a row), else null. */
  until: number | null;
  ticks: number;
  tasks: number;
  counts: Partial<Record<LogDecision, number>>;
  tokens: number | null;
  duration_ms: number | null;
  /** Nothing happened (every row "nothing new" or cancelled): the page shows it collapsed. */
  quiet: boolean;
  lines: LogLine[];
};

export type LogGroups = { groups: LogGroup[]; /** Pass as `before` for older groups (null: no more). */ next_before: number | null };

export type ModelHealth = {
  role: 'local' | 'agent';
  model: string;
  /** null: not probed yet. */
  available: boolean | null;
  reason: string | null;
  checked_at: number | null;
  /** What stops working without it, in a person's words. */
  needed_for: string;
};

export type SkillHealthRow = { name: string; status: string; error: string | null };

/** `subconscious.health`: what the world's probe (at start and every few minutes) last found. */
export type SystemHealth = {
  models: ModelHealth[];
  /** null: no skills (MCP servers) are wired into this daemon. */
  skills: SkillHealthRow[] | null;
  /** Task runs that failed in the last 24 hours. */
  recent_failures: number;
  checked_at: number | null;
  next_check_at: number | null;
};

/** Every payload names the world instance it came from. */
export type TasksEvents = {
  'tasks.changed': { world: string; reason?: string; id?: string; action?: string; tick_id?: string; [detail: string]: unknown };
  'tasks.log_changed': {
    world: string;
    id?: string;
    ids?: string[];
    task_id?: string;
    tick_id?: string;
    count?: number;
    decision?: LogDecision;
    reason?: string;
  };
  'tasks.escalation_changed': { world: string; id: string; status: EscalationStatus; task_id?: string };
  'tasks.health_changed': { world: string; models_available: boolean; unhealthy_skills: number };
};

const id = z.string().trim().min(1, 'must be a non-empty id');
/** At least one character a person can see: control or invisible characters alone are not a task. */
const VISIBLE = /[^\p{Cc}\p{Cf}\p{Z}\s]/u;
const title = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(500, 'at most 500 characters')
  .refine((t) => t.length === 0 || VISIBLE.test(t), 'must contain visible text: control or invisible characters alone do not make a task title');
const recurrence = z.string().trim().min(1, 'must be "pending", "once" or "cron:<expr>"');
const decision = z.enum(LOG_DECISIONS);

export const tasksContract = defineContract<TasksEvents>()({
  methods: {
    'subconscious.tasks_list': method(
      z.strictObject({ removed: z.boolean().optional() }),
      'List all tasks (system first, then user tasks), each with why it is or is not evaluated next; {removed: true}: the removed tasks instead (what tasks_restore brings back), newest removal first.',
    ).returns<Task[]>(),
    'subconscious.tasks_add': method(
      z.strictObject({ title, recurrence: recurrence.optional(), needs_tools: z.boolean().optional() }),
      'Add a user task: {title, recurrence?: pending|once|cron:<expr>, needs_tools?} (read-only unless needs_tools is true; the title only suggests).',
    ).returns<Task>(),
    'subconscious.tasks_update': method(
      z
        .strictObject({
          task_id: id,
          title: title.optional(),
          enabled: z.boolean().optional(),
          recurrence: recurrence.optional(),
          needs_tools: z.boolean().optional(),
        })
        .refine((p) => p.title !== undefined || p.enabled !== undefined || p.recurrence !== undefined || p.needs_tools !== undefined, {
          message: 'give at least one of title, enabled, recurrence, needs_tools',
        }),
      'Update a task: {task_id, title?, enabled?, recurrence?, needs_tools?} (needs_tools is the person’s choice). System tasks can only be enabled or disabled.',
      { renamed: { id: 'task_id' } },
    ).returns<Task>(),
    'subconscious.tasks_remove': method(
      z.strictObject({ task_id: id }),
      'Remove a user task {task_id}: it is hidden and no longer evaluated, and tasks_restore brings it back (system tasks can only be disabled).',
      { renamed: { id: 'task_id' } },
    ).returns<Task>(),
    'subconscious.tasks_restore': method(
      z.strictObject({ task_id: id }),
      'Bring back a removed user task {task_id} as it was (not_found: no such task; conflict: it is not removed, or its wording was added again meanwhile).',
      { renamed: { id: 'task_id' } },
    ).returns<Task>(),
    'subconscious.log_list': method(
      z.strictObject({
        limit: z.number().int().min(1).max(1000).optional(),
        offset: z.number().int().min(0).optional(),
        task_id: id.optional(),
        decision: decision.optional(),
        q: z.string().max(200, 'at most 200 characters').optional(),
      }),
      'List activity log entries, newest first: {limit? (default 100), offset?, task_id?, decision?, q? (search in task, reason and result)}.',
    ).returns<LogEntry[]>(),
    'subconscious.log_ticks': method(
      z.strictObject({
        limit: z.number().int().min(1).max(100).optional(),
        before: z.number().int().min(0).optional(),
        task_id: id.optional(),
        decision: decision.optional(),
        q: z.string().max(200, 'at most 200 characters').optional(),
      }),
      'The activity log grouped by tick, newest first: {limit? (groups, default 20), before? (tick time), task_id?, decision?, q?}; a repeated failure is one line with a count.',
    ).returns<LogGroups>(),
    'subconscious.log_detail': method(
      z.strictObject({ id }),
      'Everything behind one log row {id}: the situation report as sent, the raw answer, tool calls, tokens, latency and model, the approval trail.',
    ).returns<LogDetail>(),
    'subconscious.health': method(
      z.strictObject({ check: z.boolean().optional() }),
      'The models’ and skills’ health as the tasks world last probed it ({check: true} probes now).',
    ).returns<SystemHealth>(),
    'subconscious.escalations_list': method(
      z.strictObject({ status: z.enum(ESCALATION_STATUSES).optional() }),
      'List escalations, pending first by priority: {status?}.',
    ).returns<Escalation[]>(),
    'subconscious.escalations_approve': method(
      z.strictObject({ id, wait: z.boolean().optional(), ...answeredByParams }),
      'Approve a pending escalation: the agent runs its recommended action once with full permissions ({wait: true} returns after the run).',
    ).returns<ApproveResult>(),
    'subconscious.escalations_dismiss': method(
      z.strictObject({ id, ...answeredByParams }),
      'Dismiss a pending escalation (the same as escalations_answer with ignore): nothing runs.',
    ).returns<Escalation>(),
    'subconscious.escalations_answer': method(
      z
        .strictObject({
          id,
          answer: z.enum(APPROVAL_ANSWERS),
          arguments: z.record(z.string(), z.unknown()).optional(),
          text: z.string().trim().min(1, 'must not be empty').max(4000, 'at most 4000 characters').optional(),
          wait: z.boolean().optional(),
          ...answeredByParams,
        })
        .refine((p) => p.answer !== 'edit' || p.arguments !== undefined, { path: ['arguments'], message: 'edit needs the changed arguments' })
        .refine((p) => p.answer !== 'respond' || p.text !== undefined, { path: ['text'], message: 'respond needs the text to send back' }),
      'Answer a pending escalation: {id, answer: accept (run its action as shown) | edit (arguments: the held call with changed arguments, checked against the tool’s schema) | respond (text: the run continues with your words; the held call does not run) | ignore, wait?, by?, via?}.',
    ).returns<ApproveResult>(),
  },
  events: ['tasks.changed', 'tasks.log_changed', 'tasks.escalation_changed', 'tasks.health_changed'],
});
