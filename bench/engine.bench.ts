/**
 * `npm run bench:engine` — what quiet ticks cost. Figures are printed, never asserted.
 *
 *  1. Several worlds × 1,000 quiet ticks through the full engine (lease, halt check, graph with
 *     store checkpoints, status update, retention) on a SQLite file: CPU and wall time per tick,
 *     and model calls (must be 0). Baseline in the same process: the world's own observe alone.
 *  2. The scheduler's overhead with a no-op world on a fake clock: CPU per scheduler pass and
 *     per tick it starts, against the bare ticks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventBus, FakeClock, flush, sequentialIds, silentLogger, type Clock } from '../src/core/index.js';
import { Instance, Registry, type EngineDeps, type EngineTables, type World } from '../src/engine/index.js';
import { StoreCheckpointer } from '../src/graph/index.js';
import { createLlm } from '../src/llm/index.js';
import { openStore, tablesView, type Store } from '../src/store/index.js';
import type { GraphTables } from '../src/graph/index.js';
import type { LedgerTables } from '../src/llm/index.js';

const TICKS = Number(process.env.BENCH_TICKS ?? 1000);
const WORLDS = ['alpha', 'beta', 'gamma', 'delta'];

function quietWorld(kind: string): World<null, null, null> {
  return {
    kind,
    roles: ['local'],
    intervalMinutes: () => 5,
    observe: async (ctx) => {
      // A realistic quiet observe: one indexed read of the world's own cursor.
      await ctx.state.get('cursor');
      return { quiet: true, tainted: false, data: null };
    },
    prepareContext: async () => null,
    reflect: async () => {
      throw new Error('a quiet tick must never reflect');
    },
    commit: async () => ({ summary: 'nothing new' }),
  };
}

function deps(store: Store, clock: Clock): EngineDeps {
  const ids = sequentialIds('b');
  const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'none', timeoutMs: 1000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: tablesView<LedgerTables>(store.db), clock, ids, log: silentLogger });
  return {
    db: tablesView<EngineTables>(store.db),
    llm,
    clock,
    ids,
    events: new EventBus(() => clock.now()),
    log: silentLogger,
    checkpointer: new StoreCheckpointer(tablesView<GraphTables>(store.db), clock),
  };
}

function cpuMs(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

const fmt = (n: number, digits = 3) => n.toFixed(digits);

async function benchQuietTicks(store: Store, label: string) {
  const clock = new FakeClock();
  const d = deps(store, clock);
  const instances = WORLDS.map((w) => new Instance(quietWorld(w), d));
  // Warm-up.
  for (const i of instances) for (let k = 0; k < 20; k++) await i.tick();

  // Baseline: the world's observe alone (what any implementation must pay).
  const baseWorld = quietWorld('alpha');
  const baseCtx = {
    state: {
      get: (k: string) => d.db.selectFrom('instance_state').select('value').where('key', '=', `alpha:${k}`).executeTakeFirst(),
      set: async () => undefined,
    },
  };
  let cpu = process.cpuUsage();
  let wall = performance.now();
  for (let k = 0; k < TICKS; k++) await baseWorld.observe(baseCtx as never);
  const baseCpu = cpuMs(cpu) / TICKS;
  const baseWall = (performance.now() - wall) / TICKS;

  const callsBefore = await countCalls(store);
  cpu = process.cpuUsage();
  wall = performance.now();
  const kinds = new Map<string, number>();
  for (let k = 0; k < TICKS; k++) {
    for (const i of instances) {
      const o = await i.tick();
      kinds.set(o.kind, (kinds.get(o.kind) ?? 0) + 1);
      clock.set(clock.now() + 1);
    }
  }
  const total = TICKS * instances.length;
  const tickCpu = cpuMs(cpu) / total;
  const tickWall = (performance.now() - wall) / total;
  const calls = (await countCalls(store)) - callsBefore;
  const threads = await tablesView<GraphTables>(store.db)
    .selectFrom('graph_threads')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  console.log(`\n[${label}] ${instances.length} worlds × ${TICKS} quiet ticks = ${total} ticks (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')})`);
  console.log(`  engine quiet tick:   ${fmt(tickCpu)} ms CPU, ${fmt(tickWall)} ms wall per tick`);
  console.log(`  baseline (observe):  ${fmt(baseCpu)} ms CPU, ${fmt(baseWall)} ms wall per call`);
  console.log(`  ratio engine/baseline (CPU): ${fmt(tickCpu / baseCpu, 1)}×`);
  console.log(`  model calls during quiet ticks: ${calls}`);
  console.log(`  checkpoint threads left after the run (retention): ${Number(threads.n)}`);
}

async function benchScheduler(store: Store) {
  const clock = new FakeClock();
  const d = deps(store, clock);
  const registry = new Registry(d, { maxSleepMs: 60_000 });
  for (const w of WORLDS) registry.add(quietWorld(`sched-${w}`));
  registry.start();
  await settle();
  const minutes = Number(process.env.BENCH_MINUTES ?? 24 * 60);
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const passesBefore = registry.scheduler.passes;
  for (let m = 0; m < minutes; m++) {
    await clock.advance(60_000);
    await settle();
  }
  const used = cpuMs(cpu);
  const passes = registry.scheduler.passes - passesBefore;
  const statuses = await registry.status();
  const ticks = statuses.reduce((n, s) => n + s.total_ticks, 0);
  await registry.stop();
  // Baseline in the same process: the same number of ticks, called directly (no scheduler).
  const direct = WORLDS.map((w) => new Instance(quietWorld(`direct-${w}`), d));
  const bcpu = process.cpuUsage();
  for (let k = 0; k < ticks; k++) await direct[k % direct.length]!.tick();
  const baseline = cpuMs(bcpu);
  console.log(`\n[scheduler] ${WORLDS.length} no-op worlds, ${minutes} simulated minutes (5-minute cadence)`);
  console.log(`  passes: ${passes}, ticks started: ${ticks} (expected ≈ ${Math.floor(minutes / 5) * WORLDS.length})`);
  console.log(
    `  CPU with scheduler: ${fmt(used, 1)} ms (${fmt(used / ticks)} ms per tick, wall ${fmt((performance.now() - wall) / 1000, 2)} s incl. fake-clock turns)`,
  );
  console.log(`  CPU ticks called directly: ${fmt(baseline, 1)} ms (${fmt(baseline / ticks)} ms per tick)`);
  console.log(`  scheduler overhead: ${fmt(Math.max(0, used - baseline) / passes)} ms per pass, ratio ${fmt(used / baseline, 2)}×`);
}

async function settle() {
  for (let i = 0; i < 10; i++) await flush();
}

async function countCalls(store: Store): Promise<number> {
  const r = await tablesView<LedgerTables>(store.db)
    .selectFrom('model_calls')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-'));
try {
  console.log(`subconscious engine benchmark — node ${process.version}, ${os.cpus().length} cores`);
  const file = await openStore({ workspace: dir });
  await benchQuietTicks(file, 'SQLite file, WAL');
  await benchScheduler(file);
  await file.close();
  const memory = await openStore({ sqliteFile: ':memory:' });
  await benchQuietTicks(memory, 'SQLite :memory:');
  await memory.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
