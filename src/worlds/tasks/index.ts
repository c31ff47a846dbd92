/**
 * The tasks world (seed 1): standing tasks evaluated against the workspace. Its front door is
 * `tasksModule` (src/app/modules.ts lists it); the rest is exported for tests and benchmarks.
 */
export { tasksModule } from './module.js';
export { tasksConfig, type TasksConfig } from './config.js';
export { tasksMigrations, TASKS_TABLES } from './migrations/index.js';
export type { TasksTables, SubconsciousTasksTable, SubconsciousLogTable, SubconsciousEscalationsTable } from './tables.js';
export {
  createTasksWorld,
  type TasksWorld,
  type TasksWorldDeps,
  type TasksObservation,
  type TasksContext,
  type TasksReflection,
  type DueTask,
} from './world.js';
export { TasksService, outcomeToRow, APPROVED_STOPPED, type TasksServiceDeps } from './service.js';
export { tasksRpcHandlers } from './rpc.js';
export { registerTasksCommands, formatTaskTable } from './cli.js';
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
