/**
 * The tasks world's JSON-RPC methods (seed 1's table, under `subconscious.*`). Params are
 * validated by zod (unknown fields refused, so a typo is an error naming it); rule violations
 * are SubconsciousErrors (`forbidden` for removing a system task, `conflict` for approving
 * twice). `subconscious.status` and `subconscious.trigger` belong to the engine.
 */
import { z } from 'zod';
import { defineMethod, type RpcMethod } from '../../core/rpc.js';
import type { TasksService } from './service.js';

const id = z.string().trim().min(1, 'must be a non-empty id');
const title = z.string().trim().min(1, 'must not be empty').max(500, 'at most 500 characters');
const recurrence = z.string().trim().min(1, 'must be "pending", "once" or "cron:<expr>"');

export function tasksRpcMethods(service: TasksService): RpcMethod[] {
  return [
    defineMethod('subconscious.tasks_list', z.strictObject({}), 'List all tasks (system first, then user tasks).', () => service.listTasks()),

    defineMethod(
      'subconscious.tasks_add',
      z.strictObject({ title, recurrence: recurrence.optional(), needs_tools: z.boolean().optional() }),
      'Add a user task: {title, recurrence?: pending|once|cron:<expr>, needs_tools?} (write intent decided from the title when absent).',
      (p) => service.addTask(p),
    ),

    defineMethod(
      'subconscious.tasks_update',
      z
        .strictObject({ id, title: title.optional(), enabled: z.boolean().optional(), recurrence: recurrence.optional(), needs_tools: z.boolean().optional() })
        .refine((p) => p.title !== undefined || p.enabled !== undefined || p.recurrence !== undefined || p.needs_tools !== undefined, {
          message: 'give at least one of title, enabled, recurrence, needs_tools',
        }),
      'Update a task: {id, title?, enabled?, recurrence?, needs_tools?}. System tasks can only be enabled or disabled.',
      ({ id: taskId, ...patch }) => service.updateTask(taskId, patch),
    ),

    defineMethod('subconscious.tasks_remove', z.strictObject({ id }), 'Remove a user task (system tasks can only be disabled).', (p) =>
      service.removeTask(p.id),
    ),

    defineMethod(
      'subconscious.log_list',
      z.strictObject({
        limit: z.number().int().min(1).max(1000).optional(),
        offset: z.number().int().min(0).optional(),
        task_id: id.optional(),
        decision: z.enum(['in_progress', 'act', 'noop', 'escalate', 'failed', 'cancelled', 'dismissed']).optional(),
      }),
      'List activity log entries, newest first: {limit? (default 100), offset?, task_id?, decision?}.',
      (p) =>
        service.listLog({
          limit: p.limit ?? 100,
          offset: p.offset ?? 0,
          ...(p.task_id ? { taskId: p.task_id } : {}),
          ...(p.decision ? { decision: p.decision } : {}),
        }),
    ),

    defineMethod(
      'subconscious.escalations_list',
      z.strictObject({ status: z.enum(['pending', 'approved', 'dismissed']).optional() }),
      'List escalations, pending first by priority: {status?}.',
      (p) => service.listEscalations(p.status),
    ),

    defineMethod(
      'subconscious.escalations_approve',
      z.strictObject({ id, wait: z.boolean().optional() }),
      'Approve a pending escalation: the agent runs its recommended action once with full permissions ({wait: true} returns after the run).',
      (p) => service.approve(p.id, { wait: p.wait ?? false }),
    ),

    defineMethod('subconscious.escalations_dismiss', z.strictObject({ id }), 'Dismiss a pending escalation: nothing runs.', (p) => service.dismiss(p.id)),
  ];
}
