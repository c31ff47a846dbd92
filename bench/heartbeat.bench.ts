/**
 * `npx tsx bench/heartbeat.bench.ts` (`npm run bench:heartbeat`) — what the heartbeat costs.
 * Figures are printed, never asserted.
 *
 *  1. Triage (Tier 0, the tick's observe stage) at 1,000 / 10,000 / 100,000 bots with 1% of them
 *     holding unfinished work, on SQLite and Postgres: time and rows read for
 *       - a quiet tick (no bot due),
 *       - a default tick (what one 30-second tick triages: its pulse and depth limits),
 *       - every candidate in one pass (triage mode, no per-tick limit),
 *     beside a bare indexed select of the same candidate rows (the due heartbeat rows and their
 *     open tasks: the floor), as a ratio.
 *  2. Day cost: 1,000 bots over a simulated day (2,880 ticks) with a realistic mix of
 *     interruptions (restarts mid-run, provider failures, FOLLOWUP: promises, work the pulse
 *     judges idle), against the scripted model server: the heartbeat's model calls and tokens
 *     beside an interval heartbeat (one full model call per bot per 30 minutes at the measured
 *     average prompt size of a full bot call), as a ratio; and how soon resumable work resumed.
 *  3. Crash-resume latency (seed 2 §4, §9.2, §13 acceptance 2), at the default config: a real
 *     daemon (a child process on a SQLite file, devtools/heartbeat-crash-daemon.ts) killed with
 *     SIGKILL while it streams its reply to a person's message, restarted after a few gaps, then
 *     ticked at the default cadence until it resumes: ticks and seconds from when the work became
 *     resumable (the end of the person's 90 s activity window, or the restart when later), and
 *     whether the resume's preamble carried the killed run's checkpoint.
 *
 * BENCH_BOTS (default "1000,10000,100000") sets the triage sizes; BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test) the Postgres server (skipped when unreachable);
 * BENCH_DAY_BOTS (default 1000) the day's bots; BENCH_CRASH_RUNS (default 3) the runs per restart
 * gap; BENCH_DAY=0 / BENCH_CRASH=0 skip parts 2 / 3.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { botsMigrations, type BotsTables } from '../src/bots/index.js';
import { TaskStore } from '../src/bots/task-store.js';
import { createCoordinator, type Coordinator } from '../src/coordination/index.js';
import { ThreadStore } from '../src/bots/thread-store.js';
import { EventBus, FakeClock, silentLogger, uuid } from '../src/core/index.js';
import { Instance } from '../src/engine/index.js';
import { StoreCheckpointer } from '../src/graph/index.js';
import { openStore, tablesView, type DialectName, type Store } from '../src/store/index.js';
import { heartbeatConfig, heartbeatMigrations, maxPulsesPerTick, observe, schedule, type HeartbeatConfig } from '../src/worlds/heartbeat/index.js';
import { launchCrashDaemon } from '../devtools/heartbeat-crash-client.js';
import { populate } from '../devtools/heartbeat-triage-world.js';
import { heartbeatStack, type HeartbeatStack } from '../devtools/heartbeat-stack.js';
import { StatementCounter } from '../devtools/statement-counter.js';
import { startModelServer, type ModelServer } from '../devtools/model-server.js';

const SIZES = (process.env.BENCH_BOTS ?? '10,1000,10000,100000').split(',').map(Number);
/** Quiet ticks through the engine per size (the cost curve), after a warm-up: a daemon's steady state. */
const QUIET_TICKS = Number(process.env.BENCH_QUIET_TICKS ?? 5000);
const QUIET_WARMUP = Number(process.env.BENCH_QUIET_WARMUP ?? 2000);
/** Interleaved triage/floor pairs per size. */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 31);
/** The prompt an interval heartbeat really sends (OpenClaw's, measured side by side in issue 22): ~10.9k tokens. */
const REAL_INTERVAL_PROMPT_TOKENS = 10_900;
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DAY_BOTS = Number(process.env.BENCH_DAY_BOTS ?? 1000);
const RUNS = 5;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench writes and reads every module's tables
type AnyDb = Kysely<any>;
const START = Date.UTC(2026, 0, 5, 0, 0, 0);

// ---- plumbing -----------------------------------------------------------------------------

/** Counts queries and the rows they return (what "rows read" means here). */
interface BenchStore {
  dialect: DialectName;
  store: Store;
  close(): Promise<void>;
}

