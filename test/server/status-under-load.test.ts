/**
 * Issue 9 §2, the cost cap: 3,000 `usage.summary` calls in one batch once held
 * `subconscious.status` up for 57 s (better-sqlite3 is synchronous, and the batch ran as one
 * `Promise.all`). Here heavy work runs over real HTTP against the real app while status is asked
 * again and again (by another client, on its own connection): its p99 must stay under 50 ms —
 * for one batch, for three clients' batches at once, and for 100 heavy calls sent at once as
 * separate requests. A correctness property with a generous bound (each heavy call takes ~15 ms
 * here; before the fix status waited for the whole batch, ~2 s); `npx tsx bench/doors.bench.ts`
 * prints the figures.
 *
 * This machine is shared: another process may take the CPU for tens of milliseconds at any
 * moment. So each case is measured up to three times and the best p99 must meet the bound: a
 * noisy neighbour cannot fail the test three times over, and the old dispatch fails it every
 * time by two orders of magnitude.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BATCH_LENGTH } from '../../src/core/rpc.js';
import { heavyBatch, sampleStatusDuring, startLoadRig, summarize, type Latencies, type LoadRig } from '../../devtools/status-under-load.js';

let rig: LoadRig;

beforeAll(async () => {
  // ~8,000 ledger rows over 90 days: one usage.summary {days: 90} costs about what it did in the report.
  rig = await startLoadRig({ ledgerRows: 8_000 });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

const ATTEMPTS = 3;
const BOUND_MS = 50;

/** Run `load` while sampling status, up to three times until the p99 meets the bound; returns every attempt. */
async function measure(label: string, load: (attempt: number) => Promise<unknown>): Promise<Latencies[]> {
  const attempts: Latencies[] = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    const { latencies, workMs } = await sampleStatusDuring(rig, load(i));
    attempts.push(latencies);
    console.log(
      `[status-under-load] ${label}, attempt ${i + 1} (load ${workMs.toFixed(0)} ms): status p50 ${latencies.p50.toFixed(1)} ms, p99 ${latencies.p99.toFixed(1)} ms, max ${latencies.max.toFixed(1)} ms over ${latencies.samples} calls`,
    );
    if (latencies.p99 < BOUND_MS) break;
  }
  return attempts;
}

const best = (attempts: Latencies[]) => Math.min(...attempts.map((a) => a.p99));

describe('subconscious.status while heavy work runs', () => {
  it('refuses the reported 3,000-call batch whole, with a JSON-RPC error', async () => {
    const res = await rig.post(heavyBatch(3_000));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ error: { code: -32600, data: { max_batch: MAX_BATCH_LENGTH } } });
  });

  it('keeps status p99 under 50 ms during a batch of 100 heavy calls', async () => {
    const attempts = await measure('one batch of 100 usage.summary', async (i) => {
      const res = await rig.postBatch(heavyBatch(MAX_BATCH_LENGTH, `b${i}-`));
      expect(res).toMatchObject({ status: 200, answers: MAX_BATCH_LENGTH, errors: 0 });
    });
    expect(attempts[0]!.samples).toBeGreaterThanOrEqual(30);
    expect(best(attempts)).toBeLessThan(BOUND_MS);
  });

  it('keeps status p99 under 50 ms while three clients send heavy batches at once', async () => {
    const attempts = await measure('three concurrent batches of 100', async (i) => {
      const results = await Promise.all([0, 1, 2].map((k) => rig.postBatch(heavyBatch(MAX_BATCH_LENGTH, `c${i}${k}-`))));
      for (const r of results) expect(r).toMatchObject({ status: 200, answers: MAX_BATCH_LENGTH, errors: 0 });
    });
    expect(best(attempts)).toBeLessThan(BOUND_MS);
  });

  it('keeps status p99 under 50 ms, and rarely waits at all, while 100 heavy calls arrive at once as separate requests', async () => {
    const alone: number[] = [];
    for (let i = 0; i < 10; i++) alone.push((await rig.post(heavyBatch(1)[0])).ms);
    const heavyMs = summarize(alone).p50;
    const attempts = await measure('100 single usage.summary at once', async (i) => {
      const results = await Promise.all(heavyBatch(MAX_BATCH_LENGTH, `s${i}-`).map((call) => rig.post(call)));
      for (const r of results) expect(r.body).toMatchObject({ result: { days: 90 } });
    });
    expect(best(attempts)).toBeLessThan(BOUND_MS);
    // Heavy single calls take turns like batch members, so status seldom waits behind one: its
    // median stays well under one heavy call. Without the turns it waited behind the queued
    // queries almost every time (median about one heavy call).
    expect(Math.min(...attempts.map((a) => a.p50))).toBeLessThan(heavyMs / 3);
  });
});
