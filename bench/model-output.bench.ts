/**
 * `npm run bench:model-output` (issue 19 §6): the corpus of realistic small-model replies
 * (`devtools/model-replies.ts`) served by the scripted model server on loopback, read by each
 * world's own code (real HTTP, real AI SDK, output guard, parser, repair retry). Per world:
 * parsed correctly / failed closed / wrong action — a reply read as something it is not, or a
 * reply that should fail read as an answer (the goal is 0). The tests under test/model-output/
 * drive the same replies through whole ticks and check that nothing moved on a failure.
 *
 * Then the calls a chatty model (one whose every reply is prose, never the JSON asked for) costs
 * on an idle day in the tasks world, ticking every 5 minutes: driven by the engine's scheduler
 * (failure backoff: cadence × 2^(n-1), capped at an hour) against a tick every 5 minutes without it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentRunner, ApprovalStore, McpManager } from '../src/agent/index.js';
import { EventBus, FakeClock, silentLogger, uuid } from '../src/core/index.js';
import { Instance, Scheduler, type EngineTables } from '../src/engine/index.js';
import { StoreCheckpointer, type GraphTables } from '../src/graph/index.js';
import { createLlm, type LedgerTables, type LlmService } from '../src/llm/index.js';
import { MemoryStore, type MemoryTables } from '../src/memory/index.js';
import { openStore, tablesView, type Store } from '../src/store/index.js';
import { productModules } from '../src/app/modules.js';
import { actionablesReplySchema } from '../src/worlds/conscious/schema.js';
import { parseVerdict, pulseReplySchema } from '../src/worlds/heartbeat/pulse.js';
import { createMemoryWorld, DEFAULT_MEMORY_WORLD_SETTINGS, type MemoryWorldTables } from '../src/worlds/memory/index.js';
import { reflectSteering, steeringPrompt } from '../src/worlds/steering/reflect.js';
import { evaluateBatch } from '../src/worlds/tasks/evaluate.js';
import { taskLine } from '../src/worlds/tasks/prompts.js';
import { createTasksWorld, type TasksTables } from '../src/worlds/tasks/index.js';
import { CORPUS_WORLDS, INJECTED_DIRECTIVE, corpusFor, scriptFor, type CorpusEntry, type CorpusWorld } from '../devtools/model-replies.js';
import { startModelServer, type ModelServer } from '../devtools/model-server.js';

type Read = { kind: 'parsed'; value: string } | { kind: 'failed' };
const ID = 'task-1';

interface Rig {
  workspace: string;
  store: Store;
  server: ModelServer;
  clock: FakeClock;
  llm: LlmService;
  close(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-output-'));
  writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '# Heartbeat\n');
  const store = await openStore({ workspace, migrations: productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : [])) });
  const server = await startModelServer({ models: ['local'] });
  const clock = new FakeClock(Date.UTC(2026, 0, 5, 0, 2));
  const endpoint = { baseUrl: server.baseUrl, model: 'local', timeoutMs: 120_000 };
  const llm = createLlm({
    models: { local: endpoint, agent: endpoint },
    db: tablesView<LedgerTables>(store.db),
    clock,
    ids: uuid,
    probeCacheMs: 0,
    retryDelaysMs: [],
  });
  return {
    workspace,
    store,
    server,
    clock,
    llm,
    async close() {
      await server.close();
      await store.close();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/** How each world reads one reply (its own code path from the call to the value it acts on). */
