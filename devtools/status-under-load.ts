/**
 * `subconscious.status` latency while heavy RPC work runs, over real HTTP against the real app
 * (SQLite, the ledger seeded with model calls so `usage.summary` has work to do). Shared by the
 * test (a generous bound) and `bench/doors.bench.ts` (the figures).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import path from 'node:path';
import { createApp, type App } from '../src/app/app.js';
import { silentLogger } from '../src/core/index.js';
import type { LedgerTables } from '../src/llm/index.js';
import { tablesView } from '../src/store/index.js';
import { createHttpApp, listen, type Listening } from '../src/server/http.js';
import { startLoadClient, type BatchCounts } from './load-client.js';
import { createMetrics } from '../src/server/metrics.js';

/** One status call: its answer was right, its wall time, and how much of it this thread waited for a CPU. */
export interface StatusSample {
  ok: boolean;
  /** When the call was sent (`performance.now()`). */
  at: number;
  ms: number;
  /**
   * Of `ms`, the time this thread was ready to run but not running (Linux's per-thread
   * `schedstat`: the run-queue wait); null where the kernel does not say. Server and client
   * share this thread, so a slow call with most of its time here was the machine's scheduling,
   * not work the server did.
   */
  waitMs: number | null;
}

export interface ThreadCpu {
  main: number;
  loadClient: number;
  other: number;
}

/** CPU time of each of this process's threads so far (ms, by thread id); null where /proc does not say. */
function cpuByThread(): Map<number, number> | null {
  try {
    const out = new Map<number, number>();
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        out.set(Number(tid), Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return out;
  } catch {
    return null;
  }
}

/** This thread's run-queue wait so far, in ms (null off Linux or without schedstats). */
function runQueueWaitMs(): number | null {
  try {
    const wait = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]);
    return Number.isFinite(wait) ? wait / 1e6 : null;
  } catch {
    return null;
  }
}

export interface LoadRig {
  app: App;
  http: Listening;
  token: string;
  /**
   * `subconscious.status` as another client asks it: its own keep-alive connection (not the pool
   * the load uses, so what is measured is the server, not this process's HTTP client queue).
   */
  status(): Promise<StatusSample>;
  /** POST a body to /rpc; resolves to the parsed answer and the wall time. */
  post(body: unknown): Promise<{ status: number; body: unknown; ms: number }>;
  /**
   * POST one call as load, from the load client's thread (load-client.ts): the answer is read to
   * its end there and only its size comes back. A client on this thread — which is also the
   * server's — had its HTTP work and its garbage measured as the server's latency.
   */
  postLoad(body: unknown): Promise<{ status: number; bytes: number }>;
  /** POST a batch from the load client's thread and only count what comes back (answers in a row, errors among them). */
  postBatch(batch: unknown[]): Promise<BatchCounts>;
  /**
   * CPU used so far by this process's threads, in ms (Linux; null elsewhere): the server's main
   * thread (also the status client's), the load client's thread, and every other (the store's read
   * thread, V8's collector and compiler helpers). Two cores are shared by all of them.
   */
  cpu(): Promise<ThreadCpu | null>;
  /**
   * How long this thread's garbage collections paused it within `[from, to]` (`performance.now()`
   * times; ms). The server and the status client share the thread, so a status call that met a
   * pause waited it out.
   */
  gcPausedMs(from: number, to: number): number;
  close(): Promise<void>;
}

const TOKEN = 'load-test-token-0123456789abcdefghij';

