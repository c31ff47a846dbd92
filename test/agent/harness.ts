/**
 * A real agent stack for tests: a store (SQLite or Postgres), the model layer pointed at the
 * scripted model server on loopback, the filesystem MCP server from npm over a temp folder,
 * the approval store and the runner, all on one FakeClock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventBus, FakeClock, uuid, type BusEvent } from '../../src/core/index.js';
import { createLlm, type LlmService } from '../../src/llm/index.js';
import type { DialectName } from '../../src/store/index.js';
import { AgentRunner, ApprovalStore, McpManager, type McpServerInput, type Run, type RunEvent } from '../../src/agent/index.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { filesystemServer } from '../support/mcp-servers.js';
import { openTestStore, type TestStore } from '../support/stores.js';

export { filesystemServer, memoryServer, packageBin } from '../support/mcp-servers.js';

export interface Harness {
  store: TestStore;
  clock: FakeClock;
  model: ModelServer;
  llm: LlmService;
  mcp: McpManager;
  approvals: ApprovalStore;
  runner: AgentRunner;
  bus: EventBus;
  busEvents: BusEvent[];
  /** The folder the filesystem server may touch. */
  dir: string;
  dispose(): Promise<void>;
}

export async function createHarness(opts: { dialect?: DialectName; servers?: (dir: string) => McpServerInput[] } = {}): Promise<Harness> {
  const store = await openTestStore(opts.dialect ?? 'sqlite');
  const clock = new FakeClock();
  const model = await startModelServer();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-agent-'));
  const endpoint = { baseUrl: model.baseUrl, model: 'scripted-model', timeoutMs: 30_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid });
  const mcp = new McpManager({ servers: opts.servers ? opts.servers(dir) : [filesystemServer(dir)], clock });
  const bus = new EventBus(() => clock.now());
  const busEvents: BusEvent[] = [];
  bus.subscribe((e) => busEvents.push(e));
  const approvals = new ApprovalStore({ db: store.db, clock, ids: uuid, events: bus });
  const runner = new AgentRunner({ llm, mcp, approvals, clock, ids: uuid, events: bus });
  return {
    store,
    clock,
    model,
    llm,
    mcp,
    approvals,
    runner,
    bus,
    busEvents,
    dir,
    async dispose() {
      await runner.cancelAll();
      await mcp.close();
      await model.close();
      await store.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolve with the first event of `type` (matching `where`) that the run emits. */
export function nextEvent<T extends RunEvent['type']>(
  run: Run,
  type: T,
  where: (e: Extract<RunEvent, { type: T }>) => boolean = () => true,
): Promise<Extract<RunEvent, { type: T }>> {
  return new Promise((resolve) => {
    const off = run.events.subscribe((e) => {
      if (e.type === type && where(e as Extract<RunEvent, { type: T }>)) {
        off();
        resolve(e as Extract<RunEvent, { type: T }>);
      }
    });
  });
}

/** Every event a run emits, collected. */
export function collect(run: Run): RunEvent[] {
  const events: RunEvent[] = [];
  run.events.subscribe((e) => events.push(e));
  return events;
}

/** The names of the tools offered in a recorded chat request. */
export function offeredTools(model: ModelServer, index: number): string[] {
  return (model.chatRequests[index]?.body?.tools ?? []).map((t) => t.function.name).sort();
}

/** The content of the tool messages sent back to the model in a recorded chat request. */
export function toolMessages(model: ModelServer, index: number): string[] {
  return (model.chatRequests[index]?.body?.messages ?? [])
    .filter((m) => m.role === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

export async function ledgerRows(h: Harness, world: string) {
  return h.store.db.selectFrom('model_calls').selectAll().where('world', '=', world).orderBy('at').execute();
}
