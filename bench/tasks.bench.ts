/**
 * `npm run bench:tasks`: what a tasks-world tick costs with 10 / 100 / 1,000 due tasks, against
 * the scripted model server on loopback (real HTTP, real AI SDK, real SQLite). Prints figures;
 * asserts nothing. Expect ONE evaluation call per tick whatever the count, until the context
 * budget forces batches (each call must hold the prompt and its answer: ~1,000 decisions do not
 * fit 40k; the last rows use a small budget on purpose), and the situation report's measured
 * size next to its budget.
 *
 * Then an idle day (issue 10): 288 ticks on a fake clock over a workspace where nothing changes,
 * with the unchanged-task skip (default safety net, 360 min) and without it (0, seed 1's literal
 * behaviour): the evaluation calls of each, from the ledger, and their ratio.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventBus, FakeClock, silentLogger, systemClock, uuid } from '../src/core/index.js';
import { Instance } from '../src/engine/index.js';
import { StoreCheckpointer } from '../src/graph/index.js';
import { createLlm, estimateTokens } from '../src/llm/index.js';
import { openStore, tablesView } from '../src/store/index.js';
import { productModules } from '../src/app/modules.js';
import type { EngineTables } from '../src/engine/index.js';
import type { GraphTables } from '../src/graph/index.js';
import type { LedgerTables } from '../src/llm/index.js';
import type { TasksTables } from '../src/worlds/tasks/index.js';
import { createTasksWorld } from '../src/worlds/tasks/index.js';
import { startModelServer } from '../devtools/model-server.js';

interface Row {
  tasks: number;
  budget: number;
  evalCalls: number;
  /** From the model-call ledger (the figures cost reports use). */
  ledgerCalls: number;
  tokensIn: number;
  tokensOut: number;
  reportTokens: number;
  promptTokens: number;
  tickMs: number;
  observeTasksPerMs: number;
  outcome: string;
}

const TASK_LINES = /- task_id: (\S+)\n/g;

async function run(tasks: number, budget: number): Promise<Row> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-tasks-'));
  // A workspace with some content for the report: a HEARTBEAT.md and a few files.
  writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '# Heartbeat\n');
  for (let i = 0; i < 50; i++) writeFileSync(path.join(workspace, `note-${i}.md`), `note ${i}\n`);
  const store = await openStore({ workspace, migrations: productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : [])) });
  const server = await startModelServer({ models: ['local'] });
  const endpoint = { baseUrl: server.baseUrl, model: 'local', timeoutMs: 120_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: tablesView<LedgerTables>(store.db), clock: systemClock, ids: uuid });
  const events = new EventBus();
  const world = createTasksWorld({
    db: tablesView<TasksTables>(store.db),
    clock: systemClock,
    ids: uuid,
    events,
    log: silentLogger,
    workspace,
    settings: { intervalMinutes: 5, inferenceEnabled: true, contextBudgetTokens: budget, timezone: 'UTC' },
  });
  for (let i = 0; i < tasks; i++) await world.service.addTask({ title: `Check source number ${i} for anything urgent since the last look` });
  const prompts: string[] = [];
  server.handle((req) => {
    const prompt = (req.body?.messages ?? []).map((m) => String(m.content ?? '')).join('\n');
    prompts.push(prompt);
    const ids = [...prompt.matchAll(TASK_LINES)].map((m) => m[1]!);
    return { json: { decisions: ids.map((id) => ({ task_id: id, decision: 'noop', reason: 'nothing new' })) } };
  });
  const instance = new Instance(world, {
    db: tablesView<EngineTables>(store.db),
    llm,
    clock: systemClock,
    ids: uuid,
    events,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(tablesView<GraphTables>(store.db), systemClock),
  });
  const started = performance.now();
  const outcome = await instance.tick();
  const tickMs = performance.now() - started;
  const ledger = await tablesView<LedgerTables>(store.db)
    .selectFrom('model_calls')
    .select(['input_tokens', 'output_tokens'])
    .where('world', '=', 'tasks')
    .execute();

  // Observe alone (0 tokens), on a fresh tick id an hour later: every due task fingerprinted and,
  // nothing having changed, skipped (the path of an idle tick). Due tasks handled per millisecond.
  const t0 = performance.now();
  await world.observe({
    world: 'tasks',
    tickId: uuid(),
    generation: 0,
    startedAt: Date.now() + 3_600_000,
    since: null,
    signal: new AbortController().signal,
    resumed: false,
    tainted: false,
    permit: (mode) => mode,
    llm,
    clock: systemClock,
    ids: uuid,
    log: silentLogger,
    state: { get: async () => undefined, set: async () => undefined },
  });
  const observeMs = performance.now() - t0;

  const first = prompts[0] ?? '';
  const report = first.slice(first.indexOf('# Situation report'), first.indexOf('# Due tasks'));
  await server.close();
  await store.close();
  rmSync(workspace, { recursive: true, force: true });
  return {
    tasks,
    budget,
    evalCalls: prompts.length,
    ledgerCalls: ledger.length,
    tokensIn: ledger.reduce((n, r) => n + Number(r.input_tokens), 0),
    tokensOut: ledger.reduce((n, r) => n + Number(r.output_tokens), 0),
    reportTokens: estimateTokens(report),
    promptTokens: Math.max(...prompts.map(estimateTokens)),
    tickMs,
    observeTasksPerMs: (tasks + 3) / observeMs,
    outcome: `${outcome.kind}: ${outcome.message}`,
  };
}

