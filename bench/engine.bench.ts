/**
 * `npm run bench:engine` — what quiet ticks cost. Figures are printed, never asserted.
 *
 *  1. Several worlds × 5,000 quiet ticks (after 2,000 warm-up ticks each) through the full engine (lease, keys, observe, the commit
 *     checks) on a SQLite file, in memory, and on Postgres when it answers: CPU per tick and the
 *     statements and rows per tick, and model calls (must be 0). Baseline in the same process,
 *     interleaved with the ticks (A B A B …): the world's own observe alone.
 *  2. The scheduler's overhead with a no-op world on a fake clock: CPU per scheduler pass and
 *     per tick it starts, against the bare ticks.
 *  3. The real tasks and heartbeat worlds' quiet ticks (bench/quiet-worlds.ts): CPU against a
 *     bare select of their due index, statements per tick, and on Postgres the statements one
 *     quiet tick sends. BENCH_PART=worlds runs this part alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Kysely } from 'kysely';
import pg from 'pg';
import os from 'node:os';
import path from 'node:path';
import { EventBus, FakeClock, flush, sequentialIds, silentLogger, type Clock } from '../src/core/index.js';
import { Instance, Registry, type EngineDeps, type EngineTables, type World } from '../src/engine/index.js';
import { StoreCheckpointer } from '../src/graph/index.js';
import { createLlm } from '../src/llm/index.js';
import { openStore, tablesView, type AnyTables, type Store } from '../src/store/index.js';
import type { GraphTables } from '../src/graph/index.js';
import type { LedgerTables } from '../src/llm/index.js';
import { StatementCounter } from '../devtools/statement-counter.js';
import { benchRealWorlds } from './quiet-worlds.js';

// Steady state, as in a daemon that has run for a while (see bench/quiet-worlds.ts).
const TICKS = Number(process.env.BENCH_TICKS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2000);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const WORLDS = ['alpha', 'beta', 'gamma', 'delta'];

/**
 * A quiet world: its observe is one indexed read of its own cursor. With `probe`, the same read is
 * its read-only probe (as the conscious, memory and steering worlds do): a quiet tick then takes
 * no lease; without, every tick takes the lease (as the tasks and heartbeat worlds do).
 */
function quietWorld(kind: string, probe = false): World<null, null, null> {
  return {
    kind,
    roles: ['local'],
    intervalMinutes: () => 5,
    ...(probe
      ? {
          probe: async (ctx) => {
            await ctx.state.get('cursor');
            return 'nothing new';
          },
        }
      : {}),
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

function deps(store: Store, clock: Clock, db: Kysely<AnyTables> = store.db): EngineDeps {
  const ids = sequentialIds('b');
  const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'none', timeoutMs: 1000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: tablesView<LedgerTables>(store.db), clock, ids, log: silentLogger });
  return {
    db: tablesView<EngineTables>(db),
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], digits = 3) => `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}`;

/**
 * Engine quiet ticks against the world's observe alone, interleaved: ROUNDS rounds of A (every
 * world ticks TICKS / ROUNDS times) then B (as many bare observes), CPU per call each round; the
 * figures are medians over rounds, with the spread, and the ratio is the median of the rounds'.
 */
