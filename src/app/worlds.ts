/**
 * The worlds this product ships and the services they need (tools, the agent runner), wired
 * from the resolved config. A new world is a factory in `src/worlds/` plus one entry here.
 */
import { AgentRunner, ApprovalStore, McpManager, agentRpcMethods } from '../agent/index.js';
import { systemTimeZone, type RpcMethod } from '../core/index.js';
import { WorldCatalog, type EngineDeps, type Registry } from '../engine/index.js';
import { usageRpcMethods } from '../llm/index.js';
import { createTasksWorld, tasksRpcMethods, type SkillsHealth, type TasksWorld } from '../worlds/tasks/index.js';
import type { Config } from './config.js';

export interface WorldSetup {
  workspace: string;
  config: Config;
  deps: EngineDeps;
  registry: Registry;
  /** What the worlds see of the MCP servers, instead of the manager itself (`simulate`). */
  skills?: SkillsHealth | undefined;
}

export interface AppServices {
  mcp: McpManager;
  approvals: ApprovalStore;
  agent: AgentRunner;
  rpcMethods: RpcMethod[];
  close(): Promise<void>;
}

interface WorldDeps extends WorldSetup {
  mcp: McpManager;
  agent: AgentRunner;
}

/** Every world kind this product ships: `makeWorld(kind, deps)`. */
export const catalog = new WorldCatalog<WorldDeps>().define('tasks', ({ workspace, config, deps, agent, mcp, skills }) =>
  createTasksWorld({
    db: deps.db,
    clock: deps.clock,
    ids: deps.ids,
    events: deps.events,
    log: deps.log,
    workspace,
    agent,
    skills: skills ?? mcp,
    timezone: config.heartbeat.timezone,
    // A run marked running is only "interrupted" once it has outlived every cap that could still end it.
    interruptedAfterMs: (config.agent.run_cap_minutes + config.engine.tick_timeout_minutes) * 60_000,
    settings: {
      intervalMinutes: config.heartbeat.interval_minutes,
      inferenceEnabled: config.heartbeat.inference_enabled,
      contextBudgetTokens: config.heartbeat.context_budget_tokens,
    },
  }),
);

export async function defineWorlds(setup: WorldSetup): Promise<AppServices> {
  const { deps, config } = setup;
  const mcp = new McpManager({ servers: config.mcp.servers, clock: deps.clock, log: deps.log, events: deps.events });
  const approvals = new ApprovalStore({ db: deps.db, clock: deps.clock, ids: deps.ids, events: deps.events, pollMs: 1000 });
  const agent = new AgentRunner({
    llm: deps.llm,
    mcp,
    approvals,
    clock: deps.clock,
    ids: deps.ids,
    events: deps.events,
    log: deps.log,
    capMs: config.agent.run_cap_minutes * 60_000,
    maxSteps: config.agent.max_steps,
  });
  await agent.recover();
  const worldDeps: WorldDeps = { ...setup, mcp, agent };
  const tickTimeoutMs = config.engine.tick_timeout_minutes * 60_000;
  const tasks = catalog.makeWorld('tasks', worldDeps) as TasksWorld;
  setup.registry.add(tasks, { disabledBy: config.heartbeat.enabled ? undefined : '[heartbeat] enabled = false in subconscious.toml', tickTimeoutMs });
  return {
    mcp,
    approvals,
    agent,
    rpcMethods: [
      ...tasksRpcMethods(tasks.service),
      ...agentRpcMethods({ approvals, mcp }),
      ...usageRpcMethods(deps.db, deps.clock, config.heartbeat.timezone ?? systemTimeZone()),
    ],
    close: async () => {
      // Runs started outside a tick (approved escalations) stop before their tools go away.
      await agent.cancelAll('external');
      await mcp.close();
    },
  };
}
