/**
 * Issue 9 §2, the cost cap: 3,000 `usage.summary` calls in one batch once held
 * `subconscious.status` up for 57 s (better-sqlite3 is synchronous, and the batch ran as one
 * `Promise.all`). Here a heavy batch runs over real HTTP against the real app while status is
 * asked again and again (by another client, on its own connection): its p99 must stay under
 * 50 ms — for one batch, for three clients' batches at once, and for 100 heavy calls sent at
 * once as separate requests. A correctness property with a generous
 * bound (each heavy call takes ~20 ms here); `npx tsx bench/doors.bench.ts` prints the figures.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BATCH_LENGTH } from '../../src/core/rpc.js';
import { heavyBatch, sampleStatusDuring, startLoadRig, type LoadRig } from './support/status-under-load.js';

let rig: LoadRig;

beforeAll(async () => {
  // ~12,000 ledger rows over 90 days: one usage.summary costs about what it did in the report.
  rig = await startLoadRig({ ledgerRows: 12_000 });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

describe('subconscious.status while heavy batches run', () => {
  it('refuses the reported 3,000-call batch whole, with a JSON-RPC error', async () => {
    const res = await rig.post(heavyBatch(3_000));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ error: { code: -32600, data: { max_batch: MAX_BATCH_LENGTH } } });
  });

  it('keeps status p99 under 50 ms during a batch of 100 heavy calls', async () => {
    const { latencies, result, workMs } = await sampleStatusDuring(rig, rig.postBatch(heavyBatch(MAX_BATCH_LENGTH)));
    console.log(
      `[status-under-load] one batch of 100 usage.summary (${workMs.toFixed(0)} ms): status p50 ${latencies.p50.toFixed(1)} ms, p99 ${latencies.p99.toFixed(1)} ms, max ${latencies.max.toFixed(1)} ms over ${latencies.samples} calls`,
    );
    expect(result).toMatchObject({ status: 200, answers: MAX_BATCH_LENGTH, errors: 0 });
    expect(latencies.samples).toBeGreaterThanOrEqual(30);
    expect(latencies.p99).toBeLessThan(50);
  });

  it('keeps status p99 under 50 ms while three clients send heavy batches at once', async () => {
    const work = Promise.all([0, 1, 2].map((k) => rig.postBatch(heavyBatch(MAX_BATCH_LENGTH, `c${k}-`))));
    const { latencies, result, workMs } = await sampleStatusDuring(rig, work);
    console.log(
      `[status-under-load] three concurrent batches of 100 (${workMs.toFixed(0)} ms): status p50 ${latencies.p50.toFixed(1)} ms, p99 ${latencies.p99.toFixed(1)} ms, max ${latencies.max.toFixed(1)} ms over ${latencies.samples} calls`,
    );
    for (const r of result) expect(r).toMatchObject({ status: 200, answers: MAX_BATCH_LENGTH, errors: 0 });
    expect(latencies.p99).toBeLessThan(50);
  });

  it('keeps status p99 under 50 ms while 100 heavy calls arrive at once as separate requests', async () => {
    const work = Promise.all(heavyBatch(MAX_BATCH_LENGTH, 's').map((call) => rig.post(call)));
    const { latencies, result, workMs } = await sampleStatusDuring(rig, work);
    console.log(
      `[status-under-load] 100 single usage.summary at once (${workMs.toFixed(0)} ms): status p50 ${latencies.p50.toFixed(1)} ms, p99 ${latencies.p99.toFixed(1)} ms, max ${latencies.max.toFixed(1)} ms over ${latencies.samples} calls`,
    );
    for (const r of result) expect(r.body).toMatchObject({ result: { days: 90 } });
    expect(latencies.p99).toBeLessThan(50);
    // Heavy single calls take turns like batch members: status rarely waits at all (without the
    // turns, it waited behind queued queries almost every time: p50 ~20 ms).
    expect(latencies.p50).toBeLessThan(10);
  });
});
