/**
 * Chaos (issue 17's acceptance): daemons on one store, killed with SIGKILL at random while people
 * send bot messages and standing tasks are decided, then a quiet period; it prints what was lost,
 * repeated or stuck. A measurement, not a test: it prints figures and exits 1 when a goal is missed.
 *
 *   npm run chaos -- --dialect postgres            # 3 daemons, ≥ 100 kills over ≥ 10 min, one killed for good midway
 *   npm run chaos -- --dialect sqlite              # 1 daemon, ≥ 50 kills
 *   npm run chaos -- --dialect sqlite --minutes 2 --kills 10 --messages 40 --tasks 12   # a short look
 *   … --keep                                       # keep the workspaces, daemon logs and database afterwards
 *
 * The model is the scripted OpenAI-compatible server (devtools/model-server.ts) on loopback:
 * bot replies take 1–5 s and name the message they answer; a task evaluation decides act,
 * escalate or noop by the task's number (every other escalated task's analysis recommends an
 * action: a card); escalations are approved as they appear (each a `tasks.approved_action` job);
 * a heartbeat pulse says resume.
 *
 * "Task executions run twice" counts answers the model server delivered in full for the same task
 * and the same kind of execution (its execution, or its approved action): a request cut off by a
 * kill (the daemon went away before the answer was complete) is no execution, and the take-over
 * that continues it delivers the one answer; one that re-asked after an answer had arrived, or ran
 * a finished execution again, counts.
 *
 * Take-over time: for each kill of a daemon that held jobs, the coordinator's tables (the SQLite
 * file, or Postgres) are read just before the kill for the jobs it held, then sampled every
 * 250 ms until another worker (or the restarted one) holds each or it is finished; kill → that
 * first progress is set against the issue's goal, two lease periods (the daemons' own
 * `cluster.lease_ms`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startModelServer, type RecordedRequest, type ScriptedReply } from './model-server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'subconscious.js');

interface Options {
  dialect: 'postgres' | 'sqlite';
  daemons: number;
  minutes: number;
  kills: number;
  messages: number;
  tasks: number;
  bots: number;
  settleMinutes: number;
  databaseUrl: string;
  /** Keep the scratch folder (workspaces, SQLite file, daemon logs) and the Postgres database to look at afterwards. */
  keep: boolean;
}

