/**
 * The memory world on real parts: a store (SQLite or Postgres) with the engine's migrations
 * and the memory ones on top, the memory store, the model layer against the scripted model
 * server, the real agent runner with the filesystem MCP server from npm configured (so a run
 * that forgot `servers: []` would offer its tools), the engine's `Instance`, one FakeClock.
 * The runner is wrapped to record the options each run was started with.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { AgentRunner, ApprovalStore, McpManager, type Run, type RunOptions } from '../../../src/agent/index.js';
import { EventBus, FakeClock, silentLogger, uuid, type BusEvent } from '../../../src/core/index.js';
import { Instance } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createLlm, type LlmService } from '../../../src/llm/index.js';
import { MemoryStore, memoryMigrations, type MemoryTables } from '../../../src/memory/index.js';
import type { MemoryEvents } from '../../../src/protocol/memory.js';
import { applyMigrations, tablesView, type DialectName } from '../../../src/store/index.js';
import {
  DEFAULT_MEMORY_WORLD_SETTINGS,
  createMemoryWorld,
  memoryWorldMigrations,
  type MemoryWorld,
  type MemoryWorldSettings,
  type MemoryWorldTables,
} from '../../../src/worlds/memory/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

const require = createRequire(import.meta.url);
export const AGENT_MODEL = 'agent-model';

function packageBin(pkg: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = require(manifestPath) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!;
  return path.join(path.dirname(manifestPath), bin);
}

export interface MemoryHarness {
  store: TestStore;
  clock: FakeClock;
  server: ModelServer;
  llm: LlmService;
  memory: MemoryStore;
  runner: AgentRunner;
  /** The options of every run the world started. */
  runs: RunOptions[];
  world: MemoryWorld;
  instance: Instance;
  events: BusEvent[];
  settings: MemoryWorldSettings;
  dispose(): Promise<void>;
}

export async function createMemoryHarness(opts: { dialect?: DialectName } = {}): Promise<MemoryHarness> {
  const store = await openTestStore(opts.dialect ?? 'sqlite');
  await applyMigrations(store.db, store.dialect, { ...memoryMigrations, ...memoryWorldMigrations });
  const clock = new FakeClock();
  const server = await startModelServer({ models: [AGENT_MODEL] });
  const endpoint = { baseUrl: server.baseUrl, model: AGENT_MODEL, timeoutMs: 20_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid, probeCacheMs: 0, retryDelaysMs: [] });
  const bus = new EventBus(() => clock.now());
  const events: BusEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const mcp = new McpManager({
    servers: [{ name: 'fs', command: process.execPath, args: [packageBin('@modelcontextprotocol/server-filesystem'), store.workspace] }],
    clock,
  });
  const approvals = new ApprovalStore({ db: store.db, clock, ids: uuid, events: bus });
  const runner = new AgentRunner({ llm, mcp, approvals, clock, ids: uuid, events: bus });
  const runs: RunOptions[] = [];
  const agent = {
    start(options: RunOptions): Run {
      runs.push(options);
      return runner.start(options);
    },
  };
  const memory = new MemoryStore({ db: tablesView<MemoryTables>(store.db), dialect: store.dialect, clock, ids: uuid });
  const settings: MemoryWorldSettings = { ...DEFAULT_MEMORY_WORLD_SETTINGS };
  const world = createMemoryWorld({
    db: tablesView<MemoryWorldTables>(store.db),
    memory,
    agent,
    settings: () => settings,
    clock,
    ids: uuid,
    emit: <K extends keyof MemoryEvents>(type: K, data: MemoryEvents[K]) => bus.emit(type, data),
    log: silentLogger,
  });
  const instance = new Instance(world, {
    db: store.db,
    llm,
    clock,
    ids: uuid,
    events: bus,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(store.db, clock),
  });
  return {
    store,
    clock,
    server,
    llm,
    memory,
    runner,
    runs,
    world,
    instance,
    events,
    settings,
    async dispose() {
      await instance.stop();
      await runner.cancelAll();
      await mcp.close();
      await server.close();
      await store.dispose();
    },
  };
}

export function messagesOf(req: RecordedRequest): { role: string; content: string }[] {
  return (req.body?.messages ?? []).map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '') }));
}

export const systemOf = (req: RecordedRequest) => messagesOf(req).find((m) => m.role === 'system')?.content ?? '';
export const userOf = (req: RecordedRequest) =>
  messagesOf(req)
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
export const toolResultsOf = (req: RecordedRequest) =>
  messagesOf(req)
    .filter((m) => m.role === 'tool')
    .map((m) => m.content);
export const toolNames = (req: RecordedRequest) => (req.body?.tools ?? []).map((t) => t.function.name).sort();

/** The text with every fenced block removed (what reached the model outside the fences). */
export function outsideFences(text: string): string {
  return text.replace(/<untrusted-data label="[^"]*">\n"(?:[^"\\]|\\.)*"\n<\/untrusted-data>/g, '');
}
