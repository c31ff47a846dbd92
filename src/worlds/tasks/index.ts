/**
 * The tasks world (seed 1): standing tasks evaluated against the workspace.
 *
 *   const tasks = createTasksWorld({ db, clock, ids, events, log, workspace, settings, agent, skills, memory });
 *   registry.add(new Instance(tasks, engineDeps));           // the engine runs its ticks
 *   dispatcher.add(...tasksRpcMethods(tasks.service));        // subconscious.tasks_* / log_list / escalations_*
 */
export {
  createTasksWorld,
  type TasksWorld,
  type TasksWorldDeps,
  type TasksObservation,
  type TasksContext,
  type TasksReflection,
  type DueTask,
} from './world.js';
export { TasksService, outcomeToRow, APPROVED_STOPPED, type TasksServiceDeps, type ApproveResult } from './service.js';
export { tasksRpcMethods } from './rpc.js';
export { TaskStore, DEFAULT_SYSTEM_TASKS, type AddTaskInput, type UpdateTaskInput, type HeartbeatSyncResult } from './task-store.js';
export { LogStore, LOG_TEXT, INTERRUPTED } from './log-store.js';
export { EscalationStore } from './escalation-store.js';
export { HeartbeatFile, HEARTBEAT_FILE, parseHeartbeatMd, heartbeatTaskId, titleKey } from './heartbeat-md.js';
export { parseRecurrence, formatRecurrence, nextCronRun, advanceSchedule, scheduleFor, defaultTimezone, type Recurrence } from './recurrence.js';
export { detectWriteIntent, isSkillRelated, findRecommendedAction, splitPriority } from './intent.js';
export { buildSituationReport, scanWorkspace, type SituationReport } from './situation.js';
export { decisionsSchema, normalizeDecisions, planBatches, NO_DECISION, type TaskDecision } from './evaluate.js';
export { readEvaluationPrompt, noopDecisionsReply, DRY_RUN_REASON, type EvaluationRead } from './dry-run.js';
export type * from './types.js';
