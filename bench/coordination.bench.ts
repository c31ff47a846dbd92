/**
 * `npm run bench:coordination` — what the coordinator costs on Postgres. Figures are printed,
 * never asserted.
 *
 *  1. Claim + complete throughput through our coordinator (fetch, then completeMany) against
 *     pg-boss used directly (fetch, then complete by ids) on the same database in the same run,
 *     at batch 1 and 50. Each queue first gets a history (`BENCH_HISTORY` jobs sent and drained
 *     through the same calls, not timed) and both sides' tables an ANALYZE, so the rounds run on
 *     tables as a database that has been working has them (see `settle`). Rounds alternate
 *     A B A B; each round sends its jobs first (not timed), then times draining them. Medians and
 *     the spread (min–max) of jobs per second, and the statements per job each side sent while
 *     draining (counted on pg's client).
 *  2. The statements a quiet engine tick sends on Postgres (tick lease, halt check, graph,
 *     status update), counted on pg's client.
 *
 * Needs Postgres (SUBCONSCIOUS_BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/test); each
 * run works in its own schemas and drops them.
 */
import pg from 'pg';
import PgBoss from 'pg-boss';
import { createCoordinator, type Coordinator } from '../src/coordination/index.js';
import { EventBus, FakeClock, sequentialIds, silentLogger, systemClock, uuid } from '../src/core/index.js';
import { Instance, type EngineDeps, type EngineTables, type World } from '../src/engine/index.js';
import { StoreCheckpointer, type GraphTables } from '../src/graph/index.js';
import { createLlm, type LedgerTables } from '../src/llm/index.js';
import { openStore, tablesView, type Store } from '../src/store/index.js';

const PG_URL = process.env.SUBCONSCIOUS_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const JOBS = Number(process.env.BENCH_JOBS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** Rounds at batch 50 take 30–60 ms each: three times as many, so a scheduler hiccup on a shared machine moves the median less. */
const ROUNDS_50 = Number(process.env.BENCH_ROUNDS_50 ?? 3 * ROUNDS);
const HISTORY = Number(process.env.BENCH_HISTORY ?? 5_000);
const QUIET_TICKS = 20;

const run = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const storeSchema = `bench_${run}`;
const oursBoss = `bench_${run}_ours`;
const directBoss = `bench_${run}_direct`;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** Statements sent on every pg client of this process while `on` (pg's Client.query, which Pool and Kysely use). */
const counter = (() => {
  let on = false;
  let n = 0;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    if (on) n++;
    return original.apply(this, args);
  };
  return {
    /** Statements `fn` sent (counted across its awaits: run nothing else meanwhile). */
    async count(fn: () => Promise<void>): Promise<number> {
      n = 0;
      on = true;
      try {
        await fn();
      } finally {
        on = false;
      }
      return n;
    },
  };
})();

interface Drain {
  perSecond: number;
  /** Statements per job while draining (claim + complete). */
  statements: number;
}

/** Time draining `JOBS` jobs (sent before, not timed), counting the statements it sends. */
async function timed(drain: () => Promise<void>): Promise<Drain> {
  const start = performance.now();
  const n = await counter.count(drain);
  return { perSecond: (JOBS / (performance.now() - start)) * 1000, statements: n / JOBS };
}

async function drainOurs(c: Coordinator, queue: string, batch: number): Promise<Drain> {
  for (let i = 0; i < JOBS; i++) await c.send({ queue, payload: { i } });
  return timed(async () => {
    let done = 0;
    while (done < JOBS) {
      const jobs = await c.fetch(queue, { batchSize: batch });
      if (jobs.length === 0) throw new Error(`ours: ${JOBS - done} jobs missing`);
      done += (await c.completeMany(jobs.map((j) => j.id))).length;
    }
  });
}

async function drainDirect(boss: PgBoss, queue: string, batch: number): Promise<Drain> {
  await boss.insert(Array.from({ length: JOBS }, (_, i) => ({ name: queue, data: { payload: { i } } })));
  return timed(async () => {
    let done = 0;
    while (done < JOBS) {
      const jobs = await boss.fetch(queue, { batchSize: batch });
      if (jobs.length === 0) throw new Error(`pg-boss: ${JOBS - done} jobs missing`);
      await boss.complete(
        queue,
        jobs.map((j) => j.id),
      );
      done += jobs.length;
    }
  });
}

/**
 * A working database's tables: finished jobs kept for the retention, and statistics, as
 * autovacuum keeps them. Without this the rounds measured a database's first minute: each run's
 * queues are new, their pg-boss partitions unanalyzed (Postgres then guesses that `name`, the
 * same on every row, picks 0.5 % of them), and a prepared statement keeps the plan made on its
 * sixth run, over a few hundred rows, while the tables grow. The coordinator's claim then updated
 * by scanning the queue's partition or coord_holds (6–8 ms a claim instead of 2), until
 * autovacuum's ANALYZE made Postgres plan again: a minute in production, most of a bench run.
 * Both sides get the same history (through the same calls as the rounds) and the same ANALYZE.
 */
async function settle(ours: Coordinator, boss: PgBoss, queue: string): Promise<void> {
  for (let sent = 0; sent < HISTORY; sent += JOBS) {
    await drainOurs(ours, queue, 50);
    await drainDirect(boss, queue, 50);
  }
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const table of [`${storeSchema}.coord_holds`, `${oursBoss}.job`, `${directBoss}.job`]) await client.query(`ANALYZE ${table}`);
  } finally {
    await client.end();
  }
}

