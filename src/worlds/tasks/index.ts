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
  type ObservedInputs,
  DEFAULT_REEVALUATE_MINUTES,
  skillServerOf,
} from './world.js';
export { TasksService, outcomeToRow, whyOf, APPROVED_STOPPED, DEFAULT_HEALTH_CHECK_MS, type TasksServiceDeps } from './service.js';
export { tasksRpcHandlers } from './rpc.js';
export { registerTasksCommands, formatTaskTable } from './cli.js';
export {
  TaskStore,
  DEFAULT_SYSTEM_TASKS,
  writesGranted,
  writeChoiceOf,
  publicTask,
  type StoredTask,
  type AddTaskInput,
  type UpdateTaskInput,
  type HeartbeatSyncResult,
} from './task-store.js';
export { LogStore, LOG_TEXT, INTERRUPTED, type LogFilter } from './log-store.js';
export { EscalationStore } from './escalation-store.js';
export { TickStore, type TickRecord } from './tick-store.js';
export { HeartbeatFile, HEARTBEAT_FILE, parseHeartbeatMd, parseHeartbeatLines, heartbeatTaskId, titleKey, type HeartbeatLine } from './heartbeat-md.js';
export { dedupeKey } from './dedupe.js';
export { sharedDigest, taskFingerprint, localDay, type FingerprintInputs } from './fingerprint.js';
export { namedWrite } from './write-gate.js';
export { HealthMonitor, ROLE_NEEDED_FOR, type HealthSnapshot } from './health.js';
export { groupLog } from './log-groups.js';
export type { RowDetail, ExecutionRecord, EvaluationRecord } from './log-detail.js';
export { parseRecurrence, formatRecurrence, nextCronRun, advanceSchedule, scheduleFor, defaultTimezone, type Recurrence } from './recurrence.js';
export { soundsLikeWrite, isAboutTime, isSkillRelated, findRecommendedAction, splitPriority } from './intent.js';
export { buildSituationReport, scanWorkspace, type SituationReport } from './situation.js';
export { decisionsSchema, normalizeDecisions, planBatches, NO_DECISION, type TaskDecision } from './evaluate.js';
export { readEvaluationPrompt, noopDecisionsReply, DRY_RUN_REASON, type EvaluationRead } from './dry-run.js';
export type * from './types.js';
