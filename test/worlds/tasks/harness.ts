/**
 * The tasks world on real parts: a store (SQLite or Postgres), the model layer against the
 * scripted model server on loopback, the real agent runner with the filesystem MCP server from
 * npm over the workspace, the engine's `Instance` with the store checkpointer, one FakeClock.
 *
 * `local` and `agent` roles use different model names so a scripted handler (and assertions on
 * `server.requests`) can tell an evaluation or text execution from an agent step.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { EventBus, FakeClock, silentLogger, uuid, type BusEvent } from '../../../src/core/index.js';
import { createLlm, type LlmService } from '../../../src/llm/index.js';
import { AgentRunner, ApprovalStore, McpManager, type McpServerInput } from '../../../src/agent/index.js';
import { Instance } from '../../../src/engine/index.js';
import { createCoordinator, type Coordinator } from '../../../src/coordination/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import type { DialectName } from '../../../src/store/index.js';
import { createTasksWorld, type MemoryChanges, type TasksSettings, type TasksWorld } from '../../../src/worlds/tasks/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

const require = createRequire(import.meta.url);

export const LOCAL_MODEL = 'local-model';
export const AGENT_MODEL = 'agent-model';

export function packageBin(pkg: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = require(manifestPath) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!;
  return path.join(path.dirname(manifestPath), bin);
}

export interface TasksHarness {
  store: TestStore;
  clock: FakeClock;
  server: ModelServer;
  llm: LlmService;
  mcp: McpManager | undefined;
  runner: AgentRunner | undefined;
  approvals: ApprovalStore | undefined;
  /** This worker's coordinator: approved actions are its `tasks.approved_action` jobs (its job loop runs them). */
  coordinator: Coordinator;
  world: TasksWorld;
  instance: Instance;
  /** What the instance was built with (a "restarted" Instance over the same world and store). */
  engineDeps: ConstructorParameters<typeof Instance>[1];
  events: BusEvent[];
  settings: TasksSettings;
  dispose(): Promise<void>;
}

export interface HarnessOptions {
  dialect?: DialectName;
  /** Wire the real agent runner with the filesystem MCP server (default true). */
  agent?: boolean;
  settings?: Partial<TasksSettings>;
  /** Reuse an existing store (a "restarted process"). */
  store?: TestStore;
  timeoutMs?: number;
  /** A memory store (its tables migrated by the caller). */
  memoryStore?: MemoryChanges | undefined;
  /** More MCP servers beside `fs` (a skill a test can break). */
  servers?: McpServerInput[];
  /** The clock (default a new FakeClock), when something else made before the harness needs it too. */
  clock?: FakeClock;
  /** Where the local model is reached (default the scripted server; a dead port plays a model that is down). */
  localBaseUrl?: string;
}

export async function createTasksHarness(opts: HarnessOptions = {}): Promise<TasksHarness> {
  const store = opts.store ?? (await openTestStore(opts.dialect ?? 'sqlite'));
  const clock = opts.clock ?? new FakeClock();
  const server = await startModelServer({ models: [LOCAL_MODEL, AGENT_MODEL] });
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const llm = createLlm({
    models: {
      local: { baseUrl: opts.localBaseUrl ?? server.baseUrl, model: LOCAL_MODEL, timeoutMs },
      agent: { baseUrl: server.baseUrl, model: AGENT_MODEL, timeoutMs },
    },
    db: store.db,
    clock,
    ids: uuid,
    probeCacheMs: 0,
  });
  const bus = new EventBus(() => clock.now());
  const events: BusEvent[] = [];
  bus.subscribe((e) => events.push(e));
  let mcp: McpManager | undefined;
  let runner: AgentRunner | undefined;
  let approvals: ApprovalStore | undefined;
  if (opts.agent !== false) {
    mcp = new McpManager({
      servers: [
        { name: 'fs', command: process.execPath, args: [packageBin('@modelcontextprotocol/server-filesystem'), store.workspace] },
        ...(opts.servers ?? []),
      ],
      clock,
    });
    approvals = new ApprovalStore({ db: store.db, clock, ids: uuid, events: bus });
    runner = new AgentRunner({ llm, mcp, approvals, clock, ids: uuid, events: bus });
  }
  const coordinator = await createCoordinator({ store, clock, ids: uuid });
  const settings: TasksSettings = { intervalMinutes: 5, inferenceEnabled: true, contextBudgetTokens: 40_000, timezone: 'UTC', ...opts.settings };
  const world = createTasksWorld({
    db: store.db,
    clock,
    ids: uuid,
    events: bus,
    log: silentLogger,
    workspace: store.workspace,
    settings: () => settings,
    agent: runner,
    approvals,
    skills: mcp,
    models: llm,
    memoryStore: opts.memoryStore,
    coordinator,
  });
  // Approved actions need the agent: without one, no job loop polls the clock (a test may advance it by days).
  if (runner) await world.service.startJobs();
  const engineDeps: ConstructorParameters<typeof Instance>[1] = {
    db: store.db,
    llm,
    clock,
    ids: uuid,
    events: bus,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(store.db, clock),
  };
  const instance = new Instance(world, engineDeps);
  return {
    store,
    clock,
    server,
    llm,
    mcp,
    runner,
    approvals,
    coordinator,
    world,
    instance,
    engineDeps,
    events,
    settings,
    async dispose() {
      await instance.stop();
      await world.close?.();
      // A test that brought its own store may have closed it already.
      await coordinator.stop().catch(() => undefined);
      await runner?.cancelAll();
      await mcp?.close();
      await server.close();
      if (!opts.store) await store.dispose();
    },
  };
}

