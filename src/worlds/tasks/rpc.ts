/**
 * The tasks world's RPC handlers (`protocol/tasks.ts`, seed 1's table under `subconscious.*`).
 * Rule violations are SubconsciousErrors (`forbidden` for removing a system task, `conflict` for
 * approving twice); `subconscious.status` and `subconscious.trigger` belong to the engine.
 */
import type { Handlers } from '../../protocol/contract.js';
import type { tasksContract } from '../../protocol/tasks.js';
import type { TasksService } from './service.js';

export function tasksRpcHandlers(service: TasksService): Handlers<(typeof tasksContract)['methods']> {
  return {
    'subconscious.tasks_list': (p) => service.listTasks({ removed: p.removed ?? false }),
    'subconscious.tasks_add': (p) => service.addTask(p),
    'subconscious.tasks_update': ({ task_id, ...patch }) => service.updateTask(task_id, patch),
    'subconscious.tasks_remove': (p) => service.removeTask(p.task_id),
    'subconscious.tasks_restore': (p) => service.restoreTask(p.task_id),
    'subconscious.log_list': (p) =>
      service.listLog({
        limit: p.limit ?? 100,
        offset: p.offset ?? 0,
        ...(p.task_id ? { taskId: p.task_id } : {}),
        ...(p.decision ? { decision: p.decision } : {}),
        ...(p.q ? { q: p.q } : {}),
      }),
    'subconscious.log_ticks': (p) =>
      service.logTicks({
        limit: p.limit ?? 20,
        before: p.before,
        ...(p.task_id ? { taskId: p.task_id } : {}),
        ...(p.decision ? { decision: p.decision } : {}),
        ...(p.q ? { q: p.q } : {}),
      }),
    'subconscious.log_detail': (p) => service.logDetail(p.id),
    'subconscious.health': (p) => service.systemHealth({ check: p.check ?? false }),
    'subconscious.escalations_list': (p) => service.listEscalations(p.status),
    'subconscious.escalations_answer': ({ id, ...answer }) => service.answer(id, answer),
    // The older names: accept and ignore.
    'subconscious.escalations_approve': (p) => service.approve(p.id, { wait: p.wait ?? false, by: p.by, via: p.via }),
    'subconscious.escalations_dismiss': (p) => service.dismiss(p.id, { by: p.by, via: p.via }),
  };
}