const cases: [number, number][] = [
  [10, 40_000],
  [100, 40_000],
  [1000, 40_000],
  [100, 4_000],
  [1000, 8_000],
];
console.log('tasks  budget  eval-calls  ledger-tokens-in/out  report-tokens  largest-prompt-tokens  tick-ms  observe-tasks/ms  outcome');
for (const [tasks, budget] of cases) {
  const r = await run(tasks, budget);
  console.log(
    [
      String(r.tasks).padStart(5),
      String(r.budget).padStart(6),
      `${r.evalCalls}${r.ledgerCalls === r.evalCalls ? '' : ` (ledger ${r.ledgerCalls})`}`.padStart(10),
      `${r.tokensIn}/${r.tokensOut}`.padStart(20),
      `${r.reportTokens} (${Math.round((100 * r.reportTokens) / r.budget)}%)`.padStart(13),
      String(r.promptTokens).padStart(21),
      r.tickMs.toFixed(0).padStart(7),
      r.observeTasksPerMs.toFixed(1).padStart(16),
      r.outcome,
    ].join('  '),
  );
}

/** One simulated day of ticks every 5 minutes over an unchanging workspace: the evaluation calls it cost. */
async function idleDay(tasks: number, reevaluateUnchangedAfterMinutes: number): Promise<{ calls: number; tokens: number; ticks: number; ms: number }> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-idle-'));
  writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '# Heartbeat\n- Check the deploy queue\n');
  for (let i = 0; i < 20; i++) writeFileSync(path.join(workspace, `note-${i}.md`), `note ${i}\n`);
  const store = await openStore({ workspace, migrations: productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : [])) });
  const server = await startModelServer({ models: ['local'] });
  const clock = new FakeClock(Date.UTC(2026, 0, 5, 0, 2));
  const endpoint = { baseUrl: server.baseUrl, model: 'local', timeoutMs: 120_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: tablesView<LedgerTables>(store.db), clock, ids: uuid, probeCacheMs: 0 });
  const events = new EventBus();
  const world = createTasksWorld({
    db: tablesView<TasksTables>(store.db),
    clock,
    ids: uuid,
    events,
    log: silentLogger,
    workspace,
    models: llm,
    settings: { intervalMinutes: 5, inferenceEnabled: true, contextBudgetTokens: 40_000, timezone: 'UTC', reevaluateUnchangedAfterMinutes },
  });
  for (let i = 0; i < tasks; i++) await world.service.addTask({ title: `Check source number ${i} for anything urgent` });
  server.handle((req) => {
    const prompt = (req.body?.messages ?? []).map((m) => String(m.content ?? '')).join('\n');
    const ids = [...prompt.matchAll(TASK_LINES)].map((m) => m[1]!);
    return { json: { decisions: ids.map((id) => ({ task_id: id, decision: 'noop', reason: 'nothing new' })) } };
  });
  const instance = new Instance(world, {
    db: tablesView<EngineTables>(store.db),
    llm,
    clock,
    ids: uuid,
    events,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(tablesView<GraphTables>(store.db), clock),
  });
  const ticks = 288;
  const started = performance.now();
  for (let i = 0; i < ticks; i++) {
    await instance.tick();
    await clock.advance(5 * 60_000);
  }
  const ms = performance.now() - started;
  const ledger = await tablesView<LedgerTables>(store.db)
    .selectFrom('model_calls')
    .select(['input_tokens', 'output_tokens'])
    .where('purpose', '=', 'evaluate')
    .execute();
  await world.close?.();
  await server.close();
  await store.close();
  rmSync(workspace, { recursive: true, force: true });
  return { calls: ledger.length, tokens: ledger.reduce((n, r) => n + Number(r.input_tokens) + Number(r.output_tokens), 0), ticks, ms };
}

console.log('');
console.log('idle day: 288 ticks (every 5 min) over a workspace where nothing changes; the 3 system tasks + 1 HEARTBEAT.md line + N user tasks');
console.log('tasks  skip (reevaluate after)  eval-calls/day  ledger-tokens/day  ms/day   calls without ÷ with the skip');
for (const tasks of [10, 100]) {
  const withSkip = await idleDay(tasks, 360);
  const without = await idleDay(tasks, 0);
  const ratio = withSkip.calls ? `${(without.calls / withSkip.calls).toFixed(0)}× fewer calls` : 'no call at all';
  for (const [label, r] of [
    ['on (360 min)', withSkip],
    ['off (0)', without],
  ] as const) {
    console.log(
      [
        String(tasks + 4).padStart(5),
        label.padStart(24),
        String(r.calls).padStart(14),
        String(r.tokens).padStart(17),
        r.ms.toFixed(0).padStart(6),
        label.startsWith('on') ? `  ${without.calls} / ${withSkip.calls} = ${ratio}` : '',
      ].join('  '),
    );
  }
}