// ---- reading what the scripted server received -------------------------------------------

export function messagesOf(req: RecordedRequest): { role: string; content: string }[] {
  return (req.body?.messages ?? []).map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '') }));
}

export function systemOf(req: RecordedRequest): string {
  return messagesOf(req).find((m) => m.role === 'system')?.content ?? '';
}

export function userOf(req: RecordedRequest): string {
  return messagesOf(req)
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
}

export const isEvaluation = (req: RecordedRequest) => req.body?.model === LOCAL_MODEL && systemOf(req).includes('background task evaluator');
export const isLocalExecution = (req: RecordedRequest) =>
  req.body?.model === LOCAL_MODEL && systemOf(req).startsWith('You carry out one standing task of a personal assistant as a short text answer');
export const isAgent = (req: RecordedRequest) => req.body?.model === AGENT_MODEL;

/** The due tasks an evaluation prompt lists: id and (unfenced) title, in order. */
export function tasksInPrompt(req: RecordedRequest): { id: string; title: string }[] {
  const out: { id: string; title: string }[] = [];
  const re =
    /- task_id: (\S+)\n {2}intent: [^\n]*\n {2}schedule: [^\n]*\n {2}title: <untrusted-data label="task_title">\n("(?:[^"\\]|\\.)*")\n<\/untrusted-data>/g;
  for (const m of userOf(req).matchAll(re)) out.push({ id: m[1]!, title: JSON.parse(m[2]!) as string });
  return out;
}

/** The task title an agent or execution prompt is about. */
export function fencedTaskTitle(req: RecordedRequest): string | undefined {
  const m = /<untrusted-data label="task_title">\n("(?:[^"\\]|\\.)*")\n<\/untrusted-data>/.exec(userOf(req));
  return m ? (JSON.parse(m[1]!) as string) : undefined;
}

export function toolNames(req: RecordedRequest): string[] {
  return (req.body?.tools ?? []).map((t) => t.function.name);
}

export function hasToolResult(req: RecordedRequest): boolean {
  return (req.body?.messages ?? []).some((m) => m.role === 'tool');
}

/** `target` with some properties replaced; its methods run on the real object (Kysely keeps private fields). */
export function passThrough<T extends object>(target: T, replace: (target: T, prop: string | symbol) => unknown): T {
  return new Proxy(target, {
    get(t, prop) {
      const replaced = replace(t, prop);
      if (replaced !== undefined) return replaced;
      const value = Reflect.get(t, prop, t) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/** How a second worker's runs die: its tool calls happen and never return; its runs' outcomes never reach it. */
export interface RunnerDeath {
  hangAfterWrite?: boolean;
  freezeAfterAnswer?: boolean;
}

/**
 * A second worker's model side for issue 17's take-over tests: its own llm, approvals and agent
 * runner on `clock`, against the harness's database, model server and MCP servers, dying as `death` says.
 */
export function dyingRunner(
  h: TasksHarness,
  clock: FakeClock,
  death: RunnerDeath = {},
): { llm: LlmService; approvals: ApprovalStore; agent: Pick<AgentRunner, 'start'> } {
  const endpoint = { baseUrl: h.server.baseUrl, timeoutMs: 600_000 };
  const llm = createLlm({
    models: { local: { ...endpoint, model: LOCAL_MODEL }, agent: { ...endpoint, model: AGENT_MODEL } },
    db: h.store.db,
    clock,
    ids: uuid,
  });
  const approvals = new ApprovalStore({ db: h.store.db, clock, ids: uuid });
  const mcp = passThrough(h.mcp!, (target, prop) =>
    prop === 'callTool' && death.hangAfterWrite
      ? async (...args: Parameters<McpManager['callTool']>) => {
          await target.callTool(...args); // the effect happens…
          return new Promise<never>(() => undefined); // …and its worker dies before it hears back
        }
      : undefined,
  );
  const real = new AgentRunner({ llm, mcp, approvals, clock, ids: uuid });
  const agent: Pick<AgentRunner, 'start'> = death.freezeAfterAnswer
    ? { start: (options) => ({ ...real.start(options), settled: new Promise<never>(() => undefined) }) }
    : real;
  return { llm, approvals, agent };
}