async function benchQuietTicks(store: Store, label: string, probe: boolean) {
  const counter = new StatementCounter();
  const db = store.db.withPlugin(counter);
  const clock = new FakeClock();
  const d = deps(store, clock, db);
  const prefix = probe ? 'probe-' : '';
  const instances = WORLDS.map((w) => new Instance(quietWorld(`${prefix}${w}`, probe), d));
  const step = instances[0]!.world.intervalMinutes() * 60_000; // each tick a tick's length later, as the scheduler runs them
  // Warm-up (the JIT and the statement cache, as in a daemon that has run for a while).
  for (let k = 0; k < WARMUP; k++) for (const i of instances) await i.tick();

  // Baseline: the world's observe alone (what any implementation must pay), on the same store.
  const baseWorld = quietWorld(`${prefix}alpha`);
  const baseCtx = {
    state: {
      get: (k: string) => d.db.selectFrom('instance_state').select('value').where('key', '=', `${prefix}alpha:${k}`).executeTakeFirst(),
      set: async () => undefined,
    },
  };
  for (let k = 0; k < WARMUP; k++) await baseWorld.observe(baseCtx as never);

  const callsBefore = await countCalls(store);
  const perRound = Math.max(1, Math.round(TICKS / ROUNDS));
  const ticks: number[] = [];
  const bare: number[] = [];
  const ratios: number[] = [];
  const kinds = new Map<string, number>();
  let statements = 0;
  let rows = 0;
  let bareStatements = 0;
  for (let r = 0; r < ROUNDS; r++) {
    counter.statements = counter.rows = 0;
    let cpu = process.cpuUsage();
    for (let k = 0; k < perRound; k++) {
      for (const i of instances) {
        const o = await i.tick();
        kinds.set(o.kind, (kinds.get(o.kind) ?? 0) + 1);
      }
      clock.set(clock.now() + step);
    }
    ticks.push(cpuMs(cpu) / (perRound * instances.length));
    statements = counter.statements / (perRound * instances.length);
    rows = counter.rows / (perRound * instances.length);
    counter.statements = 0;
    cpu = process.cpuUsage();
    for (let k = 0; k < perRound * instances.length; k++) await baseWorld.observe(baseCtx as never);
    bare.push(cpuMs(cpu) / (perRound * instances.length));
    bareStatements = counter.statements / (perRound * instances.length);
    ratios.push(ticks.at(-1)! / bare.at(-1)!);
  }
  const total = perRound * ROUNDS * instances.length;
  const calls = (await countCalls(store)) - callsBefore;
  const threads = await tablesView<GraphTables>(store.db)
    .selectFrom('graph_threads')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  console.log(
    `\n[${label}, ${probe ? 'worlds with a read-only probe (no lease on a quiet tick)' : 'worlds without a probe (the lease on every tick)'}] ${instances.length} worlds × ${perRound * ROUNDS} quiet ticks = ${total} ticks (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')}), ${ROUNDS} interleaved rounds after ${WARMUP} warm-up ticks per world`,
  );
  console.log(
    `  engine quiet tick:   ${fmt(median(ticks))} ms CPU per world per tick (spread ${spread(ticks)}), ${fmt(statements, 1)} statements, ${fmt(rows, 1)} rows read`,
  );
  console.log(`  baseline (observe):  ${fmt(median(bare))} ms CPU per call (spread ${spread(bare)}), ${fmt(bareStatements, 1)} statement`);
  console.log(
    `  → engine / baseline (CPU): median ${fmt(median(ratios), 1)}× (spread ${spread(ratios, 1)}×); ${store.dialect === 'postgres' ? 'the 0.1 ms budget is for a SQLite file; here the statements count' : `budget 0.1 ms per world: ${median(ticks) <= 0.1 ? 'met' : 'NOT met'}`}`,
  );
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

async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A Postgres store in a schema of its own (dropped after), or null when Postgres does not answer. */
async function openPostgres(): Promise<{ store: Store; close(): Promise<void> } | null> {
  const schema = `engine_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch {
    return null;
  }
  const store = await openStore({ databaseUrl: PG_URL, schema, poolSize: 4 });
  return {
    store,
    async close() {
      await store.close();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    },
  };
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-'));
const part = process.env.BENCH_PART ?? 'all';
try {
  console.log(`subconscious engine benchmark — node ${process.version}, ${os.cpus().length} cores`);
  if (part === 'worlds') await benchRealWorlds({ postgresUrl: (await postgresAnswers()) ? PG_URL : undefined });
  else await benchAll();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function benchAll() {
  const file = await openStore({ workspace: dir });
  await benchQuietTicks(file, 'SQLite file, WAL', true);
  await benchQuietTicks(file, 'SQLite file, WAL', false);
  await benchScheduler(file);
  await file.close();
  const memory = await openStore({ sqliteFile: ':memory:' });
  await benchQuietTicks(memory, 'SQLite :memory:', true);
  await benchQuietTicks(memory, 'SQLite :memory:', false);
  await memory.close();
  const postgres = await openPostgres();
  if (postgres) {
    const name = `Postgres ${PG_URL.replace(/\/\/[^@]*@/, '//')}`;
    await benchQuietTicks(postgres.store, name, true);
    await benchQuietTicks(postgres.store, name, false);
    await postgres.close();
  } else console.log(`\n(Postgres unreachable at ${PG_URL}: its statements per quiet tick not counted)`);
  await benchRealWorlds({ postgresUrl: postgres ? PG_URL : undefined });
}
