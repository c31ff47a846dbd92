/**
 * `subconscious.status` latency while heavy RPC work runs, over real HTTP against the real app
 * (SQLite, the ledger seeded with model calls so `usage.summary` has work to do). Shared by the
 * test (a generous bound) and `bench/doors.bench.ts` (the figures).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createApp, type App } from '../src/app/app.js';
import { silentLogger } from '../src/core/index.js';
import type { LedgerTables } from '../src/llm/index.js';
import { tablesView } from '../src/store/index.js';
import { createHttpApp, listen, type Listening } from '../src/server/http.js';
import { createMetrics } from '../src/server/metrics.js';

export interface LoadRig {
  app: App;
  http: Listening;
  token: string;
  /**
   * `subconscious.status` as another client asks it: its own keep-alive connection (not the pool
   * the load uses, so what is measured is the server, not this process's HTTP client queue).
   */
  status(): Promise<{ ok: boolean; ms: number }>;
  /** POST a body to /rpc; resolves to the parsed answer and the wall time. */
  post(body: unknown): Promise<{ status: number; body: unknown; ms: number }>;
  /**
   * POST one call as load: the answer is read to its end and only its size kept. A hundred
   * `usage.summary` answers (~100 kB each) parsed here would be this process's garbage — and this
   * process is also the server's, so the collector's pauses would be measured as the server's.
   */
  postLoad(body: unknown): Promise<{ status: number; bytes: number }>;
  /**
   * POST a batch and only count what comes back (answers in a row, errors among them): parsing a
   * 10 MB answer here would block this process — which is also the server's — and be measured
   * as the server's latency.
   */
  postBatch(batch: unknown[]): Promise<{ status: number; bytes: number; answers: number; errors: number; overBudget: number }>;
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
  const statusBody = JSON.stringify({ jsonrpc: '2.0', id: 'status', method: 'subconscious.status', params: {} });
  return {
    app,
    http,
    token: TOKEN,
    status: () =>
      new Promise((resolve, reject) => {
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
            res.on('end', () => resolve({ ok: res.statusCode === 200 && text.includes('"instances"'), ms: performance.now() - started }));
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
      const res = await fetch(`${http.url}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      let bytes = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength;
      return { status: res.status, bytes };
    },
    async postBatch(batch) {
      const res = await fetch(`${http.url}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(batch),
      });
      let bytes = 0;
      const markers = { answers: '"jsonrpc":"2.0"', errors: '"error":{', overBudget: '"code":"over_budget"' };
      const counts = { answers: 0, errors: 0, overBudget: 0 };
      const keep = Math.max(...Object.values(markers).map((m) => m.length)) - 1;
      let tail = '';
      const decoder = new TextDecoder();
      // Counted chunk by chunk (each joined to the last few characters before it: a marker may
      // straddle two chunks): one split of the whole 10 MB answer at the end held this process,
      // which is also the server's, for tens of ms and was measured as the server's latency.
      const scan = (text: string) => {
        const window = tail + text;
        for (const k of Object.keys(markers) as (keyof typeof markers)[]) {
          // A marker wholly inside the kept tail was counted with the chunk before.
          for (let at = window.indexOf(markers[k]); at !== -1; at = window.indexOf(markers[k], at + 1)) if (at + markers[k].length > tail.length) counts[k]++;
        }
        tail = window.slice(-keep);
      };
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.byteLength;
        scan(decoder.decode(chunk, { stream: true }));
      }
      scan(decoder.decode());
      return { status: res.status, bytes, ...counts };
    },
    async close() {
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
): Promise<{ latencies: Latencies; ms: number[]; result: T; workMs: number }> {
  const started = performance.now();
  let done = false;
  let workMs = 0;
  const settled = work.finally(() => {
    done = true;
    workMs = performance.now() - started;
  });
  const ms: number[] = [];
  while (!done) {
    const answer = await rig.status();
    if (!answer.ok) throw new Error('subconscious.status failed under load');
    ms.push(answer.ms);
    await new Promise((r) => setTimeout(r, Math.random() * 2 * pauseMs));
  }
  return { latencies: summarize(ms), ms, result: await settled, workMs };
}

/** A batch of `n` `usage.summary` calls over 90 days. */
export function heavyBatch(n: number, tag = 'u'): unknown[] {
  return Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: `${tag}${i}`, method: 'usage.summary', params: { days: 90, timezone: 'UTC' } }));
}