async function pgReachable(): Promise<boolean> {
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

async function openBenchStore(dialect: DialectName): Promise<BenchStore> {
  const migrations = [botsMigrations, heartbeatMigrations];
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-hb-bench-'));
    const store = await openStore({ sqliteFile: path.join(dir, 'bench.db'), migrations });
    return { dialect, store, close: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
  }
  const schema = `hb_bench_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const store = await openStore({ databaseUrl: PG_URL, schema, poolSize: 4, migrations });
  return {
    dialect,
    store,
    close: async () => {
      await store.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

/** `reads`: the store's read thread, as the daemon wires it (a SQLite file). */
function stack(
  db: AnyDb,
  clock: FakeClock,
  baseUrl: string,
  config: Partial<HeartbeatConfig>,
  coordinator: Coordinator,
  seed = 1,
  reads?: AnyDb,
): HeartbeatStack {
  return heartbeatStack({
    db,
    reads,
    clock,
    coordinator,
    baseUrl,
    config,
    bots: { next_job_delay_ms: 0, history_chars: 60_000 },
    random: rng(seed),
    presence: () => true,
  });
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number, d = 2) => n.toFixed(d);

// ---- 1. triage ----------------------------------------------------------------------------

interface Measure {
  ms: number;
  rows: number;
  queries: number;
}

async function measure(counter: StatementCounter, fn: () => Promise<unknown>): Promise<Measure> {
  const times: number[] = [];
  let rows = 0;
  let queries = 0;
  for (let r = 0; r < RUNS; r++) {
    counter.reset();
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
    rows = counter.rows;
    queries = counter.statements;
  }
  return { ms: median(times), rows, queries };
}

/**
 * A and B run alternately (A B A B …), each round measured alone: medians, spread, and the median
 * of the per-pair ratios (wall time); and the process's CPU per round, every thread's (a read on
 * the store's read thread runs beside the main thread's: the wall time is shorter than the CPU).
 */
async function interleaved(counter: StatementCounter, a: () => Promise<unknown>, b: () => Promise<unknown>, pairs = PAIRS) {
  const ta: number[] = [];
  const tb: number[] = [];
  const ca: number[] = [];
  const cb: number[] = [];
  const cpuSince = (start: NodeJS.CpuUsage) => {
    const d = process.cpuUsage(start);
    return (d.user + d.system) / 1000;
  };
  const ratios: number[] = [];
  const rows = { a: 0, b: 0, qa: 0, qb: 0 };
  await a();
  await b(); // warm-up pair
  for (let i = 0; i < pairs; i++) {
    counter.reset();
    let c0 = process.cpuUsage();
    let t0 = performance.now();
    await a();
    ta.push(performance.now() - t0);
    ca.push(cpuSince(c0));
    rows.a = counter.rows;
    rows.qa = counter.statements;
    counter.reset();
    c0 = process.cpuUsage();
    t0 = performance.now();
    await b();
    tb.push(performance.now() - t0);
    cb.push(cpuSince(c0));
    rows.b = counter.rows;
    rows.qb = counter.statements;
    ratios.push(ta.at(-1)! / tb.at(-1)!);
  }
  const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
  return {
    a: median(ta),
    b: median(tb),
    cpuA: median(ca),
    cpuB: median(cb),
    spreadA: spread(ta),
    spreadB: spread(tb),
    ratio: median(ratios),
    ratioSpread: spread(ratios),
    rows,
  };
}

/**
 * Quiet ticks of the heartbeat world through the engine (lease, keys, observe, commit checks),
 * each a tick's length (`tick_seconds`) after the last, interleaved with a bare indexed select of
 * the due bots (what a quiet tick must read at least): CPU per call, medians over rounds, and
 * statements and rows per tick.
 */
async function quietTicks(db: AnyDb, counter: StatementCounter, s: HeartbeatStack, clock: FakeClock, ticks: number) {
  const instance = new Instance(s.hb.world, {
    db,
    llm: s.llm,
    clock,
    ids: uuid,
    events: new EventBus(() => clock.now()),
    log: silentLogger,
    checkpointer: new StoreCheckpointer(db, clock),
  });
  const step = (await s.hb.core.settings.global()).tick_seconds * 1000;
  const bare = () => db.selectFrom('heartbeat_bots').select('bot_id').where('next_heartbeat_at', '<=', clock.now()).limit(200).execute();
  for (let i = 0; i < QUIET_WARMUP; i++) {
    await instance.tick(); // warm-up (the JIT, the statement cache)
    clock.set(clock.now() + step);
    await bare();
  }
  const rounds = 10;
  const perRound = Math.max(1, Math.round(ticks / rounds));
  const a: number[] = [];
  const b: number[] = [];
  const ratios: number[] = [];
  let quiet = 0;
  let statements = 0;
  let rows = 0;
  for (let r = 0; r < rounds; r++) {
    counter.reset();
    let cpu = process.cpuUsage();
    for (let i = 0; i < perRound; i++) {
      if ((await instance.tick()).kind === 'quiet') quiet++;
      clock.set(clock.now() + step);
    }
    let used = process.cpuUsage(cpu);
    a.push((used.user + used.system) / 1000 / perRound);
    statements += counter.statements;
    rows += counter.rows;
    cpu = process.cpuUsage();
    for (let i = 0; i < perRound; i++) await bare();
    used = process.cpuUsage(cpu);
    b.push((used.user + used.system) / 1000 / perRound);
    ratios.push(a.at(-1)! / b.at(-1)!);
  }
  const spread = (xs: number[], digits = 3) => `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}`;
  const n = perRound * rounds;
  return {
    cpuMs: median(a),
    spread: spread(a),
    bareMs: median(b),
    bareSpread: spread(b),
    ratio: median(ratios),
    ratioSpread: spread(ratios, 1),
    queries: statements / n,
    rows: rows / n,
    quiet,
    ticks: n,
    stepS: step / 1000,
  };
}

async function triageBench(dialect: DialectName, n: number): Promise<string[]> {
  const bench = await openBenchStore(dialect);
  const counter = new StatementCounter();
  const db = (bench.store.db as AnyDb).withPlugin(counter);
  const reads = (bench.store.reads as AnyDb | undefined)?.withPlugin(counter);
  const clock = new FakeClock(START);
  const t0 = performance.now();
  const candidates = await populate(bench.store.db as AnyDb, n, clock.now());
  const filled = (performance.now() - t0) / 1000;
  if (dialect === 'postgres') await sql`ANALYZE`.execute(bench.store.db);
  const s = stack(db, clock, 'http://127.0.0.1:9/v1', {}, await createCoordinator({ store: bench.store, clock, ids: uuid }), 1, reads);
  const settings = await s.hb.core.settings.global();
  const lines: string[] = [];
  try {
    // A quiet tick: nobody due (the clock before every candidate's time).
    // Early enough that the quiet ticks, a tick's length apart, end before any candidate is due.
    const quietClock = new FakeClock(START - 3600_000 - (QUIET_WARMUP + QUIET_TICKS + 200) * 30_000);
    const quietStack = stack(
      db,
      quietClock,
      'http://127.0.0.1:9/v1',
      {},
      await createCoordinator({ store: bench.store, clock: quietClock, ids: uuid }),
      1,
      reads,
    );
    const quiet = await measure(counter, () => observe(quietStack.hb.core, maxPulsesPerTick(settings)));
    const engineQuiet = await quietTicks(db, counter, quietStack, quietClock, QUIET_TICKS);
    await quietStack.close();

    const tick = await measure(counter, () => observe(s.hb.core, maxPulsesPerTick(settings)));
    const obs = await observe(s.hb.core, maxPulsesPerTick(settings));
    const deepTick = obs.plans.length;

    await s.hb.core.settings.setGlobal({ mode: 'triage' });
    const allObs = await observe(s.hb.core, Infinity, { due: n, deep: n });
    const found = allObs.plans.filter((p) => p.triage.kind === 'candidates').length;

    // The floor: the same candidate rows by their indexes, nothing else.
    const floorRound = async () => {
      const due = await db
        .selectFrom('heartbeat_bots')
        .selectAll()
        .where('next_heartbeat_at', '<=', clock.now())
        .orderBy('next_heartbeat_at')
        .limit(n)
        .execute();
      const ids = due.map((r) => String(r.bot_id));
      for (let i = 0; i < ids.length; i += 1000) {
        await db
          .selectFrom('bots_tasks')
          .selectAll()
          .where('bot_id', 'in', ids.slice(i, i + 1000))
          .where((eb) =>
            eb.or([
              eb('status', 'in', ['queued', 'working']),
              eb.and([
                eb('status', '=', 'failed'),
                eb('error_kind', 'in', ['interrupted', 'preempted', 'timeout', 'provider', 'rate_limit', 'approval_expired']),
              ]),
            ]),
          )
          .execute();
      }
    };
    const ab = await interleaved(counter, () => observe(s.hb.core, Infinity, { due: n, deep: n }), floorRound);
    const per = (m: Measure, k: number) => (k ? `${fmt((m.ms * 1000) / k, 0)} µs/bot` : '-');
    lines.push(
      `${dialect.padEnd(8)} ${String(n).padStart(7)} bots  (${candidates.length} with work; filled in ${fmt(filled, 1)} s)`,
      `  quiet tick (none due)         ${fmt(quiet.ms).padStart(8)} ms  ${String(quiet.rows).padStart(6)} rows  ${String(quiet.queries).padStart(5)} queries`,
      `  default tick (${String(deepTick).padStart(3)} triaged)    ${fmt(tick.ms).padStart(8)} ms  ${String(tick.rows).padStart(6)} rows  ${String(tick.queries).padStart(5)} queries  ${per(tick, deepTick)}`,
      `  all ${String(found).padStart(4)} candidates, 1 pass ${fmt(ab.a).padStart(8)} ms  ${String(ab.rows.a).padStart(6)} rows  ${String(ab.rows.qa).padStart(5)} queries  ${per({ ms: ab.a, rows: ab.rows.a, queries: ab.rows.qa }, found)}  (spread ${ab.spreadA} ms)`,
      `  floor: bare indexed select    ${fmt(ab.b).padStart(8)} ms  ${String(ab.rows.b).padStart(6)} rows  ${String(ab.rows.qb).padStart(5)} queries  (spread ${ab.spreadB} ms)`,
      `  → one pass / floor, ${PAIRS} interleaved pairs: median ${fmt(ab.ratio, 2)}× (spread ${ab.ratioSpread}×), wall time`,
      `    CPU, every thread of the process (median): pass ${fmt(ab.cpuA)} ms, floor ${fmt(ab.cpuB)} ms (${fmt(ab.cpuA / ab.cpuB, 2)}×)${dialect === 'sqlite' ? '; the threads’ messages are read on the store’s read thread, beside the main thread' : '; Postgres’ own CPU not included'}`,
      `  engine quiet tick (heartbeat world, none due, ${engineQuiet.quiet}/${engineQuiet.ticks} quiet, ${engineQuiet.stepS} s apart): ${fmt(engineQuiet.cpuMs, 3)} ms CPU (spread ${engineQuiet.spread}), ${fmt(engineQuiet.queries, 1)} statements, ${fmt(engineQuiet.rows, 1)} rows read per tick`,
      `    beside a bare indexed select of the due bots, interleaved: ${fmt(engineQuiet.bareMs, 3)} ms CPU (spread ${engineQuiet.bareSpread}); ratio median ${fmt(engineQuiet.ratio, 1)}× (spread ${engineQuiet.ratioSpread}×); ${dialect === 'postgres' ? 'the 0.1 ms budget is for a SQLite file; here the statements count' : `budget 0.1 ms: ${engineQuiet.cpuMs <= 0.1 ? 'met' : 'NOT met'}`}`,
    );
  } finally {
    await s.close();
    await bench.close();
  }
  return lines;
}

// ---- 2. a day -----------------------------------------------------------------------------

const PERSONA =
  'You are a careful operations teammate. You keep the weekly report, the launch checklist and the customer follow-ups in order. ' +
  'Answer briefly, say what you did and what is left, and ask one question when something is unclear. '.repeat(6);
const HISTORY = [
  'Can you pull last week’s signups and compare them with the week before?',
  'Signups were 1,204 last week against 1,087 the week before (+10.8%). Most of the lift came from the referral channel.',
  'Good. Put that in the weekly report and flag anything unusual in churn.',
  'Added to the report. Churn was flat at 2.1%; one enterprise account downgraded, which I noted with the account owner’s name.',
];

interface Event {
  at: number;
  kind: 'restart' | 'provider' | 'followup' | 'idle';
  bot: number;
}

async function dayBench(label: string, budgets: Partial<HeartbeatConfig>): Promise<string[]> {
  const bench = await openBenchStore('sqlite');
  const db = bench.store.db as AnyDb;
  const clock = new FakeClock(START);
  const models: ModelServer = await startModelServer();
  const random = rng(2026);
  const s = stack(
    db,
    clock,
    models.baseUrl,
    budgets,
    await createCoordinator({ store: bench.store, clock, ids: uuid }),
    99,
    bench.store.reads as AnyDb | undefined,
  );
  const threads = new ThreadStore({ db: tablesView<BotsTables>(db), clock, ids: uuid });
  const tasks = new TaskStore({ db: tablesView<BotsTables>(db), clock, ids: uuid });
  const instance = new Instance(s.hb.world, {
    db,
    llm: s.llm,
    clock,
    ids: uuid,
    events: new EventBus(() => clock.now()),
    log: silentLogger,
    checkpointer: new StoreCheckpointer(db, clock),
  });
  try {
    await s.host.start();
    await s.hb.start();
    const bots: { id: string; thread: string }[] = [];
    for (let i = 0; i < DAY_BOTS; i++) {
      const bot = await s.host.service.createBot({ name: `ops${i}`, persona: PERSONA, tools: [] });
      const thread = await s.host.heartbeat.directThread(bot.id);
      for (const [n, text] of HISTORY.entries())
        await threads.addMessage({ threadId: thread.id, role: n % 2 ? 'bot' : 'user', botId: bot.id, text, status: 'done' });
      bots.push({ id: bot.id, thread: thread.id });
    }

    // The day's interruptions: ~5% of bots cut off by a restart, 3% a provider failure, 2% a
    // FOLLOWUP: promise, 2% work the pulse finds not worth resuming; spread over the day.
    const events: Event[] = [];
    const pick = (share: number, kind: Event['kind']) => {
      for (let i = 0; i < Math.round(DAY_BOTS * share); i++) {
        events.push({ at: START + Math.floor(random() * 22 * 3600_000), kind, bot: Math.floor(random() * DAY_BOTS) });
      }
    };
    pick(0.05, 'restart');
    pick(0.03, 'provider');
    pick(0.02, 'followup');
    pick(0.02, 'idle');
    events.sort((a, b) => a.at - b.at);

    // The scripted models: pulses decide from the digest; bot runs answer (a provider failure once when asked).
    const failNext = new Set<string>();
    models.handle((req) => {
      const body = req.body!;
      const last = body.messages!.at(-1)!.content as string;
      if (body.model === 'pulse-model') {
        // Judge the primary candidate (the first in the digest): its data sits JSON-escaped on the fence's middle line.
        const fenced = last.split('\n').find((l) => l.startsWith('"{'));
        const digest = fenced ? (JSON.parse(JSON.parse(fenced) as string) as { candidates: { title: string }[] }) : { candidates: [] };
        const idle = digest.candidates[0]?.title.includes('(judge idle)') ?? false;
        return {
          json: {
            verdict: idle ? 'idle' : 'resume',
            taskId: null,
            reason: idle ? 'nothing worth doing' : 'unfinished work',
            instruction: '',
            etaMinutes: 0,
            urgency: 'normal',
            confidence: 0.9,
          },
        };
      }
      const user = last.match(/TASK ([\w-]+)/)?.[1];
      if (user && failNext.delete(user)) return { status: 500, message: 'upstream down' };
      if (last.includes('PROMISE')) return { text: 'Started the export; it takes a while.\nFOLLOWUP: 20m — check the export finished and report' };
      return { text: 'Done: the report is updated and the numbers are checked. Nothing else is pending on my side.' };
    });

    const becameResumable = new Map<string, { kind: Event['kind']; at: number }>();
    const TICK = 30_000;
    let eventIndex = 0;
    let ticks = 0;
    const idleAll = async () => {
      for (;;) {
        if (bots.every((b) => s.host.runtime.isIdle(b.id))) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    // The heartbeat log keeps only its newest 200 entries store-wide (seed 2 §10.2): a day of 1,000
    // bots writes far more, so each tick's resumes are collected as they are written.
    type LogRow = { seq: number; rule: string | null; task_id: string | null; bot_id: string; at: number };
    const resumedLog: LogRow[] = [];
    let lastSeq = 0;
    const collectResumes = async () => {
      const rows = await db
        .selectFrom('heartbeat_log')
        .select(['seq', 'rule', 'task_id', 'bot_id', 'at'])
        .where('outcome', '=', 'resumed')
        .where('seq', '>', lastSeq)
        .orderBy('seq')
        .execute();
      for (const r of rows) {
        resumedLog.push({ seq: Number(r.seq), rule: r.rule, task_id: r.task_id, bot_id: r.bot_id, at: Number(r.at) });
        lastSeq = Math.max(lastSeq, Number(r.seq));
      }
    };
    const t0 = performance.now();
    for (let now = START; now < START + 24 * 3600_000; now += TICK) {
      while (eventIndex < events.length && events[eventIndex]!.at <= clock.now()) {
        const e = events[eventIndex++]!;
        const b = bots[e.bot]!;
        if (!s.host.runtime.isIdle(b.id)) continue;
        if (e.kind === 'restart' || e.kind === 'idle') {
          // As restart repair leaves it: the request, a reply cut off mid-stream, the task failed + interrupted.
          const title = e.kind === 'idle' ? 'Tidy old drafts (judge idle)' : 'Update the weekly report';
          const user = await threads.addMessage({ threadId: b.thread, role: 'user', text: title, status: 'done' });
          const t = await tasks.create({ botId: b.id, threadId: b.thread, title, prompt: title, source: 'user', requestMessageId: user.id });
          const m = await threads.addMessage({
            threadId: b.thread,
            role: 'bot',
            botId: b.id,
            taskId: t.id,
            text: 'Collected the numbers; now writing',
            status: 'error',
          });
          await threads.updateMessage(m.id, { interrupted: true });
          await tasks.update(t.id, {
            status: 'failed',
            interrupted: 1,
            error_kind: 'interrupted',
            error: 'Interrupted when the daemon restarted.',
            message_id: m.id,
            finished_at: clock.now(),
          });
          await s.hb.core.mark(b.id, schedule.restartCheck(clock.now(), TICK, random), b.thread);
          if (e.kind === 'restart') becameResumable.set(t.id, { kind: e.kind, at: clock.now() });
        } else if (e.kind === 'provider') {
          const tag = uuid();
          failNext.add(tag);
          const sent = await s.host.service.sendMessage({ bot_id: b.id, text: `Refresh the churn numbers (TASK ${tag})` });
          await idleAll();
          becameResumable.set(sent.dispatched[0]!.task_id, { kind: e.kind, at: clock.now() });
        } else {
          await s.host.service.sendMessage({ bot_id: b.id, text: 'Start the customer export PROMISE' });
          await idleAll();
        }
      }
      const outcome = await instance.tick();
      ticks++;
      await collectResumes();
      if (outcome.message.includes('resumed')) await idleAll();
      await clock.advance(TICK);
    }
    const wall = (performance.now() - t0) / 1000;
    // Follow-ups that came due count as resumable from their due time.
    for (const f of await db.selectFrom('heartbeat_followups').selectAll().execute()) {
      if (f.due_at !== null) becameResumable.set(`followup:${f.id}`, { kind: 'followup', at: Number(f.due_at) });
    }
    const firstResume = new Map<string, number>();
    for (const e of resumedLog) {
      const key = e.rule === 'follow_up_due' ? null : e.task_id;
      if (key && !firstResume.has(key)) firstResume.set(key, Number(e.at));
    }
    // A follow-up's resume creates a new task: match it by bot and time.
    const followResumes = resumedLog.filter((e) => e.rule === 'follow_up_due').map((e) => ({ bot: e.bot_id, at: Number(e.at) }));
    const fus = await db.selectFrom('heartbeat_followups').selectAll().execute();
    for (const f of fus) {
      const r = followResumes.find((x) => x.bot === f.bot_id && x.at >= Number(f.due_at));
      if (r) firstResume.set(`followup:${f.id}`, r.at);
    }

    // Counted from when the work became resumable (the restart, the failed settle, the follow-up's due time), never from a later first look.
    const delays: Record<string, number[]> = { restart: [], provider: [], followup: [] };
    let within3 = 0;
    let resumable = 0;
    for (const [key, v] of becameResumable) {
      resumable++;
      const at = firstResume.get(key);
      if (at === undefined) continue;
      const ticksLate = Math.ceil((at - v.at) / TICK);
      delays[v.kind]!.push(ticksLate);
      if (ticksLate <= 3) within3++;
    }
    // The ledger: what each kind of call cost.
    const calls = await db.selectFrom('model_calls').select(['world', 'purpose', 'input_tokens', 'output_tokens', 'outcome']).execute();
    const sum = (f: (c: (typeof calls)[number]) => boolean) => {
      const xs = calls.filter(f);
      return { calls: xs.length, input: xs.reduce((n, c) => n + Number(c.input_tokens), 0), output: xs.reduce((n, c) => n + Number(c.output_tokens), 0) };
    };
    const pulses = sum((c) => c.purpose === 'heartbeat_pulse');
    const resumes = sum((c) => c.purpose === 'heartbeat_resume');
    // A failed call (the scripted provider failures) carries no prompt figures: measured on answered calls.
    const full = sum((c) => c.world === 'bots' && c.outcome === 'ok');
    const avgPrompt = full.calls ? full.input / full.calls : 0;
    const heartbeatTokens = pulses.input + pulses.output + resumes.input + resumes.output;
    const intervalCalls = DAY_BOTS * 48;
    const intervalTokens = intervalCalls * avgPrompt;
    const realIntervalTokens = intervalCalls * REAL_INTERVAL_PROMPT_TOKENS;
    const usage = await s.hb.service.usage({ days: 2, timezone: 'UTC' });
    const idleRows = await db
      .selectFrom('heartbeat_log')
      .select(['input_tokens', 'output_tokens'])
      .where('outcome', '=', 'verdict')
      .where('verdict', '=', 'idle')
      .execute();
    const idleVerdicts = idleRows.length;
    const idleTokens = idleRows.reduce((n, r) => n + Number(r.input_tokens) + Number(r.output_tokens), 0);
    const missed: string[] = [];
    for (const [key, v] of becameResumable) {
      if (firstResume.has(key)) continue;
      const taskId = key.startsWith('followup:') ? null : key;
      const task = taskId ? await s.host.heartbeat.getTask(taskId) : undefined;
      const last = task ? (await s.hb.core.logs.list({ botId: task.bot_id, limit: 1 }))[0] : undefined;
      missed.push(`${v.kind} (${task?.status ?? 'follow-up'}; last: ${last?.reason ?? 'no log'})`);
    }
    const med = (xs: number[]) => (xs.length ? median(xs) : NaN);
    const max = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
    const eventsBy = (k: Event['kind']) => events.filter((e) => e.kind === k).length;
    return [
      `[${label}]`,
      `${DAY_BOTS} bots, ${ticks} ticks (a simulated day) in ${fmt(wall, 1)} s of wall time; interruptions: ${eventsBy('restart')} restarts mid-run, ${eventsBy('provider')} provider failures, ${eventsBy('followup')} FOLLOWUP: promises, ${eventsBy('idle')} cut-off chores the pulse judges idle`,
      `  heartbeat: ${pulses.calls} pulses (${pulses.input} in / ${pulses.output} out tokens), ${resumes.calls} resume calls (${resumes.input} in / ${resumes.output} out) = ${heartbeatTokens} tokens`,
      `    of the pulses, ${idleVerdicts} said idle (${idleTokens} tokens: chores the pulse keeps declining, rechecked at most hourly — the adaptive interval's cap)`,
      `  measured average prompt of a full bot call: ${fmt(avgPrompt, 0)} tokens (${full.calls} calls)`,
      `  interval heartbeat (1 call per bot per 30 min), with OUR prompt: ${intervalCalls} calls × ${fmt(avgPrompt, 0)} = ${fmt(intervalTokens, 0)} tokens`,
      `    ratio heartbeat / interval (our prompt): ${fmt(heartbeatTokens / intervalTokens, 5)} (${fmt(intervalTokens / heartbeatTokens, 0)}× fewer tokens; calls ${pulses.calls + resumes.calls} vs ${intervalCalls})`,
      `  interval heartbeat with a REAL interval prompt (~${REAL_INTERVAL_PROMPT_TOKENS} tokens, OpenClaw's, measured in issue 22): ${intervalCalls} calls × ${REAL_INTERVAL_PROMPT_TOKENS} = ${fmt(realIntervalTokens, 0)} tokens`,
      `    ratio heartbeat / interval (real prompt): ${fmt(heartbeatTokens / realIntervalTokens, 6)} (${fmt(realIntervalTokens / heartbeatTokens, 0)}× fewer tokens)`,
      `    without the declined chores' rechecks: ${fmt((heartbeatTokens - idleTokens) / intervalTokens, 5)} (${fmt(intervalTokens / (heartbeatTokens - idleTokens), 0)}× fewer)`,
      `  bots.heartbeat_usage says: ratio ${usage.ratio === null ? 'n/a' : fmt(usage.ratio, 5)} (pulses ${usage.pulses.calls}, resume runs ${usage.resumes.runs}, prompt ${usage.measured_prompt_tokens})`,
      `  resumable work: ${resumable}; resumed: ${firstResume.size >= resumable ? resumable : [...becameResumable.keys()].filter((k) => firstResume.has(k)).length}`,
      `    resumed within 3 ticks of becoming resumable (a restart, a failure, a follow-up coming due): ${within3}/${resumable} (${fmt((100 * within3) / resumable, 1)}%)`,
      ...(missed.length ? [`    not resumed (${missed.length}): ${missed.slice(0, 8).join('; ')}${missed.length > 8 ? '; …' : ''}`] : []),
      `    ticks to resume, median / max: restart ${med(delays.restart!)} / ${max(delays.restart!)}, follow-up ${med(delays.followup!)} / ${max(delays.followup!)}, provider failure ${med(delays.provider!)} / ${max(delays.provider!)}`,
    ];
  } finally {
    await s.close();
    await models.close();
    await bench.close();
  }
}

