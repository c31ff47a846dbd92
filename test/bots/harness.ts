/**
 * A real bots host for tests: a store (SQLite or Postgres) with the bots migrations, the model
 * layer pointed at the scripted model server on loopback, a real MCP server (the filesystem
 * server from npm over a temp folder), the approval store, the agent runner, the host and its
 * RPC dispatcher — all on one FakeClock. Every event the host emits is recorded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { createCoordinator, type Coordinator } from '../../src/coordination/index.js';
import { createBotsHost, botsMigrations, parseBotsConfig, type BotsConfig, type BotsEmit, type BotsHost, type BotsTables } from '../../src/bots/index.js';
import { EventBus, FakeClock, RpcDispatcher, silentLogger, uuid, type BusEvent, type RpcMethod, type RpcResponse } from '../../src/core/index.js';
import { createLlm } from '../../src/llm/index.js';
import type { MemoryNotificationFeed } from '../../src/memory/index.js';
import { implement } from '../../src/protocol/contract.js';
import { botsContract, type BotsEvents, type Bot } from '../../src/protocol/bots.js';
import { applyMigrations, tablesView, type DialectName } from '../../src/store/index.js';
import type { Kysely } from 'kysely';
import { filesystemServer } from '../support/mcp-servers.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, type TestStore } from '../support/stores.js';

export { UNTIL, until } from '../support/until.js';

export type HostEvent = { [K in keyof BotsEvents]: { type: K; data: BotsEvents[K] } }[keyof BotsEvents];

export interface BotsHarness {
  store: TestStore;
  db: Kysely<BotsTables>;
  clock: FakeClock;
  model: ModelServer;
  approvals: ApprovalStore;
  runner: AgentRunner;
  host: BotsHost;
  /** The host's coordinator (bot runs are its `bots.run` jobs). */
  coordinator: Coordinator;
  /** Another worker's coordinator on the same database (a second daemon), stopped at dispose. */
  newCoordinator(): Promise<Coordinator>;
  rpc: RpcDispatcher;
  events: HostEvent[];
  /** Called synchronously on every event the host emits (to observe state at that very instant). */
  listen(fn: (e: HostEvent) => void): () => void;
  /** What `presence()` answers (a page or client attached). */
  present: { value: boolean };
  /** The folder the filesystem MCP server may touch. */
  dir: string;
  call<T = unknown>(method: string, params?: unknown): Promise<T>;
  /** The raw JSON-RPC response (errors included). */
  raw(method: string, params?: unknown): Promise<RpcResponse>;
  createBot(name: string, extra?: Record<string, unknown>): Promise<Bot>;
  dispose(): Promise<void>;
}

/** One MCP manager per test file (starting the server is slow on a busy machine). */
export type SharedMcp = { mcp: McpManager; dir: string; close(): Promise<void> };

export async function sharedMcp(): Promise<SharedMcp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bots-fs-'));
  const mcp = new McpManager({ servers: [filesystemServer(dir)], clock: new FakeClock() });
  return {
    mcp,
    dir,
    async close() {
      await mcp.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `sharedMcp()` for one test file: started before its tests, closed after them (read `.value` in a test). */
export function sharedMcpForFile(): { value?: SharedMcp } {
  const holder: { value?: SharedMcp } = {};
  beforeAll(async () => {
    holder.value = await sharedMcp();
  });
  afterAll(async () => {
    await holder.value?.close();
  });
  return holder;
}

export async function createBotsHarness(opts: {
  dialect?: DialectName;
  mcp: { mcp: McpManager; dir: string };
  config?: Partial<BotsConfig>;
  present?: boolean;
  start?: boolean;
  /** The memory world's notifications feed (the Subconscious thread's source). */
  notifications?: MemoryNotificationFeed;
}): Promise<BotsHarness> {
  const store = await openTestStore(opts.dialect ?? 'sqlite');
  await applyMigrations(store.db, store.dialect, botsMigrations);
  const db = tablesView<BotsTables>(store.db);
  const clock = new FakeClock();
  const model = await startModelServer();
  const endpoint = { baseUrl: model.baseUrl, model: 'scripted-model', timeoutMs: 30_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid });
  const bus = new EventBus(() => clock.now());
  const approvals = new ApprovalStore({ db: store.db, clock, ids: uuid, events: bus });
  const runner = new AgentRunner({ llm, mcp: opts.mcp.mcp, approvals, clock, ids: uuid, events: bus });
  const events: HostEvent[] = [];
  const listeners = new Set<(e: HostEvent) => void>();
  const emit: BotsEmit = (type, data) => {
    const e = { type, data } as HostEvent;
    events.push(e);
    for (const l of listeners) l(e);
    bus.emit(type, data);
  };
  const present = { value: opts.present ?? true };
  const config = parseBotsConfig({ next_job_delay_ms: 0, ...opts.config });
  const coordinators: Coordinator[] = [];
  const newCoordinator = async () => {
    const c = await createCoordinator({ store, clock, ids: uuid });
    coordinators.push(c);
    return c;
  };
  const coordinator = await newCoordinator();
  const host = createBotsHost({
    coordinator,
    db,
    // As the daemon wires it: on a SQLite file, triage's reads of many threads run on the read thread.
    ...(store.reads ? { reads: tablesView<BotsTables>(store.reads) } : {}),
    clock,
    ids: uuid,
    runner,
    approvals,
    emit,
    log: silentLogger,
    presence: () => present.value,
    config,
    mcpServers: () => ['fs'],
    notifications: () => opts.notifications,
  });
  const rpc = new RpcDispatcher();
  for (const m of implement(botsContract, host.rpc)) rpc.add(m as RpcMethod);
  if (opts.start !== false) await host.start();
  let seq = 0;
  const raw = async (method: string, params: unknown = {}) => (await rpc.handle({ jsonrpc: '2.0', id: ++seq, method, params })) as RpcResponse;
  const call = async <T>(method: string, params: unknown = {}): Promise<T> => {
    const res = await raw(method, params);
    if ('error' in res) throw new Error(`${method} failed: ${res.error.message}`);
    return res.result as T;
  };
  return {
    store,
    db,
    clock,
    model,
    approvals,
    runner,
    host,
    coordinator,
    newCoordinator,
    rpc,
    events,
    listen: (fn) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    present,
    dir: opts.mcp.dir,
    raw,
    call,
    createBot: (name: string, extra: Record<string, unknown> = {}) => call<Bot>('bots.create', { name, tools: ['fs'], ...extra }),
    async dispose() {
      await host.stop();
      for (const c of coordinators) await c.stop().catch(() => undefined);
      await runner.cancelAll();
      await model.close();
      await store.dispose();
    },
  };
}

/** Every bots_* table's rows, sorted, to prove a refused call changed nothing. */
export async function dumpTables(db: Kysely<BotsTables>): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  const tables = [
    'bots_bots',
    'bots_threads',
    'bots_thread_members',
    'bots_messages',
    'bots_tasks',
    'bots_approvals',
    'bots_routines',
    'bots_thread_activity',
    'bots_notes',
    'bots_send_keys',
  ] as const;
  for (const t of tables) {
    const rows = (await db.selectFrom(t).selectAll().execute()) as Record<string, unknown>[];
    out[t] = rows.map((r) => JSON.stringify(r, Object.keys(r).sort())).sort();
  }
  return out;
}

/** A gate a scripted model reply waits on (a run that lasts until the test says). */
export function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

export type { BusEvent };