const readers: Record<Exclude<CorpusWorld, 'memory'>, (r: Rig) => Promise<Read>> = {
  async tasks(r) {
    const line = taskLine({ id: ID, title: 'Check the inbox for anything urgent', needs_tools: false, recurrence: 'cron:*/5 * * * *' });
    const { decisions } = await evaluateBatch(r.llm, { world: 'tasks', signal: new AbortController().signal, now: () => r.clock.now() }, '# Situation\n', [
      { id: ID, line },
    ]);
    return { kind: 'parsed', value: decisions[0]!.decision };
  },
  async conscious(r) {
    const { value } = await r.llm.object(
      { world: 'conscious', purpose: 'conscious_extract', role: 'local' },
      { prompt: 'Memory: your electricity bill is due Friday.', schema: actionablesReplySchema },
    );
    return { kind: 'parsed', value: value.map((a) => a.title).join(',') };
  },
  async heartbeat(r) {
    const { text } = await r.llm.text(
      { world: 'heartbeat', purpose: 'pulse', role: 'local', retry: false },
      { prompt: 'digest', maxOutputTokens: 180, maxTokensKey: 'worlds.heartbeat.pulse_max_output_tokens', jsonSchema: pulseReplySchema },
    );
    const verdict = parseVerdict(text, [ID]);
    return verdict.invalid ? { kind: 'failed' } : { kind: 'parsed', value: verdict.verdict };
  },
  async steering(r) {
    const rows = [1, 2].map((seq) => ({
      cycle_id: `c${seq}`,
      seq,
      input_tokens: 40,
      budget_tokens: 200,
      summary: seq === 1 ? `Request 1: ${INJECTED_DIRECTIVE}` : 'Request 2: reconcile the Acme invoices.',
      summary_tokens: 20,
      attempts: 0,
      truncated: false,
      forwarded: false,
      created_at: 0,
    }));
    const out = await reflectSteering(r.llm, { world: 'steering', role: 'local' }, steeringPrompt({ rows, mutations: [], current_cycle: 2, reviewed_seq: 0 }));
    return { kind: 'parsed', value: out.outcome === 'none' ? 'NONE' : out.text };
  },
};

/** The memory world's decision agent is a tool loop: the whole world's tick, its baseline and outputs. */
async function readMemory(r: Rig, entry: CorpusEntry): Promise<Read> {
  const events = new EventBus(() => r.clock.now());
  const memory = new MemoryStore({ db: tablesView<MemoryTables>(r.store.db), dialect: r.store.dialect, clock: r.clock, ids: uuid });
  const mcp = new McpManager({ servers: [], clock: r.clock });
  const approvals = new ApprovalStore({ db: r.store.db as never, clock: r.clock, ids: uuid, events });
  const runner = new AgentRunner({ llm: r.llm, mcp, approvals, clock: r.clock, ids: uuid, events });
  const world = createMemoryWorld({
    db: tablesView<MemoryWorldTables>(r.store.db),
    memory,
    agent: runner,
    settings: () => DEFAULT_MEMORY_WORLD_SETTINGS,
    clock: r.clock,
    ids: uuid,
    emit: () => undefined,
    log: silentLogger,
  });
  const instance = new Instance(world, {
    db: tablesView<EngineTables>(r.store.db),
    llm: r.llm,
    clock: r.clock,
    ids: uuid,
    events,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(tablesView<GraphTables>(r.store.db), r.clock),
  });
  const put = (id: string, title: string, body: string) => memory.storeDocument({ namespace: 'mail', external_id: id, title, body, source_kind: 'email' });
  try {
    await put('old', 'Old newsletter', 'nothing');
    await instance.tick(); // the first baseline
    await r.clock.advance(15 * 60_000);
    await put('bill', 'Electricity bill', 'Your electricity bill of 84 EUR is due Friday.');
    r.server.handle((req) => ((req.body?.messages ?? []).some((m) => m.role === 'tool') ? { text: 'Notified the user.' } : scriptFor(entry.reply, 'bill')));
    const before = (await world.service.baseline())?.id;
    const outcome = await instance.tick();
    const moved = (await world.service.baseline())?.id !== before;
    const notified = (await world.service.notifications()).length > 0;
    if (outcome.kind !== 'committed') return moved || notified ? { kind: 'parsed', value: 'moved on a failure' } : { kind: 'failed' };
    return { kind: 'parsed', value: notified ? 'notified' : 'nothing' };
  } finally {
    await instance.stop();
    await runner.cancelAll();
    await mcp.close();
  }
}

interface Tally {
  world: CorpusWorld;
  replies: number;
  parsed: number;
  failedClosed: number;
  wrong: string[];
  calls: number;
}

