/** The model-call ledger on both dialects: rows, the usage summary, paged calls. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sequentialIds } from '../../src/core/index.js';
import { Ledger, type CallRecord } from '../../src/llm/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';
import { ledgerRows, openRig } from './setup.js';

const DAY = 86_400_000;
const day0 = Date.UTC(2026, 2, 10); // 2026-03-10 00:00 UTC

function call(over: Partial<CallRecord>): CallRecord {
  return {
    at: day0 + 3_600_000,
    world: 'tasks',
    purpose: 'evaluate',
    role: 'local',
    model: 'm',
    inputTokens: 100,
    outputTokens: 10,
    estimated: false,
    latencyMs: 20,
    outcome: 'ok',
    ...over,
  };
}

describe.each(await testDialects())('Ledger on %s', (dialect) => {
  let store: TestStore;
  let ledger: Ledger;
  beforeEach(async () => {
    store = await openTestStore(dialect);
    ledger = new Ledger(store.db, sequentialIds('row'));
  });
  afterEach(async () => {
    await store.dispose();
  });

  async function seed() {
    await ledger.record(call({}));
    await ledger.record(call({ at: day0 + 7_200_000, inputTokens: 50, outputTokens: 5, estimated: true }));
    await ledger.record(call({ at: day0 + 7_300_000, outcome: 'rate_limit', inputTokens: 0, outputTokens: 0, error: 'slow down' }));
    await ledger.record(call({ at: day0 + DAY + 1, world: 'heartbeat', purpose: 'pulse', inputTokens: 300, outputTokens: 30 }));
    await ledger.record(call({ at: day0 + DAY + 2, world: 'heartbeat', purpose: 'resume', role: 'agent', inputTokens: 1000, outputTokens: 200 }));
    await ledger.record(call({ at: day0 + 5 * DAY, world: 'memory' })); // outside the range below
  }

  it('writes rows with every field, clamping and capping what it must', async () => {
    await ledger.record(call({ inputTokens: 12.6, latencyMs: -3, error: 'e'.repeat(5000), outcome: 'provider' }));
    const [row] = await store.db.selectFrom('model_calls').selectAll().execute();
    expect(row).toMatchObject({ id: 'row-1', at: day0 + 3_600_000, world: 'tasks', purpose: 'evaluate', role: 'local', model: 'm', outcome: 'provider' });
    expect(Number(row!.input_tokens)).toBe(13);
    expect(Number(row!.latency_ms)).toBe(0);
    expect(row!.error).toHaveLength(2000);
  });

  it('summarises by world, by purpose and per UTC day within the range', async () => {
    await seed();
    const summary = await ledger.summary({ since: day0, until: day0 + 2 * DAY });
    expect(summary.totals).toEqual({ calls: 5, inputTokens: 1450, outputTokens: 245, failed: 1, estimated: 1, interrupted: 0 });
    expect(summary.byWorld).toEqual([
      { world: 'tasks', calls: 3, inputTokens: 150, outputTokens: 15, failed: 1, estimated: 1, interrupted: 0 },
      { world: 'heartbeat', calls: 2, inputTokens: 1300, outputTokens: 230, failed: 0, estimated: 0, interrupted: 0 },
    ]);
    expect(summary.byPurpose.map((p) => [p.world, p.purpose, p.calls, p.inputTokens])).toEqual([
      ['tasks', 'evaluate', 3, 150],
      ['heartbeat', 'pulse', 1, 300],
      ['heartbeat', 'resume', 1, 1000],
    ]);
    expect(summary.byDay.map((d) => [d.day, d.start, d.calls, d.outputTokens])).toEqual([
      ['2026-03-10', day0, 3, 15],
      ['2026-03-11', day0 + DAY, 2, 230],
    ]);
  });

  it('an empty range is all zeros', async () => {
    const summary = await ledger.summary({ since: 0, until: day0 });
    expect(summary.totals.calls).toBe(0);
    expect(summary.byWorld).toEqual([]);
    expect(summary.byDay).toEqual([]);
  });

  it('pages calls newest first with a total, optionally for one world', async () => {
    await seed();
    const first = await ledger.calls({ limit: 2 });
    expect(first.total).toBe(6);
    expect(first.rows.map((r) => r.world)).toEqual(['memory', 'heartbeat']);
    expect(first.rows[1]).toMatchObject({ purpose: 'resume', role: 'agent', inputTokens: 1000, estimated: false, outcome: 'ok' });
    const next = await ledger.calls({ limit: 2, offset: 2 });
    expect(next.rows.map((r) => r.purpose)).toEqual(['pulse', 'evaluate']);
    expect(next.rows[1]).toMatchObject({ outcome: 'rate_limit', error: 'slow down' });
    const tasks = await ledger.calls({ world: 'tasks' });
    expect(tasks.total).toBe(3);
    expect(tasks.rows.map((r) => r.estimated)).toEqual([false, true, false]);
  });

  it('createLlm writes its rows on this dialect', async () => {
    const rig = await openRig({ dialect });
    try {
      rig.server.enqueue({ text: 'hi', usage: { prompt_tokens: 3, completion_tokens: 1 } }, { status: 500 });
      await rig.llm.text({ world: 'tasks', purpose: 'evaluate', role: 'local' }, { prompt: 'x' });
      await expect(rig.llm.text({ world: 'tasks', purpose: 'evaluate', role: 'local' }, { prompt: 'x' })).rejects.toMatchObject({ kind: 'provider' });
      expect((await ledgerRows(rig)).map((r) => [r.outcome, Number(r.input_tokens)])).toEqual([
        ['ok', 3],
        ['provider', 0],
      ]);
      expect((await rig.llm.ledger.summary({ since: 0, until: rig.clock.now() })).totals).toMatchObject({ calls: 2, failed: 1 });
    } finally {
      await rig.dispose();
    }
  });
});
