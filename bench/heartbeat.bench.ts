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
 *
 * BENCH_BOTS (default "1000,10000,100000") sets the triage sizes; BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test) the Postgres server (skipped when unreachable);
 * BENCH_DAY_BOTS (default 1000) the day's bots.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  sql,
  type Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import pg from 'pg';
import { AgentRunner, ApprovalStore, McpManager } from '../src/agent/index.js';
import { botsMigrations, createBotsHost, parseBotsConfig, type BotsHost, type BotsTables } from '../src/bots/index.js';
import { TaskStore } from '../src/bots/task-store.js';
import { ThreadStore } from '../src/bots/thread-store.js';
import { EventBus, FakeClock, silentLogger, uuid } from '../src/core/index.js';
import { Instance } from '../src/engine/index.js';
import { StoreCheckpointer } from '../src/graph/index.js';
import { createLlm, type LlmService } from '../src/llm/index.js';
import { openStore, tablesView, type DialectName, type Store } from '../src/store/index.js';
import {
  createHeartbeat,
  heartbeatConfig,
  heartbeatMigrations,
  maxPulsesPerTick,
  observe,
  schedule,
  type Heartbeat,
  type HeartbeatConfig,
  type HeartbeatTables,
  defaultBotRow,
} from '../src/worlds/heartbeat/index.js';
import { startModelServer, type ModelServer } from '../devtools/model-server.js';

const SIZES = (process.env.BENCH_BOTS ?? '1000,10000,100000').split(',').map(Number);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DAY_BOTS = Number(process.env.BENCH_DAY_BOTS ?? 1000);
const RUNS = 5;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench writes and reads every module's tables
type AnyDb = Kysely<any>;
const START = Date.UTC(2026, 0, 5, 0, 0, 0);

// ---- plumbing -----------------------------------------------------------------------------

/** Counts queries and the rows they return (what "rows read" means here). */
class RowCounter implements KyselyPlugin {
  queries = 0;
  rows = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.queries++;
    this.rows += args.result.rows.length;
    return args.result;
  }
  reset(): void {
    this.queries = 0;
    this.rows = 0;
  }
}

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

interface Stack {
  host: BotsHost;
  hb: Heartbeat;
  llm: LlmService;
  runner: AgentRunner;
  close(): Promise<void>;
}

