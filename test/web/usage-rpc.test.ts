/**
 * `usage.summary` / `usage.calls` over the real dispatcher, on both dialects: the figures must
 * equal what a direct count of the ledger says, days are the viewer's calendar days (UTC unless a
 * zone is named), and bad params name the field.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FakeClock } from '../../src/core/clock.js';
import { RpcDispatcher } from '../../src/server/rpc.js';
import type { Insertable } from 'kysely';
import { usageRpcHandlers, usageSummary, type ModelCallsTable } from '../../src/llm/index.js';
import { implement, usageContract, type UsageCalls, type UsageSummary } from '../../src/protocol/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 15, 10, 30, 0); // 2026-03-15 10:30 UTC

let seq = 0;
function call(over: Partial<Insertable<ModelCallsTable>>): Insertable<ModelCallsTable> {
  seq += 1;
  return {
    id: `c${String(seq).padStart(5, '0')}`,
    at: NOW,
    world: 'tasks',
    purpose: 'evaluate',
    role: 'local',
    model: 'scripted-small',
    input_tokens: 100,
    output_tokens: 10,
    estimated: 0,
    latency_ms: 42,
    outcome: 'ok',
    error: null,
    ...over,
  };
}

describe.each(await testDialects())('usage RPC on %s', (dialect) => {
  let store: TestStore;
  let rpc: RpcDispatcher;
  const clock = new FakeClock(NOW);

  beforeEach(async () => {
    store = await openTestStore(dialect);
    rpc = new RpcDispatcher(implement(usageContract, usageRpcHandlers(store.db, clock)));
  });
  afterEach(async () => {
    await store.dispose();
  });

  it('an empty ledger gives 14 zero days ending today', async () => {
    const s = (await rpc.call('usage.summary')) as UsageSummary;
    expect(s.days).toBe(14);
    expect(s.per_day).toHaveLength(14);
    expect(s.per_day[13]?.date).toBe('2026-03-15');
    expect(s.per_day[0]?.date).toBe('2026-03-02');
    expect(s.from).toBe(Date.UTC(2026, 2, 2));
    expect(s.totals).toMatchObject({ calls: 0, input_tokens: 0, output_tokens: 0, failed: 0, by_world: [], by_purpose: [] });
    expect(s.today.calls).toBe(0);
    const calls = (await rpc.call('usage.calls')) as UsageCalls;
    expect(calls).toEqual({ total: 0, rows: [] });
  });

  it('groups by UTC day, world and purpose, and leaves out days outside the window', async () => {
    await store.db
      .insertInto('model_calls')
      .values([
        call({ at: NOW - 1000, input_tokens: 300, output_tokens: 30 }),
        call({ at: Date.UTC(2026, 2, 15, 0, 0, 0), world: 'heartbeat', purpose: 'pulse', input_tokens: 50, output_tokens: 5 }),
        // one millisecond before today's UTC midnight belongs to yesterday
        call({ at: Date.UTC(2026, 2, 15) - 1, purpose: 'execute', input_tokens: 7, output_tokens: 3, outcome: 'timeout', error: 'took too long' }),
        call({ at: NOW - 13 * DAY, world: 'memory', purpose: 'reflect', input_tokens: 1000, output_tokens: 200 }),
        // 14 days back is outside a 14-day window
        call({ at: Date.UTC(2026, 2, 1, 23, 0, 0), input_tokens: 9999, output_tokens: 9999 }),
      ])
      .execute();

    const s = (await rpc.call('usage.summary', {})) as UsageSummary;
    expect(s.today).toMatchObject({ date: '2026-03-15', calls: 2, input_tokens: 350, output_tokens: 35, failed: 0 });
    expect(s.today.by_world).toEqual([
      { key: 'tasks', calls: 1, input_tokens: 300, output_tokens: 30, failed: 0, interrupted: 0 },
      { key: 'heartbeat', calls: 1, input_tokens: 50, output_tokens: 5, failed: 0, interrupted: 0 },
    ]);
    const yesterday = s.per_day[12]!;
    expect(yesterday).toMatchObject({ date: '2026-03-14', calls: 1, input_tokens: 7, output_tokens: 3, failed: 1 });
    expect(yesterday.by_purpose).toEqual([{ key: 'execute', calls: 1, input_tokens: 7, output_tokens: 3, failed: 1, interrupted: 0 }]);
    expect(s.per_day[0]).toMatchObject({ date: '2026-03-02', calls: 1, input_tokens: 1000, output_tokens: 200 });
    expect(s.totals).toMatchObject({ calls: 4, input_tokens: 1357, output_tokens: 238, failed: 1 });
    expect(s.worlds).toEqual(['heartbeat', 'memory', 'tasks']);
    expect(s.purposes).toEqual(['evaluate', 'execute', 'pulse', 'reflect']);

    const wider = (await rpc.call('usage.summary', { days: 15 })) as UsageSummary;
    expect(wider.totals.calls).toBe(5);
    expect(wider.totals.input_tokens).toBe(1357 + 9999);
    const one = (await rpc.call('usage.summary', { days: 1 })) as UsageSummary;
    expect(one.per_day).toHaveLength(1);
    expect(one.totals.calls).toBe(2);
  });

  it('pages calls newest first, filters by world and reports latency and outcome', async () => {
    const rows = Array.from({ length: 25 }, (_, i) =>
      call({
        at: NOW - i * 60_000,
        world: i % 5 === 0 ? 'memory' : 'tasks',
        latency_ms: 10 + i,
        outcome: i === 3 ? 'rate_limit' : 'ok',
        error: i === 3 ? '429' : null,
        estimated: i === 4 ? 1 : 0,
      }),
    );
    await store.db.insertInto('model_calls').values(rows).execute();

    const first = (await rpc.call('usage.calls', { limit: 10 })) as UsageCalls;
    expect(first.total).toBe(25);
    expect(first.rows.map((r) => r.latency_ms)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(first.rows[3]).toMatchObject({ outcome: 'rate_limit', error: '429', estimated: false });
    expect(first.rows[4]?.estimated).toBe(true);
    const last = (await rpc.call('usage.calls', { limit: 10, offset: 20 })) as UsageCalls;
    expect(last.rows).toHaveLength(5);
    const memory = (await rpc.call('usage.calls', { world: 'memory', limit: 50 })) as UsageCalls;
    expect(memory.total).toBe(5);
    expect(memory.rows.every((r) => r.world === 'memory')).toBe(true);
  });

  it("counts the viewer's calendar days when the call names a time zone, else the daemon's", async () => {
    await store.db
      .insertInto('model_calls')
      .values([
        call({ at: Date.UTC(2026, 2, 14, 16, 0), input_tokens: 40 }), // 15 March 01:00 in Tokyo, 14 March in UTC
        call({ at: Date.UTC(2026, 2, 14, 14, 0), input_tokens: 20 }), // 14 March 23:00 in Tokyo
      ])
      .execute();
    const tokyo = (await rpc.call('usage.summary', { timezone: 'Asia/Tokyo' })) as UsageSummary;
    expect(tokyo.timezone).toBe('Asia/Tokyo');
    expect(tokyo.today).toMatchObject({ date: '2026-03-15', start: Date.UTC(2026, 2, 14, 15), calls: 1, input_tokens: 40 });
    expect(tokyo.per_day[12]).toMatchObject({ date: '2026-03-14', calls: 1, input_tokens: 20 });
    expect(tokyo.from).toBe(Date.UTC(2026, 2, 1, 15));
    const utc = (await rpc.call('usage.summary', {})) as UsageSummary;
    expect(utc.timezone).toBe('UTC');
    expect(utc.today.calls).toBe(0);
    expect(utc.per_day[12]).toMatchObject({ date: '2026-03-14', calls: 2 });
    // A daemon configured for Tokyo counts Tokyo days when the page names no zone.
    const daemonInTokyo = new RpcDispatcher(implement(usageContract, usageRpcHandlers(store.db, clock, 'Asia/Tokyo')));
    expect(((await daemonInTokyo.call('usage.summary', {})) as UsageSummary).today.calls).toBe(1);
  });

  it('a DST change makes a 23-hour day, and its calls stay on their own day', async () => {
    const afterSpringForward = new RpcDispatcher(implement(usageContract, usageRpcHandlers(store.db, new FakeClock(Date.UTC(2026, 3, 2, 12)))));
    await store.db
      .insertInto('model_calls')
      .values([
        call({ at: Date.UTC(2026, 2, 29, 21, 30) }), // 29 March 23:30 CEST
        call({ at: Date.UTC(2026, 2, 29, 22, 30) }), // 30 March 00:30 CEST
      ])
      .execute();
    const s = (await afterSpringForward.call('usage.summary', { days: 7, timezone: 'Europe/Paris' })) as UsageSummary;
    const day = (date: string) => s.per_day.findIndex((d) => d.date === date);
    const spring = day('2026-03-29');
    expect(s.per_day[spring + 1]!.start - s.per_day[spring]!.start).toBe(23 * 3_600_000);
    expect(s.per_day[spring]!.calls).toBe(1);
    expect(s.per_day[day('2026-03-30')]!.calls).toBe(1);
    expect(s.per_day.map((d) => d.date)).toEqual(['2026-03-27', '2026-03-28', '2026-03-29', '2026-03-30', '2026-03-31', '2026-04-01', '2026-04-02']);
  });

  it('rejects bad params naming the field', async () => {
    await expect(rpc.call('usage.summary', { timezone: 'Mars/Olympus_Mons' })).rejects.toThrow(/timezone/);
    await expect(rpc.call('usage.summary', { days: 0 })).rejects.toThrow(/days/);
    await expect(rpc.call('usage.summary', { days: 91 })).rejects.toThrow(/days/);
    await expect(rpc.call('usage.calls', { limit: -1 })).rejects.toThrow(/limit/);
    await expect(rpc.call('usage.calls', { offset: 1.5 })).rejects.toThrow(/offset/);
    await expect(rpc.call('usage.calls', { wrld: 'x' })).rejects.toThrow(/wrld|Unrecognized/i);
  });

  it('summary totals always equal a direct count of the ledger (property)', async () => {
    const arb = fc.array(
      fc.record({
        dayBack: fc.integer({ min: 0, max: 20 }),
        msInDay: fc.integer({ min: 0, max: DAY - 1 }),
        world: fc.constantFrom('tasks', 'heartbeat', 'memory'),
        purpose: fc.constantFrom('evaluate', 'pulse', 'execute'),
        input: fc.integer({ min: 0, max: 5000 }),
        output: fc.integer({ min: 0, max: 500 }),
        ok: fc.boolean(),
      }),
      { maxLength: 30 },
    );
    await fc.assert(
      fc.asyncProperty(
        arb,
        fc.integer({ min: 1, max: 20 }),
        fc.constantFrom('UTC', 'Asia/Tokyo', 'America/Los_Angeles', 'Asia/Kathmandu'),
        async (items, days, zone) => {
          await store.db.deleteFrom('model_calls').execute();
          const todayStart = Math.floor(NOW / DAY) * DAY;
          const values = items
            .map((it) =>
              call({
                at: todayStart - it.dayBack * DAY + it.msInDay,
                world: it.world,
                purpose: it.purpose,
                input_tokens: it.input,
                output_tokens: it.output,
                outcome: it.ok ? 'ok' : 'model_error',
              }),
            )
            .filter((v) => v.at <= NOW);
          if (values.length) await store.db.insertInto('model_calls').values(values).execute();
          const s = (await rpc.call('usage.summary', { days, timezone: zone })) as UsageSummary;
          // A SQLite file's read thread answers the same aggregate in columns: the same summary.
          if (store.readColumns) expect(await usageSummary(store.db, NOW, days, zone, store.readColumns)).toEqual(s);
          const from = s.from;
          expect(s.per_day).toHaveLength(days);
          const inWindow = values.filter((v) => v.at >= from);
          expect(s.totals.calls).toBe(inWindow.length);
          expect(s.totals.input_tokens).toBe(inWindow.reduce((a, v) => a + v.input_tokens, 0));
          expect(s.totals.output_tokens).toBe(inWindow.reduce((a, v) => a + v.output_tokens, 0));
          expect(s.per_day.reduce((a, d) => a + d.calls, 0)).toBe(inWindow.length);
          expect(s.totals.by_world.reduce((a, g) => a + g.input_tokens, 0)).toBe(s.totals.input_tokens);
          expect(s.totals.by_purpose.reduce((a, g) => a + g.output_tokens, 0)).toBe(s.totals.output_tokens);
          expect(s.today.calls).toBe(values.filter((v) => v.at >= s.today.start).length);
          // Each day holds exactly the calls between its start and the next day's.
          s.per_day.forEach((d, i) => {
            const end = s.per_day[i + 1]?.start ?? Infinity;
            expect(d.calls).toBe(values.filter((v) => v.at >= d.start && v.at < end).length);
          });
        },
      ),
      { numRuns: 15 },
    );
  });
});