function options(argv: string[]): Options {
  const arg = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const num = (name: string, fallback: number) => {
    const v = arg(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: give a number ≥ 0 (got "${v}")`);
    return n;
  };
  const dialect = (arg('dialect') ?? 'postgres') as Options['dialect'];
  if (dialect !== 'postgres' && dialect !== 'sqlite') throw new Error(`--dialect: postgres or sqlite (got "${dialect}")`);
  const pgDefault = dialect === 'postgres';
  return {
    dialect,
    daemons: dialect === 'sqlite' ? 1 : num('daemons', 3),
    minutes: num('minutes', 10),
    kills: num('kills', pgDefault ? 100 : 50),
    messages: num('messages', 300),
    tasks: num('tasks', 90),
    bots: num('bots', 10),
    settleMinutes: num('settle-minutes', 6),
    databaseUrl: arg('database-url') ?? process.env.SUBCONSCIOUS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    keep: argv.includes('--keep'),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const between = (lo: number, hi: number) => lo + Math.random() * (hi - lo);

/** One daemon slot: its workspace and port stay the same across restarts. */
class Slot {
  child: ChildProcess | null = null;
  dead = false;
  starts = 0;
  constructor(
    readonly n: number,
    readonly workspace: string,
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
  ) {}
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** Answered /healthz since its last start (a kill hits a daemon at work, not one still booting). */
  ready = false;
  get up(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }
  async start(): Promise<void> {
    this.starts++;
    this.ready = false;
    const child = spawn(process.execPath, [BIN, 'start', '-w', this.workspace, '-p', String(this.port)], {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // The last lines it printed, said when it fails to start (the reason a restart failed).
    let tail = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      tail = (tail + d).slice(-2000);
      appendFileSync(path.join(this.workspace, 'daemon.log'), d); // its whole log, for --keep
    });
    this.child = child;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (!this.up) throw new Error(`daemon ${this.n} exited at start (code ${child.exitCode ?? child.signalCode}): ${tail.trim() || 'it printed nothing'}`);
      try {
        if ((await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(1000) })).ok) {
          this.ready = this.up;
          return;
        }
      } catch {
        // not listening yet
      }
      await sleep(200);
    }
    throw new Error(`daemon ${this.n} did not answer /healthz within 60 s`);
  }
  kill(): void {
    this.ready = false;
    this.child?.kill('SIGKILL');
  }
  /** Resolves once the current process has exited (at once when there is none). */
  exited(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => c.once('exit', () => resolve()));
  }
}

/** The coordinator's jobs as its tables hold them (read-only): who holds what. */
interface JobsProbe {
  /** Ids of the active jobs the daemon process `pid` of this host holds (its worker id is `host:pid:…`). */
  heldBy(pid: number): Promise<string[]>;
  /** State and holder of these jobs (a pruned one is missing). */
  states(ids: string[]): Promise<Map<string, { state: string; holder: string | null }>>;
  close(): Promise<void>;
}

/** Every ledger row's id and state, through the documented `usage.calls` (newest first, paged). */
async function ledgerRows(rpc: (method: string, params: unknown) => Promise<unknown>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let offset = 0; ; offset += 500) {
    const page = (await rpc('usage.calls', { limit: 500, offset })) as { total: number; rows: { id: string; state: string }[] };
    for (const r of page.rows) out.set(r.id, r.state);
    if (page.rows.length < 500) return out;
  }
}

/**
 * The ledger against the model server's log, by the row id each request carries
 * (`X-Client-Request-Id`): a request no row names is a call the ledger missed; a row no request
 * names was never sent, which only a kill between the two may cause (so it must be `interrupted`).
 */
function joinLedger(rows: Map<string, string>, requests: RecordedRequest[]) {
  const sent = new Set<string>();
  let unrecorded = 0;
  for (const r of requests) {
    const id = r.headers['x-client-request-id'];
    if (typeof id === 'string' && rows.has(id)) sent.add(id);
    else unrecorded++;
  }
  let neverSent = 0;
  let unsentDone = 0;
  for (const [id, state] of rows) {
    if (sent.has(id)) continue;
    if (state === 'interrupted') neverSent++;
    else unsentDone++;
  }
  return { unrecorded, neverSent, unsentDone };
}

function holderPrefix(pid: number): string {
  return `${os.hostname()}:${pid}:`;
}

function sqliteProbe(file: string): JobsProbe {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 2000');
  return {
    heldBy: async (pid) =>
      (db.prepare(`SELECT id FROM coord_jobs WHERE state = 'active' AND holder LIKE ?`).all(`${holderPrefix(pid)}%`) as { id: string }[]).map((r) => r.id),
    states: async (ids) => {
      const out = new Map<string, { state: string; holder: string | null }>();
      if (ids.length === 0) return out;
      const rows = db.prepare(`SELECT id, state, holder FROM coord_jobs WHERE id IN (${ids.map(() => '?').join(',')})`).all(...ids) as {
        id: string;
        state: string;
        holder: string | null;
      }[];
      for (const r of rows) out.set(r.id, { state: r.state, holder: r.holder });
      return out;
    },
    close: async () => void db.close(),
  };
}

function postgresProbe(url: string): JobsProbe {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => undefined);
  return {
    heldBy: async (pid) =>
      (await pool.query<{ job_id: string }>(`SELECT job_id FROM coord_holds WHERE state = 'active' AND holder LIKE $1`, [`${holderPrefix(pid)}%`])).rows.map(
        (r) => r.job_id,
      ),
    states: async (ids) => {
      const out = new Map<string, { state: string; holder: string | null }>();
      if (ids.length === 0) return out;
      const rows = await pool.query<{ job_id: string; state: string; holder: string | null }>(
        `SELECT job_id, state, holder FROM coord_holds WHERE job_id = ANY($1::text[])`,
        [ids],
      );
      for (const r of rows.rows) out.set(r.job_id, { state: r.state, holder: r.holder });
      return out;
    },
    close: () => pool.end(),
  };
}

const LIVE_JOB_STATES = new Set(['waiting', 'queued', 'active', 'released']);

/**
 * Kill → first progress on each job the killed daemon held: the job is active under another
 * worker (the restarted daemon is another worker too: a new pid), or it finished (taken over and
 * completed between two samples, or cancelled).
 */
class Takeovers {
  /** Kill → first progress (ms), one per job. */
  readonly times: number[] = [];
  /** Kills that found the daemon holding jobs. */
  killsHolding = 0;
  private readonly pending = new Map<string, { killedAt: number; prefix: string }>();
  constructor(private readonly probe: JobsProbe) {}

  /** What `pid` holds, read just before its kill. */
  before(pid: number): Promise<string[]> {
    return this.probe.heldBy(pid).catch(() => []);
  }

  /** After the kill's process exit: the held jobs it did not finish itself wait for a take-over. */
  async killed(pid: number, held: string[], killedAt: number): Promise<void> {
    if (held.length === 0) return;
    const prefix = holderPrefix(pid);
    const states = await this.probe.states(held).catch(() => null);
    if (!states) return;
    let counted = false;
    for (const id of held) {
      const s = states.get(id);
      if (!s || !LIVE_JOB_STATES.has(s.state)) continue; // it finished it before it died
      counted = true;
      if (s.state === 'active' && s.holder !== null && !s.holder.startsWith(prefix)) this.times.push(Date.now() - killedAt);
      else this.pending.set(id, { killedAt, prefix });
    }
    if (counted) this.killsHolding++;
  }

  async sample(): Promise<void> {
    if (this.pending.size === 0) return;
    const states = await this.probe.states([...this.pending.keys()]).catch(() => null);
    if (!states) return;
    const now = Date.now();
    for (const [id, p] of this.pending) {
      const s = states.get(id);
      const progressed = !s || !LIVE_JOB_STATES.has(s.state) || (s.state === 'active' && s.holder !== null && !s.holder.startsWith(p.prefix));
      if (!progressed) continue;
      this.times.push(now - p.killedAt);
      this.pending.delete(id);
    }
  }

  /** Jobs of a killed daemon nobody took over before the run ended. */
  get never(): number {
    return this.pending.size;
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? 0;
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const token = `chaos-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}-cluster-token`;
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'subc-chaos-'));
  const server = await startModelServer({ models: ['chaos-local', 'chaos-agent'] });
  server.handle(reply);

  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  if (o.dialect === 'postgres') {
    const name = `subc_chaos_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: o.databaseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(o.databaseUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    dropDatabase = async () => {
      const c = new pg.Client({ connectionString: o.databaseUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    };
  }
  const env: NodeJS.ProcessEnv = {
    SUBCONSCIOUS_TOKEN: token,
    SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
    SUBCONSCIOUS_LOCAL_MODEL: 'chaos-local',
    SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
    SUBCONSCIOUS_AGENT_MODEL: 'chaos-agent',
    ...(databaseUrl ? { SUBCONSCIOUS_DATABASE_URL: databaseUrl } : {}),
  };
  const slots: Slot[] = [];
  for (let i = 0; i < o.daemons; i++) {
    const ws = path.join(scratch, `d${i + 1}`);
    mkdirSync(ws, { recursive: true });
    writeFileSync(path.join(ws, 'subconscious.toml'), '');
    slots.push(new Slot(i + 1, ws, await freePort(), env));
  }
  const log = (line: string) => process.stderr.write(`[chaos ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
  const t0 = Date.now();
  let probe: JobsProbe | undefined;
  let sampling = false;
  try {
    for (const s of slots) await s.start();
    log(`${o.daemons} daemon(s) up on ${o.dialect}`);
    const rpc = rpcClient(slots, token);
    // The lease the daemons' coordinator runs with (their config), and its tables to time take-overs by.
    const status = (await rpc('subconscious.status', {})) as { cluster?: { lease_ms: number } };
    const leaseMs = status.cluster?.lease_ms ?? 60_000;
    probe = databaseUrl ? postgresProbe(databaseUrl) : sqliteProbe(path.join(slots[0]!.workspace, '.subconscious', 'subconscious.db'));
    const takeovers = new Takeovers(probe);
    sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await takeovers.sample();
        await sleep(250);
      }
    })();

    const bots: string[] = [];
    for (let i = 0; i < o.bots; i++) bots.push(((await rpc('bots.create', { name: `chaos${i}` })) as { id: string }).id);
    for (let i = 0; i < o.tasks; i++) await rpc('subconscious.tasks_add', { title: `chaos task ${i}: look at release ${i}`, recurrence: 'once' });
    log(`${bots.length} bots and ${o.tasks} tasks added`);

    const accepted = new Map<string, { botId: string; taskId: string }>();
    let refused = 0;
    let kills = 0;
    let deadAt: number | null = null;
    const durationMs = o.minutes * 60_000;
    const end = t0 + durationMs;

    const sender = (async () => {
      for (let i = 0; i < o.messages; i++) {
        const due = t0 + (i / Math.max(1, o.messages)) * durationMs * 0.9;
        if (due > Date.now()) await sleep(due - Date.now());
        const botId = bots[i % bots.length]!;
        const tag = `m${i}`;
        try {
          const r = (await rpc('bots.send_message', { bot_id: botId, text: `[${tag}] Please summarise item ${i}.` })) as { dispatched: { task_id: string }[] };
          accepted.set(tag, { botId, taskId: r.dispatched[0]!.task_id });
        } catch {
          refused++; // the daemon died before it answered: not accepted (the caller retries, or the person sees the error)
        }
      }
    })();

    // A person who approves escalations as they appear; the tasks world is asked to tick every few
    // 15 s (its cadence is minutes), so decisions, executions and approvals happen during the kills.
    let lastTrigger = 0;
    const approver = (async () => {
      while (Date.now() < end + o.settleMinutes * 60_000) {
        try {
          if (Date.now() - lastTrigger > 15_000) {
            lastTrigger = Date.now();
            await rpc('subconscious.trigger', { world: 'tasks' });
          }
          const pending = (await rpc('subconscious.escalations_list', { status: 'pending' })) as { id: string }[];
          for (const e of pending) await rpc('subconscious.escalations_approve', { id: e.id }).catch(() => undefined);
        } catch {
          // every daemon may be down for a moment
        }
        await sleep(3000);
      }
    })();

    // A kill every gap (0.4–1.6×) whatever the restarts: a killed daemon restarts in the background
    // while the next kill hits another one at work (with one daemon, the next kill waits for it).
    const restarts = new Set<Promise<void>>();
    const killer = (async () => {
      const gap = durationMs / Math.max(1, o.kills);
      while (Date.now() < end && kills < o.kills) {
        await sleep(between(gap * 0.4, gap * 1.6));
        let ready = slots.filter((s) => !s.dead && s.ready);
        while (ready.length === 0 && Date.now() < end) {
          await sleep(200);
          ready = slots.filter((s) => !s.dead && s.ready);
        }
        if (ready.length === 0) break;
        const victim = ready[Math.floor(Math.random() * ready.length)]!;
        const pid = victim.child?.pid;
        const held = pid ? await takeovers.before(pid) : [];
        const killedAt = Date.now();
        const exited = victim.exited();
        victim.kill();
        kills++;
        if (pid) void exited.then(() => takeovers.killed(pid, held, killedAt));
        if (o.daemons > 1 && deadAt === null && Date.now() > t0 + durationMs / 2) {
          victim.dead = true;
          deadAt = Date.now();
          log(`daemon ${victim.n} killed for good`);
          continue;
        }
        const restart = (async () => {
          await sleep(between(300, 1500));
          await victim.start().catch((err: unknown) => log(`restart of daemon ${victim.n} failed: ${String(err)}`));
        })();
        restarts.add(restart);
        void restart.finally(() => restarts.delete(restart));
      }
      await Promise.all([...restarts]);
    })();

    await Promise.all([sender, killer]);
    log(`load done: ${accepted.size} accepted, ${refused} refused by a dying daemon, ${kills} kills; quiet now`);
    for (const s of slots) if (!s.dead && !s.up) await s.start();

    // Quiet: wait until every accepted message is answered and nothing is queued or working.
    const settleEnd = Date.now() + o.settleMinutes * 60_000;
    let view = await observe(rpc);
    while (Date.now() < settleEnd) {
      const open =
        [...view.tasks.values()].filter((t) => t.status === 'queued' || t.status === 'working').length +
        view.log.filter((r) => r.decision === 'in_progress' || r.exec_state === 'running').length;
      const unanswered = [...accepted.values()].filter((a) => view.tasks.get(a.taskId)?.status !== 'done').length;
      if (open === 0 && unanswered === 0) break;
      await sleep(3000);
      view = await observe(rpc);
    }
    await approver.catch(() => undefined);
    await takeovers.sample();
    sampling = false;
    await sampler;

    const unanswered = [...accepted.values()].filter((a) => view.tasks.get(a.taskId)?.status !== 'done');
    const stuck = [...view.tasks.values()].filter((t) => t.status === 'queued' || t.status === 'working');
    const stuckRows = view.log.filter((r) => r.decision === 'in_progress' || r.exec_state === 'running' || r.exec_state === 'executed');
    const repliesPerTag = new Map<string, number>();
    for (const m of view.messages) {
      const tag = /Answer to \[(m\d+)\]/.exec(m.text)?.[1];
      if (tag && m.role === 'bot' && m.status === 'done') repliesPerTag.set(tag, (repliesPerTag.get(tag) ?? 0) + 1);
    }
    const duplicateReplies = [...repliesPerTag.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
    const usage = (await rpc('usage.summary', { days: 1 })) as { totals: { calls: number; interrupted: number } };
    const requests = server.chatRequests.length;
    const ledger = await ledgerRows(rpc);
    const join = joinLedger(ledger, server.chatRequests);
    const executions = repeatedExecutions(server.chatRequests, ledger);
    const duplicateExecutions = executions.paidTwice.length;

    const goalMs = 2 * leaseMs;
    const took = [...takeovers.times].sort((a, b) => a - b);
    const maxMs = took.at(-1) ?? 0;
    const takeoverOk = takeovers.never === 0 && maxMs <= goalMs;
    const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const lines = [
      `chaos: ${o.dialect}, ${o.daemons} daemon(s), ${kills} SIGKILLs over ${((Date.now() - t0) / 60_000).toFixed(1)} min${deadAt ? `, one killed for good at ${((deadAt - t0) / 60_000).toFixed(1)} min` : ''}`,
      `  accepted messages              ${accepted.size} (${refused} not accepted: the daemon died before answering)`,
      `  accepted but unanswered        ${unanswered.length}   (goal 0)`,
      `  duplicate replies              ${duplicateReplies}   (goal 0)`,
      `  task executions run twice      ${duplicateExecutions}   (goal 0; ${executions.tasks} tasks executed)`,
      `    asked again, answer unheard  ${executions.unheard.length}   (the server delivered it as the kill came: its ledger row was closed interrupted, so the daemon never had it)`,
      `  rows stuck queued/working      ${stuck.length}   (goal 0)`,
      `  task rows stuck running        ${stuckRows.length}   (goal 0: in progress, running or executed and never applied)`,
      `  ledger rows / model requests   ${usage.totals.calls} / ${requests}   (goal: every request has its row; ${usage.totals.interrupted} closed as interrupted)`,
      `    requests without a row        ${join.unrecorded}   (goal 0: a call the ledger does not know of)`,
      `    rows never sent               ${join.neverSent}   (interrupted between writing the row and sending the request: nothing was paid${join.unsentDone ? `; ${join.unsentDone} NOT interrupted` : ''})`,
      took.length + takeovers.never === 0
        ? `  take-over after a kill         none measured   (no kill found its daemon holding a job)`
        : `  take-over after a kill         max ${secs(maxMs)}, p95 ${secs(percentile(took, 0.95))}   (goal ≤ ${secs(goalMs)} = 2 × the ${secs(leaseMs)} lease; ${took.length} jobs held by ${takeovers.killsHolding} of ${kills} kills${takeovers.never ? `, ${takeovers.never} never taken over` : ''})`,
      `  take-over verdict              ${
        took.length + takeovers.never === 0
          ? 'nothing to judge'
          : takeoverOk
            ? `ok: every job a killed daemon held was taken over within 2 lease periods`
            : `MISSED: ${takeovers.never ? `${takeovers.never} job(s) never taken over` : `the slowest took ${secs(maxMs)}, more than 2 lease periods`}`
      }`,
    ];
    console.log(lines.join('\n'));
    for (const u of unanswered.slice(0, 10)) {
      const t = view.tasks.get(u.taskId);
      console.log(`    unanswered: task ${u.taskId} of ${u.botId} is ${t?.status ?? 'missing'}${t?.error_kind ? ` (${t.error_kind}: ${t.error ?? ''})` : ''}`);
    }
    for (const s of stuck.slice(0, 10)) console.log(`    stuck: task ${s.id} ${s.status} (${s.error ?? ''})`);
    for (const r of stuckRows.slice(0, 10)) console.log(`    stuck: log row ${r.id} ${r.decision}/${r.exec_state} (${r.result ?? ''})`);
    for (const title of executions.paidTwice) console.log(`    executed again after its answer arrived: chaos task ${title}`);
    for (const title of executions.unheard) console.log(`    asked again, its first answer never reached the daemon: chaos task ${title}`);
    if (o.keep) console.log(`  kept: ${scratch}${databaseUrl ? ` and ${databaseUrl}` : ''}`);
    const ok =
      unanswered.length === 0 &&
      duplicateReplies === 0 &&
      duplicateExecutions === 0 &&
      stuck.length === 0 &&
      stuckRows.length === 0 &&
      join.unrecorded === 0 &&
      join.unsentDone === 0 &&
      takeoverOk;
    process.exitCode = ok ? 0 : 1;
  } finally {
    sampling = false;
    for (const s of slots) s.kill();
    await probe?.close().catch(() => undefined);
    await server.close();
    if (!o.keep) {
      await dropDatabase?.().catch(() => undefined);
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}

/** The scripted model: bot replies in 1–5 s naming their message; evaluations decide by task number. */
function reply(request: RecordedRequest): ScriptedReply {
  const body = request.body;
  const messages = body?.messages ?? [];
  const text = messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
  // A heartbeat pulse: resume the bot's unfinished work (a run cut off too often is left to it).
  if (text.includes('"verdict":"idle|wait|resume|ask_user"')) {
    const verdict = {
      verdict: 'resume',
      taskId: null,
      reason: 'the reply was cut off',
      instruction: 'Finish the reply.',
      etaMinutes: 0,
      urgency: 'normal',
      confidence: 0.9,
    };
    return { json: verdict, delayMs: between(200, 800) };
  }
  if (body?.response_format || /"decisions"/.test(text)) {
    const ids = [...text.matchAll(/task_id: (\S+)\n[\s\S]*?chaos task (\d+)/g)];
    if (ids.length) {
      const decisions = ids.map(([, id, n]) => ({ task_id: id, decision: (['act', 'escalate', 'noop'] as const)[Number(n) % 3], reason: `task ${n}` }));
      return { json: { decisions }, delayMs: between(500, 2000) };
    }
    return { text: 'Nothing to do.', delayMs: 200 };
  }
  const tag = /\[(m\d+)\]/.exec(
    [...messages]
      .reverse()
      .find((m) => m.role === 'user')
      ?.content?.toString() ?? text,
  )?.[1];
  if (tag) return { text: `Answer to [${tag}]: summarised.`, delayMs: between(1000, 5000) };
  // Every other escalated task's analysis recommends an action: a card the approver says yes to.
  const task = Number(/chaos task (\d+)/.exec(text.split('# Task\n')[1] ?? '')?.[1] ?? NaN);
  if (!isApprovedAction(text) && text.includes('You analyse a standing read-only task') && task % 6 === 1) {
    return { text: `Release ${task} looks fine.\nRECOMMENDED ACTION: Tell the team release ${task} is ready`, delayMs: between(1000, 5000) };
  }
  return { text: 'Done: nothing else to report.', delayMs: between(1000, 5000) };
}

/**
 * Execution answers the server delivered more than once for the same task and kind. A repeat counts
 * as run twice when an earlier delivery's ledger row was finished (the daemon had that answer, so
 * asking again paid twice); when every earlier one was closed `interrupted`, the kill came while
 * the answer was on its way and the daemon never had it: asking again is the take-over's job.
 */
function repeatedExecutions(requests: RecordedRequest[], ledger: Map<string, string>): { tasks: number; paidTwice: string[]; unheard: string[] } {
  const delivered = new Map<string, string[]>();
  for (const r of requests) {
    const title = executionTitle(r);
    if (title) delivered.set(title, [...(delivered.get(title) ?? []), ledger.get(String(r.headers['x-client-request-id'])) ?? 'missing']);
  }
  const paidTwice: string[] = [];
  const unheard: string[] = [];
  for (const [title, states] of delivered) {
    for (let i = 1; i < states.length; i++) (states.slice(0, i).some((state) => state !== 'interrupted') ? paidTwice : unheard).push(title);
  }
  return { tasks: delivered.size, paidTwice, unheard };
}

/** The task (and kind: its execution, or its approved action) a delivered execution answer was for; null for anything else. */
function executionTitle(r: RecordedRequest): string | null {
  const body = r.body;
  if (!body || body.response_format || r.aborted) return null;
  const text = (body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
  if (!/# Task\n/.test(text)) return null;
  const n = /chaos task (\d+)/.exec(text.split('# Task\n')[1] ?? '')?.[1];
  if (!n) return null;
  return isApprovedAction(text) ? `${n} (approved action)` : n;
}

function isApprovedAction(text: string): boolean {
  return text.includes('The user approved an action');
}

type Rpc = (method: string, params?: unknown) => Promise<unknown>;

/** Methods that do something each time they are called: never sent twice on a guess. */
const NOT_IDEMPOTENT = new Set(['bots.send_message', 'bots.create', 'subconscious.tasks_add']);

/**
 * JSON-RPC to any live daemon (the cluster's one token), trying the next on a connection error.
 * A call that may have reached a daemon that then died (the connection dropped after it was sent)
 * is tried again elsewhere only when doing it twice does no harm: a message retried on another
 * daemon after the first had committed it would be sent — and answered — twice (the short Postgres
 * run's one "duplicate reply" was that, the person's message stored twice), so such a call fails
 * instead, as "not accepted", as a careful client would treat it.
 */
function rpcClient(slots: Slot[], token: string): Rpc {
  let id = 0;
  return async (method, params) => {
    let last: unknown;
    for (const s of slots.filter((x) => x.up)) {
      try {
        const res = await fetch(`${s.url}/rpc`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: params ?? {} }),
          signal: AbortSignal.timeout(30_000),
        });
        const body = (await res.json()) as { result?: unknown; error?: { message: string } };
        if (body.error) throw new RpcError(`${method}: ${body.error.message}`);
        return body.result;
      } catch (err) {
        if (err instanceof RpcError) throw err;
        const refused = (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
        if (!refused && NOT_IDEMPOTENT.has(method)) throw new Error(`${method}: ${s.url} went away after the call was sent (${String(err)})`, { cause: err });
        last = err;
      }
    }
    throw new Error(`${method}: no daemon answered (${String(last)})`);
  };
}

class RpcError extends Error {}

interface View {
  tasks: Map<string, { id: string; status: string; error_kind: string | null; error: string | null }>;
  messages: { role: string; status: string; text: string }[];
  /** The tasks world's activity log. */
  log: { id: string; decision: string; exec_state: string; result: string | null }[];
}

async function observe(rpc: Rpc): Promise<View> {
  const tasks: View['tasks'] = new Map();
  const messages: View['messages'] = [];
  let log: View['log'] = [];
  try {
    log = (await rpc('subconscious.log_list', { limit: 1000 })) as View['log'];
    const threads = (await rpc('bots.threads_list', {})) as { id: string }[];
    for (const t of threads) {
      let before: number | undefined;
      for (;;) {
        const v = (await rpc('bots.thread', { thread_id: t.id, limit: 200, ...(before ? { before } : {}) })) as {
          messages: { seq: number; role: string; status: string; text: string }[];
          tasks: { id: string; status: string; error_kind: string | null; error: string | null }[];
          has_more: boolean;
        };
        for (const task of v.tasks) tasks.set(task.id, task);
        messages.push(...v.messages);
        if (!v.has_more || v.messages.length === 0) break;
        before = v.messages[0]!.seq;
      }
    }
  } catch {
    // a daemon went away mid-read: the next round reads again
  }
  return { tasks, messages, log };
}

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

main().catch((err: unknown) => {
  console.error(`chaos: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
});
