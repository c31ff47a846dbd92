/**
 * The tasks world's face (seed 1's RPC table under `subconscious.*`): standing tasks, the
 * activity log and escalations (unsolicited writes waiting for the person's answer).
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

export type TaskSource = 'system' | 'user';
export type TaskOrigin = 'default' | 'heartbeat_md' | 'user';
/** What the model may decide for one task. */
export type ModelDecision = 'noop' | 'act' | 'escalate';
/** A log row's state, as seed 1's table lists it (dot colour and text per value). */
export const LOG_DECISIONS = ['in_progress', 'act', 'noop', 'escalate', 'failed', 'cancelled', 'dismissed'] as const;
export type LogDecision = (typeof LOG_DECISIONS)[number];
export type ExecState = 'none' | 'running' | 'done';
/** `local`: text task on the local model; `full`/`analysis`: the agent runner in that mode. */
export type ExecMode = 'local' | 'full' | 'analysis';
export type EscalationPriority = 'critical' | 'important' | 'normal';
export const ESCALATION_STATUSES = ['pending', 'approved', 'dismissed'] as const;
export type EscalationStatus = (typeof ESCALATION_STATUSES)[number];

export type Task = {
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
  created_at: number;
  resolved_at: number | null;
};

export type ApproveResult = {
  escalation: Escalation;
  run_id: string;
  /** Present when the caller waited for the run to settle. */
  log?: LogEntry | undefined;
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
};

const id = z.string().trim().min(1, 'must be a non-empty id');
const title = z.string().trim().min(1, 'must not be empty').max(500, 'at most 500 characters');
const recurrence = z.string().trim().min(1, 'must be "pending", "once" or "cron:<expr>"');

export const tasksContract = defineContract<TasksEvents>()({
  methods: {
    'subconscious.tasks_list': method(z.strictObject({}), 'List all tasks (system first, then user tasks).').returns<Task[]>(),
    'subconscious.tasks_add': method(
      z.strictObject({ title, recurrence: recurrence.optional(), needs_tools: z.boolean().optional() }),
      'Add a user task: {title, recurrence?: pending|once|cron:<expr>, needs_tools?} (write intent decided from the title when absent).',
    ).returns<Task>(),
    'subconscious.tasks_update': method(
      z
        .strictObject({ id, title: title.optional(), enabled: z.boolean().optional(), recurrence: recurrence.optional(), needs_tools: z.boolean().optional() })
        .refine((p) => p.title !== undefined || p.enabled !== undefined || p.recurrence !== undefined || p.needs_tools !== undefined, {
          message: 'give at least one of title, enabled, recurrence, needs_tools',
        }),
      'Update a task: {id, title?, enabled?, recurrence?, needs_tools?}. System tasks can only be enabled or disabled.',
    ).returns<Task>(),
    'subconscious.tasks_remove': method(z.strictObject({ id }), 'Remove a user task (system tasks can only be disabled).').returns<Task>(),
    'subconscious.log_list': method(
      z.strictObject({
        limit: z.number().int().min(1).max(1000).optional(),
        offset: z.number().int().min(0).optional(),
        task_id: id.optional(),
        decision: z.enum(LOG_DECISIONS).optional(),
      }),
      'List activity log entries, newest first: {limit? (default 100), offset?, task_id?, decision?}.',
    ).returns<LogEntry[]>(),
    'subconscious.escalations_list': method(
      z.strictObject({ status: z.enum(ESCALATION_STATUSES).optional() }),
      'List escalations, pending first by priority: {status?}.',
    ).returns<Escalation[]>(),
    'subconscious.escalations_approve': method(
      z.strictObject({ id, wait: z.boolean().optional() }),
      'Approve a pending escalation: the agent runs its recommended action once with full permissions ({wait: true} returns after the run).',
    ).returns<ApproveResult>(),
    'subconscious.escalations_dismiss': method(z.strictObject({ id }), 'Dismiss a pending escalation: nothing runs.').returns<Escalation>(),
  },
  events: ['tasks.changed', 'tasks.log_changed', 'tasks.escalation_changed'],
});