// ---- 3. crash-resume latency ---------------------------------------------------------------

/** Restart gaps after the kill (the kill comes 2 s after the person's message). */
const RESTART_GAPS_S = [0, 20, 60, 120];
/** Runs per gap (the restart's first check is staggered at random over two ticks). */
const CRASH_RUNS = Number(process.env.BENCH_CRASH_RUNS ?? 3);
const KILL_AFTER_MS = 2000;
const CRASH_COLUMNS = [18, 10, 14, 16, 11, 15];
const row = (cells: string[]) => `  ${cells.map((c, i) => c.padStart(CRASH_COLUMNS[i] ?? 0)).join('  ')}`;

async function crashBench(): Promise<string[]> {
  const T0 = Date.UTC(2026, 0, 1, 9, 0, 0);
  const lines = [
    `a real daemon on a SQLite file, SIGKILLed ${KILL_AFTER_MS / 1000} s after the person's message while it streams the reply, restarted after the gap;`,
    `the task's durable job continues the cut-off run at restart (issue 17 §1), so no heartbeat tick is needed`,
    row(['restart after kill', 'answered', 'restart → done', 'heartbeat pulses', 'model calls', 'checkpoint told']),
  ];
  let answered = 0;
  const waits: number[] = [];
  for (const gap of RESTART_GAPS_S.flatMap((g) => Array.from({ length: CRASH_RUNS }, () => g))) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-hb-crash-bench-'));
    const model = await startModelServer();
    const children: ChildProcess[] = [];
    const prompts: string[] = [];
    let pulses = 0;
    model.handle((req) => {
      if (req.body!.model === 'pulse-model') {
        pulses++;
        return {
          json: { verdict: 'resume', taskId: null, reason: 'cut off by a crash', instruction: 'Continue.', etaMinutes: 0, urgency: 'normal', confidence: 0.9 },
        };
      }
      prompts.push(JSON.stringify(req.body!.messages));
      if (prompts.length === 1) return { text: 'Drafted the launch email: subject line and the first two paragraphs are written, next', stall: true };
      return { text: 'Finished the launch email.' };
    });
    try {
      const file = path.join(dir, 'daemon.db');
      let d = launchCrashDaemon(file, model.baseUrl, T0, children);
      const { taskId } = await d.send<{ taskId: string }>('SEND Draft the launch email');
      await d.send(`STREAMING ${taskId}`);
      await d.kill();
      const started = performance.now();
      d = launchCrashDaemon(file, model.baseUrl, T0 + KILL_AFTER_MS + gap * 1000, children);
      const { status } = await d.send<{ status: string }>(`SETTLED ${taskId}`);
      const ms = performance.now() - started;
      await d.kill();
      const done = status === 'done';
      if (done) {
        answered++;
        waits.push(ms);
      }
      const checkpoint = prompts.length > 1 && prompts[1]!.includes('Drafted the launch email: subject line');
      lines.push(
        row([`${gap} s`, done ? 'yes' : `NO (${status})`, `${fmt(ms / 1000, 1)} s`, String(pulses), String(prompts.length), checkpoint ? 'yes' : 'NO']),
      );
    } finally {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  lines.push(
    `  → ${answered}/${RESTART_GAPS_S.length * CRASH_RUNS} answered after the restart, restart → done median ${waits.length ? fmt(median(waits) / 1000, 1) : 'n/a'} s (wall time, the daemon's start included)`,
  );
  return lines;
}

// ---- main -----------------------------------------------------------------------------------

const dialects: DialectName[] = ['sqlite'];
if (await pgReachable()) dialects.push('postgres');
else console.log(`(Postgres unreachable at ${PG_URL}: SQLite only)`);

console.log('1. Triage: Tier 0 per tick, 1% of bots with unfinished work (median of 5 runs)');
for (const dialect of dialects) {
  for (const n of SIZES) for (const line of await triageBench(dialect, n)) console.log(line);
}
console.log('');
console.log('2. A day: the heartbeat beside an interval heartbeat');
if (process.env.BENCH_DAY !== '0') {
  const d = heartbeatConfig.parse({});
  for (const line of await dayBench(
    `default budgets: ${d.global_pulses_per_day} pulses / ${d.global_resumes_per_day} resumes per day store-wide, ${d.max_pulses_per_day} / ${d.max_resumes_per_day} per bot`,
    {},
  ))
    console.log(line);
  console.log('');
  for (const line of await dayBench('RAISED budgets (not the default): 5,000 pulses / 1,000 resumes per day store-wide', {
    global_pulses_per_day: 5000,
    global_resumes_per_day: 1000,
  }))
    console.log(line);
}
console.log('');
console.log('3. Crash-resume latency: SIGKILL soon after a person’s message, then restart');
if (process.env.BENCH_CRASH !== '0') for (const line of await crashBench()) console.log(line);