function stack(db: AnyDb, clock: FakeClock, baseUrl: string, config: Partial<HeartbeatConfig>, seed = 1): Stack {
  const endpoint = (model: string) => ({ baseUrl, model, timeoutMs: 30_000 });
  const llm = createLlm({ models: { local: endpoint('pulse-model'), agent: endpoint('agent-model') }, db, clock, ids: uuid });
  const approvals = new ApprovalStore({ db, clock, ids: uuid });
  const runner = new AgentRunner({ llm, mcp: new McpManager({ servers: [], clock }), approvals, clock, ids: uuid });
  const host = createBotsHost({
    db: tablesView<BotsTables>(db),
    clock,
    ids: uuid,
    runner,
    approvals,
    emit: () => undefined,
    log: silentLogger,
    presence: () => true,
    config: parseBotsConfig({ next_job_delay_ms: 0, history_chars: 60_000 }),
  });
  const hb = createHeartbeat({
    db: tablesView<HeartbeatTables>(db),
    host: host.heartbeat,
    llm,
    clock,
    ids: uuid,
    log: silentLogger,
    emit: () => undefined,
    config: heartbeatConfig.parse(config),
    timezone: 'UTC',
    random: rng(seed),
  });
  return {
    host,
    hb,
    llm,
    runner,
    close: async () => {
      await hb.close();
      await host.stop();
      await runner.cancelAll();
    },
  };
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

async function insertChunks<T>(db: AnyDb, table: string, rows: T[], chunk = 500): Promise<void> {
  for (let i = 0; i < rows.length; i += chunk)
    await db
      .insertInto(table)
      .values(rows.slice(i, i + chunk))
      .execute();
}

// ---- 1. triage ----------------------------------------------------------------------------

/**
 * N bots, each with its direct thread and a finished conversation (a done task, two messages);
 * 10% known to the heartbeat (a row, asleep); 1% with unfinished work — a task cut off by a
 * restart, its reply marked interrupted — and due now.
 */
async function populate(db: AnyDb, n: number, now: number): Promise<string[]> {
  const candidates: string[] = [];
  const bots = [];
  const threads = [];
  const members = [];
  const tasks = [];
  const messages = [];
  const beats = [];
  for (let i = 0; i < n; i++) {
    const bot = `bot-${i}`;
    const thread = `thread-${i}`;
    const candidate = i % 100 === 7;
    bots.push({
      id: bot,
      name: `bot${i}`,
      label: `Bot ${i}`,
      description: 'A teammate.',
      persona: '',
      model_role: 'agent',
      model: null,
      tools: '[]',
      created_at: now,
      updated_at: now,
    });
    threads.push({
      id: thread,
      kind: 'direct',
      name: `bot${i}`,
      direct_bot_id: bot,
      next_seq: candidate ? 4 : 2,
      created_at: now,
      updated_at: now,
      last_message_at: now,
    });
    members.push({ thread_id: thread, bot_id: bot, position: 0 });
    const task = (id: string, status: string, kind: string | null, at: number) => ({
      id,
      bot_id: bot,
      thread_id: thread,
      message_id: null,
      request_message_id: null,
      title: 'Prepare the weekly report',
      prompt: 'Prepare the weekly report',
      source: 'user',
      from_bot_id: null,
      routine_id: null,
      handoff_depth: 0,
      status,
      error_kind: kind,
      error: kind ? 'Interrupted when the daemon restarted.' : null,
      checkpoint: null,
      interrupted: kind ? 1 : 0,
      attempts: 0,
      last_heartbeat_at: null,
      claim_token: null,
      claim_at: null,
      claim_by: null,
      owner: null,
      run_id: null,
      review_note: null,
      version: 1,
      created_at: at,
      updated_at: at,
      started_at: at,
      finished_at: at,
    });
    const msg = (seq: number, role: string, text: string, status: string, interrupted = 0, taskId: string | null = null) => ({
      id: `${thread}-m${seq}`,
      thread_id: thread,
      seq,
      role,
      bot_id: role === 'bot' ? bot : null,
      task_id: taskId,
      text,
      status,
      error: null,
      interrupted,
      heartbeat: 0,
      created_at: now - 3600_000 + seq * 1000,
      updated_at: now - 3600_000 + seq * 1000,
    });
    tasks.push(task(`${bot}-done`, 'done', null, now - 3600_000));
    messages.push(msg(1, 'user', 'How is the report going?', 'done'), msg(2, 'bot', 'Sent it this morning.', 'done', 0, `${bot}-done`));
    if (candidate) {
      candidates.push(bot);
      tasks.push(task(`${bot}-cut`, 'failed', 'interrupted', now - 600_000));
      messages.push(msg(3, 'user', 'Prepare the weekly report', 'done'), {
        ...msg(4, 'bot', 'Collected the numbers; writing', 'error', 1, `${bot}-cut`),
        updated_at: now - 600_000,
      });
    }
    if (candidate || i % 10 === 3) beats.push(beatRow(bot, thread, candidate ? now - 1000 : null, now));
  }
  await insertChunks(db, 'bots_bots', bots);
  await insertChunks(db, 'bots_threads', threads);
  await insertChunks(db, 'bots_thread_members', members);
  await insertChunks(db, 'bots_tasks', tasks, 300);
  await insertChunks(db, 'bots_messages', messages);
  await insertChunks(db, 'heartbeat_bots', beats, 300);
  return candidates;
}

function beatRow(bot: string, thread: string, next: number | null, now: number) {
  return { ...defaultBotRow(bot, thread, now), next_heartbeat_at: next };
}

interface Measure {
  ms: number;
  rows: number;
  queries: number;
}

async function measure(counter: RowCounter, fn: () => Promise<unknown>): Promise<Measure> {
  const times: number[] = [];
  let rows = 0;
  let queries = 0;
  for (let r = 0; r < RUNS; r++) {
    counter.reset();
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
    rows = counter.rows;
    queries = counter.queries;
  }
  return { ms: median(times), rows, queries };
}

async function triageBench(dialect: DialectName, n: number): Promise<string[]> {
  const bench = await openBenchStore(dialect);
  const counter = new RowCounter();
  const db = (bench.store.db as AnyDb).withPlugin(counter);
  const clock = new FakeClock(START);
  const t0 = performance.now();
  const candidates = await populate(bench.store.db as AnyDb, n, clock.now());
  const filled = (performance.now() - t0) / 1000;
  if (dialect === 'postgres') await sql`ANALYZE`.execute(bench.store.db);
  const s = stack(db, clock, 'http://127.0.0.1:9/v1', {});
  const settings = await s.hb.core.settings.global();
  const lines: string[] = [];
  try {
    // A quiet tick: nobody due (the clock before every candidate's time).
    const quietClock = new FakeClock(START - 3600_000);
    const quietStack = stack(db, quietClock, 'http://127.0.0.1:9/v1', {});
    const quiet = await measure(counter, () => observe(quietStack.hb.core, maxPulsesPerTick(settings)));
    await quietStack.close();

    const tick = await measure(counter, () => observe(s.hb.core, maxPulsesPerTick(settings)));
    const obs = await observe(s.hb.core, maxPulsesPerTick(settings));
    const deepTick = obs.plans.length;

    await s.hb.core.settings.setGlobal({ mode: 'triage' });
    const all = await measure(counter, () => observe(s.hb.core, Infinity, { due: n, deep: n }));
    const allObs = await observe(s.hb.core, Infinity, { due: n, deep: n });
    const found = allObs.plans.filter((p) => p.triage.kind === 'candidates').length;

    // The floor: the same candidate rows by their indexes, nothing else.
    const floor = await measure(counter, async () => {
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
    });
    const per = (m: Measure, k: number) => (k ? `${fmt((m.ms * 1000) / k, 0)} µs/bot` : '-');
    lines.push(
      `${dialect.padEnd(8)} ${String(n).padStart(7)} bots  (${candidates.length} with work; filled in ${fmt(filled, 1)} s)`,
      `  quiet tick (none due)         ${fmt(quiet.ms).padStart(8)} ms  ${String(quiet.rows).padStart(6)} rows  ${String(quiet.queries).padStart(5)} queries`,
      `  default tick (${String(deepTick).padStart(3)} triaged)    ${fmt(tick.ms).padStart(8)} ms  ${String(tick.rows).padStart(6)} rows  ${String(tick.queries).padStart(5)} queries  ${per(tick, deepTick)}`,
      `  all ${String(found).padStart(4)} candidates, 1 pass ${fmt(all.ms).padStart(8)} ms  ${String(all.rows).padStart(6)} rows  ${String(all.queries).padStart(5)} queries  ${per(all, found)}`,
      `  floor: bare indexed select    ${fmt(floor.ms).padStart(8)} ms  ${String(floor.rows).padStart(6)} rows  ${String(floor.queries).padStart(5)} queries  → one pass = ${fmt(all.ms / floor.ms, 1)}× the floor`,
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

async function dayBench(): Promise<string[]> {
  const bench = await openBenchStore('sqlite');
  const db = bench.store.db as AnyDb;
  const clock = new FakeClock(START);
  const models: ModelServer = await startModelServer();
  const random = rng(2026);
  const s = stack(db, clock, models.baseUrl, { global_pulses_per_day: 5000, global_resumes_per_day: 1000 }, 99);
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
      if (outcome.message.includes('resumed')) await idleAll();
      await clock.advance(TICK);
    }
    const wall = (performance.now() - t0) / 1000;
    // Follow-ups that came due count as resumable from their due time.
    for (const f of await db.selectFrom('heartbeat_followups').selectAll().execute()) {
      if (f.due_at !== null) becameResumable.set(`followup:${f.id}`, { kind: 'followup', at: Number(f.due_at) });
    }
    const resumedLog = await db.selectFrom('heartbeat_log').selectAll().where('outcome', '=', 'resumed').execute();
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
    const usage = await s.hb.service.usage({ days: 2, time_zone: 'UTC' });
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
      `${DAY_BOTS} bots, ${ticks} ticks (a simulated day) in ${fmt(wall, 1)} s of wall time; interruptions: ${eventsBy('restart')} restarts mid-run, ${eventsBy('provider')} provider failures, ${eventsBy('followup')} FOLLOWUP: promises, ${eventsBy('idle')} cut-off chores the pulse judges idle`,
      `  heartbeat: ${pulses.calls} pulses (${pulses.input} in / ${pulses.output} out tokens), ${resumes.calls} resume calls (${resumes.input} in / ${resumes.output} out) = ${heartbeatTokens} tokens`,
      `    of the pulses, ${idleVerdicts} said idle (${idleTokens} tokens: chores the pulse keeps declining, rechecked at most hourly — the adaptive interval's cap)`,
      `  measured average prompt of a full bot call: ${fmt(avgPrompt, 0)} tokens (${full.calls} calls)`,
      `  interval heartbeat (1 call per bot per 30 min): ${intervalCalls} calls × ${fmt(avgPrompt, 0)} = ${fmt(intervalTokens, 0)} tokens`,
      `  ratio heartbeat / interval: ${fmt(heartbeatTokens / intervalTokens, 5)} (${fmt(intervalTokens / heartbeatTokens, 0)}× fewer tokens; calls ${pulses.calls + resumes.calls} vs ${intervalCalls})`,
      `    without the declined chores' rechecks: ${fmt((heartbeatTokens - idleTokens) / intervalTokens, 5)} (${fmt(intervalTokens / (heartbeatTokens - idleTokens), 0)}× fewer)`,
      `  bots.heartbeat_usage says: ratio ${usage.ratio === null ? 'n/a' : fmt(usage.ratio, 5)} (pulses ${usage.pulses.calls}, resume runs ${usage.resumes.runs}, prompt ${usage.measured_prompt_tokens})`,
      `  resumable work: ${resumable}; resumed: ${firstResume.size >= resumable ? resumable : [...becameResumable.keys()].filter((k) => firstResume.has(k)).length}`,
      `    resumed within 3 ticks of becoming resumable (a restart, a failure, a follow-up coming due): ${within3}/${resumable} (${fmt((100 * within3) / resumable, 1)}%)`,
      ...(missed.length ? [`    not resumed: ${missed.join('; ')}`] : []),
      `    ticks to resume, median / max: restart ${med(delays.restart!)} / ${max(delays.restart!)}, follow-up ${med(delays.followup!)} / ${max(delays.followup!)}, provider failure ${med(delays.provider!)} / ${max(delays.provider!)}`,
    ];
  } finally {
    await s.close();
    await models.close();
    await bench.close();
  }
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
for (const line of await dayBench()) console.log(line);