async function corpusRun(world: CorpusWorld): Promise<Tally> {
  const tally: Tally = { world, replies: 0, parsed: 0, failedClosed: 0, wrong: [], calls: 0 };
  for (const entry of corpusFor(world)) {
    const r = await rig();
    try {
      r.server.handle(() => scriptFor(entry.reply, ID));
      let read: Read;
      try {
        read = world === 'memory' ? await readMemory(r, entry) : await readers[world](r);
      } catch {
        read = { kind: 'failed' };
      }
      tally.replies++;
      tally.calls += r.server.chatRequests.length;
      if (read.kind === 'failed' && entry.expect === 'failed') tally.failedClosed++;
      else if (read.kind === 'parsed' && entry.expect === 'parsed' && read.value === entry.value) tally.parsed++;
      else tally.wrong.push(`${entry.shape} → ${read.kind === 'parsed' ? JSON.stringify(read.value) : 'failed'}`);
    } finally {
      await r.close();
    }
  }
  return tally;
}

/** An idle day with a model that never answers in JSON: the evaluation calls (and repairs) it costs. */
async function chattyDay(withScheduler: boolean): Promise<{ calls: number; ticks: number; failures: number }> {
  const r = await rig();
  const events = new EventBus();
  const world = createTasksWorld({
    db: tablesView<TasksTables>(r.store.db),
    clock: r.clock,
    ids: uuid,
    events,
    log: silentLogger,
    workspace: r.workspace,
    models: r.llm,
    settings: { intervalMinutes: 5, inferenceEnabled: true, contextBudgetTokens: 40_000, timezone: 'UTC', reevaluateUnchangedAfterMinutes: 360 },
  });
  await world.service.addTask({ title: 'Check the inbox for anything urgent' });
  r.server.handle(() => ({ text: 'Sure! I checked everything and all the tasks look fine, nothing to do right now.' }));
  const instance = new Instance(world, {
    db: tablesView<EngineTables>(r.store.db),
    llm: r.llm,
    clock: r.clock,
    ids: uuid,
    events,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(tablesView<GraphTables>(r.store.db), r.clock),
  });
  let ticks = 0;
  let failures = 0;
  const count = (kind: string) => {
    ticks++;
    if (kind === 'failed') failures++;
  };
  const day = 24 * 60;
  if (withScheduler) {
    const scheduler = new Scheduler(() => [instance], r.clock, silentLogger, { onOutcome: (o) => count(o.kind) });
    scheduler.start();
    for (let minute = 0; minute < day; minute++) {
      await settle(scheduler);
      await r.clock.advance(60_000);
    }
    await settle(scheduler);
    await scheduler.stop();
  } else {
    for (let minute = 0; minute < day; minute += 5) {
      count((await instance.tick()).kind);
      await r.clock.advance(5 * 60_000);
    }
  }
  const calls = await tablesView<LedgerTables>(r.store.db)
    .selectFrom('model_calls')
    .select('purpose')
    .where('purpose', 'in', ['evaluate', 'evaluate_repair'])
    .execute();
  await instance.stop();
  await world.close?.();
  await r.close();
  return { calls: calls.length, ticks, failures };
}

/** Let the scheduler's pass and any tick it started finish (real time: the model server is real HTTP). */
async function settle(scheduler: Scheduler): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  for (let i = 0; i < 2000 && scheduler.inFlight() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 2));
  await new Promise((resolve) => setImmediate(resolve));
}

console.log('model-output corpus: each reply served by the scripted model server, read by the world’s own code');
console.log('world       replies  parsed  failed-closed  wrong  model-calls');
let wrong = 0;
for (const world of CORPUS_WORLDS) {
  const t = await corpusRun(world);
  wrong += t.wrong.length;
  console.log(
    [
      world.padEnd(10),
      String(t.replies).padStart(7),
      String(t.parsed).padStart(7),
      String(t.failedClosed).padStart(14),
      String(t.wrong.length).padStart(6),
      String(t.calls).padStart(12),
    ].join(' '),
  );
  for (const w of t.wrong) console.log(`    wrong: ${w}`);
}
console.log(`wrong actions in all: ${wrong}`);
console.log('');
console.log('a chatty model (every reply prose, never the JSON) on an idle day, tasks world every 5 minutes, 4 tasks:');
const backedOff = await chattyDay(true);
const every = await chattyDay(false);
console.log(
  `  with the engine's failure backoff (scheduler): ${backedOff.ticks} ticks (${backedOff.failures} failed), ${backedOff.calls} evaluation calls (repairs included)`,
);
console.log(
  `  a tick every 5 minutes (no backoff):           ${every.ticks} ticks (${every.failures} failed), ${every.calls} evaluation calls (repairs included)`,
);