async function throughput(store: Store): Promise<void> {
  const ours = await createCoordinator({ store, clock: systemClock, ids: uuid, bossSchema: oursBoss, log: silentLogger });
  const boss = new PgBoss({ connectionString: PG_URL, schema: directBoss, schedule: false, supervise: false, max: 4 });
  boss.on('error', (err) => console.error('pg-boss:', err));
  await boss.start();
  console.log(
    `claim + complete, ${JOBS} jobs per round after a history of ${HISTORY}, ${ROUNDS} rounds each at batch 1 and ${ROUNDS_50} at 50, interleaved (jobs/s: median, min–max)`,
  );
  try {
    for (const batch of [1, 50]) {
      const queue = `bench.b${batch}`;
      await boss.createQueue(queue, { name: queue, policy: 'standard' });
      const a: Drain[] = [];
      const b: Drain[] = [];
      // A history and ANALYZE, a warm-up round each (plans made on those tables), then A B A B.
      await settle(ours, boss, queue);
      await drainOurs(ours, queue, batch);
      await drainDirect(boss, queue, batch);
      for (let r = 0; r < (batch === 50 ? ROUNDS_50 : ROUNDS); r++) {
        a.push(await drainOurs(ours, queue, batch));
        b.push(await drainDirect(boss, queue, batch));
      }
      const line = (name: string, ds: Drain[]) => {
        const xs = ds.map((d) => d.perSecond);
        return `${name} ${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}), ${median(ds.map((d) => d.statements)).toFixed(2)} stmt/job`;
      };
      const ratio = median(a.map((d) => d.perSecond)) / median(b.map((d) => d.perSecond));
      console.log(`  batch ${String(batch).padStart(2)}: ${line('coordinator', a)} | ${line('pg-boss direct', b)} | ratio ${ratio.toFixed(2)}×`);
    }
  } finally {
    await ours.stop();
    await boss.stop({ graceful: false, wait: true });
  }
}

function quietWorld(kind: string): World<null, null, null> {
  return {
    kind,
    roles: ['local'],
    intervalMinutes: () => 5,
    observe: async (ctx) => {
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

/** Statements per quiet tick through the full engine, with the coordinator's tick leases. */
async function quietTick(store: Store, bossSchema: string): Promise<{ perTick: number }> {
  const clock = new FakeClock();
  const ids = sequentialIds('q');
  const coordinator = await createCoordinator({ store, clock, ids: uuid, bossSchema, log: silentLogger });
  const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'none', timeoutMs: 1000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: tablesView<LedgerTables>(store.db), clock, ids, log: silentLogger });
  const deps: EngineDeps = {
    db: tablesView<EngineTables>(store.db),
    llm,
    clock,
    ids,
    events: new EventBus(() => clock.now()),
    log: silentLogger,
    checkpointer: new StoreCheckpointer(tablesView<GraphTables>(store.db), clock),
    leases: coordinator,
  };
  const instance = new Instance(quietWorld('quiet'), deps);
  for (let i = 0; i < 5; i++) await instance.tick();
  const n = await counter.count(async () => {
    for (let i = 0; i < QUIET_TICKS; i++) {
      await clock.advance(5 * 60_000);
      const outcome = await instance.tick();
      if (outcome.kind !== 'quiet') throw new Error(`expected a quiet tick, got ${outcome.kind}: ${outcome.message}`);
    }
  });
  await coordinator.stop();
  return { perTick: n / QUIET_TICKS };
}

async function main(): Promise<void> {
  const store = await openStore({ databaseUrl: PG_URL, schema: storeSchema, poolSize: 4 });
  try {
    await throughput(store);
    const onPg = await quietTick(store, oursBoss);
    console.log(`quiet engine tick on Postgres: ${onPg.perTick.toFixed(1)} statements per tick (${QUIET_TICKS} ticks, counted on pg's client)`);
  } finally {
    await store.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    for (const s of [storeSchema, oursBoss, directBoss]) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
    await client.end();
  }
}

await main();