/** The app on a fresh SQLite workspace with `ledgerRows` model calls spread over the last 90 days. */
export async function startLoadRig(opts: { ledgerRows: number; now?: number }): Promise<LoadRig> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-load-'));
  const app = await createApp({
    workspace,
    log: silentLogger,
    env: { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' },
  });
  await seedLedger(app, opts.ledgerRows, opts.now ?? Date.now());
  const metrics = createMetrics(app.llm.ledger, app.events);
  const http = await listen(
    createHttpApp({ rpc: app.rpc, events: app.feed, token: TOKEN, metrics: metrics.registry, webRoot: null, log: silentLogger, health: async () => ({}) }),
    { host: '127.0.0.1', port: 0 },
  );
  const statusAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const client = startLoadClient();
  const statusBody = JSON.stringify({ jsonrpc: '2.0', id: 'status', method: 'subconscious.status', params: {} });
  const pauses: { start: number; end: number }[] = [];
  const gcWatch = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  gcWatch.observe({ entryTypes: ['gc'] });
  return {
    app,
    http,
    token: TOKEN,
    status: () =>
      new Promise((resolve, reject) => {
        const waitedBefore = runQueueWaitMs();
        const started = performance.now();
        const req = request(
          {
            host: '127.0.0.1',
            port: http.port,
            path: '/rpc',
            method: 'POST',
            agent: statusAgent,
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(statusBody), authorization: `Bearer ${TOKEN}` },
          },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => {
              const ms = performance.now() - started;
              const waitedAfter = waitedBefore === null ? null : runQueueWaitMs();
              resolve({
                ok: res.statusCode === 200 && text.includes('"instances"'),
                at: started,
                ms,
                waitMs: waitedAfter === null ? null : waitedAfter - waitedBefore!,
              });
            });
          },
        );
        req.on('error', reject);
        req.end(statusBody);
      }),
    async post(body) {
      const started = performance.now();
      const res = await fetch(`${http.url}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null, ms: performance.now() - started };
    },
    async postLoad(body) {
      const { status, bytes } = await client.post(`${http.url}/rpc`, TOKEN, JSON.stringify(body));
      return { status, bytes };
    },
    postBatch: (batch) => client.post(`${http.url}/rpc`, TOKEN, JSON.stringify(batch)),
    async cpu() {
      const [threads, clientTid] = [cpuByThread(), await client.threadId];
      if (!threads) return null;
      const main = threads.get(process.pid) ?? 0;
      const loadClient = clientTid === null ? 0 : (threads.get(clientTid) ?? 0);
      const all = [...threads.values()].reduce((a, b) => a + b, 0);
      return { main, loadClient, other: all - main - loadClient };
    },
    gcPausedMs: (from, to) => pauses.reduce((sum, p) => sum + Math.max(0, Math.min(to, p.end) - Math.max(from, p.start)), 0),
    async close() {
      gcWatch.disconnect();
      await client.close();
      statusAgent.destroy();
      await http.close();
      metrics.dispose();
      await app.close();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

async function seedLedger(app: App, rows: number, now: number): Promise<void> {
  const worlds = ['tasks', 'heartbeat', 'memory', 'steering', 'conscious'];
  const purposes = ['evaluate', 'execute', 'pulse', 'digest', 'reflect', 'approved_action'];
  const span = 90 * 24 * 3_600_000;
  for (let start = 0; start < rows; start += 500) {
    const values = Array.from({ length: Math.min(500, rows - start) }, (_, k) => {
      const i = start + k;
      return {
        id: `seed-${i}`,
        at: now - Math.floor((i / rows) * span),
        world: worlds[i % worlds.length]!,
        purpose: purposes[(i * 7) % purposes.length]!,
        role: i % 3 ? 'local' : 'agent',
        model: 'llama3.2',
        input_tokens: 500 + (i % 900),
        output_tokens: 40 + (i % 120),
        estimated: i % 2,
        latency_ms: 300 + (i % 700),
        outcome: i % 17 ? 'ok' : 'timeout',
        error: null,
      };
    });
    await tablesView<LedgerTables>(app.store.db).insertInto('model_calls').values(values).execute();
  }
}

export interface Latencies {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

export function summarize(ms: number[]): Latencies {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  return { samples: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN };
}

/**
 * Ask for status one request after another until `work` settles, with a random pause of 0 to
 * 2 × `pauseMs` between (a fixed pause would fall into step with the batch's members and always
 * arrive in the gaps between them).
 */
export async function sampleStatusDuring<T>(
  rig: LoadRig,
  work: Promise<T>,
  pauseMs = 10,
): Promise<{ latencies: Latencies; ms: number[]; samples: StatusSample[]; result: T; workMs: number; cpu: ThreadCpu | null }> {
  const cpuBefore = await rig.cpu();
  const started = performance.now();
  let done = false;
  let workMs = 0;
  const settled = work.finally(() => {
    done = true;
    workMs = performance.now() - started;
  });
  const samples: StatusSample[] = [];
  while (!done) {
    const answer = await rig.status();
    if (!answer.ok) throw new Error('subconscious.status failed under load');
    samples.push(answer);
    await new Promise((r) => setTimeout(r, Math.random() * 2 * pauseMs));
  }
  const result = await settled;
  const cpuAfter = await rig.cpu();
  const cpu =
    cpuBefore && cpuAfter
      ? { main: cpuAfter.main - cpuBefore.main, loadClient: cpuAfter.loadClient - cpuBefore.loadClient, other: cpuAfter.other - cpuBefore.other }
      : null;
  const ms = samples.map((x) => x.ms);
  return { latencies: summarize(ms), ms, samples, result, workMs, cpu };
}

/** A batch of `n` `usage.summary` calls over 90 days. */
export function heavyBatch(n: number, tag = 'u'): unknown[] {
  return Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: `${tag}${i}`, method: 'usage.summary', params: { days: 90, timezone: 'UTC' } }));
}
