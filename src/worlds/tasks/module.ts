/**
 * The tasks world (seed 1) as a module: its `[worlds.tasks]` section, its tables, its RPC
 * contract, the `tasks` subcommands, its `simulate` hooks and the Subconscious tab.
 */
import { AgentRunnerKey, ApprovalStoreKey, DEFAULT_RUN_CAP_MS, SkillsKey } from '../../agent/index.js';
import { CoordinatorKey } from '../../coordination/index.js';
import { defineModule } from '../../engine/index.js';
import { MemoryStoreKey } from '../../memory/services.js';
import { tasksContract } from '../../protocol/tasks.js';
import { registerTasksCommands } from './cli.js';
import { tasksConfig } from './config.js';
import { TASKS_SHIPPED, TASKS_TABLES, tasksMigrations } from './migrations/index.js';
import { tasksRpcHandlers } from './rpc.js';
import { tasksSimulation } from './simulate.js';
import type { TasksTables } from './tables.js';
import { createTasksWorld } from './world.js';

export const tasksModule = defineModule<typeof tasksConfig, TasksTables, typeof tasksContract>({
  kind: 'tasks',
  description: 'Checks standing tasks against the workspace and acts, or asks before any write you did not ask for.',
  config: tasksConfig,
  legacySection: 'heartbeat',
  tables: { names: TASKS_TABLES, migrations: tasksMigrations, shipped: TASKS_SHIPPED },
  contract: tasksContract,
  uses: [AgentRunnerKey, ApprovalStoreKey, SkillsKey, MemoryStoreKey, CoordinatorKey],
  tab: 'subconscious',
  // Read at each use through `settings()` below (never copied at create).
  live: ['interval_minutes', 'inference_enabled', 'context_budget_tokens', 'reevaluate_unchanged_after_minutes'],
  cli: {
    name: 'tasks',
    description: 'standing tasks of the task loop',
    register: (command, cli) => registerTasksCommands(command, cli),
  },
  simulate: tasksSimulation,
  create(ctx) {
    const { config } = ctx;
    const agent = ctx.services.find(AgentRunnerKey);
    const world = createTasksWorld({
      db: ctx.db,
      clock: ctx.clock,
      ids: ctx.ids,
      events: ctx.events,
      log: ctx.log,
      workspace: ctx.workspace,
      agent,
      approvals: ctx.services.find(ApprovalStoreKey),
      // Approved actions are its durable jobs, run by every worker's job loop (approved-jobs.ts).
      coordinator: ctx.services.find(CoordinatorKey),
      skills: ctx.services.find(SkillsKey),
      memoryStore: ctx.services.find(MemoryStoreKey),
      models: ctx.llm,
      healthCheckMs: config.health_check_minutes * 60_000,
      timezone: config.timezone ?? ctx.timezone,
      // A run marked running counts as interrupted only once it outlived every cap that could still end it.
      interruptedAfterMs: (agent?.defaultCapMs ?? DEFAULT_RUN_CAP_MS) + ctx.tickTimeoutMs,
      logRetentionDays: config.log_retention_days,
      world: ctx.name,
      worldOff: () => ctx.worldOff(),
      // A function: the live keys (`live` above) are read at each use, so a change applies at the next tick.
      settings: () => ({
        intervalMinutes: config.interval_minutes,
        inferenceEnabled: config.inference_enabled,
        contextBudgetTokens: config.context_budget_tokens,
        reevaluateUnchangedAfterMinutes: config.reevaluate_unchanged_after_minutes,
        workspaceIgnore: config.workspace_ignore,
      }),
    });
    return {
      world,
      handlers: tasksRpcHandlers(world.service),
      start: async () => {
        // The model-health banner comes from a probe at start and every few minutes, not only from a failed tick.
        world.service.health.start();
        await world.service.startJobs();
      },
    };
  },
});
