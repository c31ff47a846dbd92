/**
 * A world's read-only probe (`World.probe`): a tick it finds surely quiet ends before the tick
 * lease — keys read, the probe's reads, nothing written, no lease taken, no model call — and a
 * tick that may have work still takes the lease, so a second worker stays excluded from it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventBus, FakeClock, flush, sequentialIds, silentLogger } from '../../src/core/index.js';
import { localLeases } from '../../src/coordination/index.js';
import { Instance, Scheduler, type EngineDeps, type World } from '../../src/engine/index.js';
import { StoreCheckpointer } from '../../src/graph/index.js';
import { createLlm } from '../../src/llm/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();

describe.each(dialects)('a probed quiet tick on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let deps: EngineDeps;
  let instance: Instance;
  /** What the probe answers: a quiet summary, null (maybe work), or an error. */
  let answer: string | null | Error;
  let calls: { probe: number; observe: number; commit: number };

  beforeEach(async () => {
    store = await openTestStore(dialect);
    clock = new FakeClock();
    const ids = sequentialIds('p');
    const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'none', timeoutMs: 1000 };
    const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids, log: silentLogger });
    deps = { db: store.db, llm, clock, ids, events: new EventBus(() => clock.now()), log: silentLogger, checkpointer: new StoreCheckpointer(store.db, clock) };
    answer = 'nothing new';
    calls = { probe: 0, observe: 0, commit: 0 };
    instance = new Instance(probedWorld(), deps);
  });
  afterEach(async () => {
    await store.dispose();
  });

  function probedWorld(): World<null, null, null> {
    return {
      kind: 'probed',
      roles: [],
      intervalMinutes: () => 5,
      probe: async (ctx) => {
        calls.probe++;
        await ctx.state.get('cursor');
        if (answer instanceof Error) throw answer;
        return answer;
      },
      observe: async () => {
        calls.observe++;
        return { quiet: true, tainted: false, data: null };
      },
      prepareContext: async () => null,
      reflect: async () => {
        throw new Error('a quiet tick never reflects');
      },
      commit: async () => {
        calls.commit++;
        return { summary: 'observed: nothing new' };
      },
    };
  }

  /** Waits until the n-th tick ran and wrote its next time, and the loop has gone back to sleep. */
  const tickedBy = (scheduler: Scheduler) => async (n: number) => {
    await vi.waitFor(() => expect([calls.probe, scheduler.inFlight()]).toEqual([n, 0]), { timeout: 5000, interval: 1 });
    for (let i = 0; i < 20; i++) await flush();
  };
  const leaseRow = () => store.db.selectFrom('tick_leases').select(['holder', 'generation']).where('world', '=', 'probed').executeTakeFirst();
  const stored = async () =>
    (await store.db.selectFrom('instance_state').select(['key', 'value', 'updated_at']).where('key', 'like', 'probed:%').orderBy('key').execute()).map((r) => [
      r.key,
      r.value,
      Number(r.updated_at),
    ]);

  it('ends quiet without the lease, observe or commit, and writes nothing after its first status', async () => {
    const first = await instance.tick();
    expect(first).toMatchObject({ kind: 'quiet', message: 'nothing new' });
    expect(await leaseRow()).toBeUndefined(); // never taken
    const before = await stored();
    const statementsBefore = store.statements ? store.statements.prepared + store.statements.reused : 0;
    for (let k = 0; k < 5; k++) {
      clock.set(clock.now() + 30_000);
      expect((await instance.tick()).kind).toBe('quiet');
    }
    // keys read + the probe's read: two statements per quiet tick, none of them a write
    if (store.statements) expect(store.statements.prepared + store.statements.reused - statementsBefore).toBe(5 * 2);
    expect(await stored()).toEqual(before);
    expect(calls).toEqual({ probe: 6, observe: 0, commit: 0 });
    const status = await instance.status();
    expect(status).toMatchObject({ total_ticks: 6, last_tick_at: clock.now(), last_outcome: 'quiet', last_summary: 'nothing new', running: false });
  });

  it('through the scheduler, reads its keys once a tick: the pass that finds it due hands them to the probe', async () => {
    const scheduler = new Scheduler(() => [instance], clock, silentLogger, { maxSleepMs: 60_000 });
    const ticked = tickedBy(scheduler);
    scheduler.start();
    await ticked(1);
    await scheduler.stop(); // its first tick's bookkeeping done
    const statementsBefore = store.statements ? store.statements.prepared + store.statements.reused : 0;
    scheduler.start();
    for (let k = 2; k <= 7; k++) {
      await clock.advance(5 * 60_000);
      await ticked(k);
    }
    await scheduler.stop();
    expect(calls).toEqual({ probe: 7, observe: 0, commit: 0 });
    // Per tick: the pass's keys read (the probe uses it), the probe's own read, next_tick_at
    // written; and the quiet counters' 10-minute flush every other tick (5 minutes apart).
    if (store.statements) expect(store.statements.prepared + store.statements.reused - statementsBefore).toBe(6 * 3 + 3);
    expect(await instance.status()).toMatchObject({ total_ticks: 7, last_outcome: 'quiet', last_tick_at: clock.now() });
  });

  it('alone on the store, the scheduler keeps a quiet tick’s next time in memory: written with the 10-minute flush and at stop, shown at once', async () => {
    const scheduler = new Scheduler(() => [instance], clock, silentLogger, { maxSleepMs: 60_000, alone: () => true });
    const ticked = tickedBy(scheduler);
    const storedNext = async () => {
      const row = await store.db.selectFrom('instance_state').select('value').where('key', '=', 'probed:next_tick_at').executeTakeFirst();
      return row ? (JSON.parse(String(row.value)) as number) : null;
    };
    scheduler.start();
    await ticked(1);
    await scheduler.stop();
    const count = () => (store.statements ? store.statements.prepared + store.statements.reused : 0);
    const statementsBefore = count();
    let checks = 0;
    scheduler.start();
    const lags: number[] = [];
    for (let k = 2; k <= 7; k++) {
      await clock.advance(5 * 60_000);
      await ticked(k);
      const before = count();
      // This process shows the next tick at once; the store has it (once flushed) at most 10 minutes late.
      expect((await instance.status()).next_tick_at).toBe(clock.now() + 5 * 60_000);
      const stored = await storedNext();
      if (stored !== null) lags.push(clock.now() + 5 * 60_000 - stored);
      checks += count() - before;
    }
    await scheduler.stop();
    expect(lags.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...lags)).toBeLessThanOrEqual(10 * 60_000);
    expect(lags).toContain(5 * 60_000); // behind, so not written every tick
    // Per tick: the pass's keys read and the probe's read, nothing written; the flush every other tick.
    if (store.statements) expect(count() - statementsBefore - checks).toBe(6 * 2 + 3);
    await instance.stop();
    expect(await storedNext()).toBe(clock.now() + 5 * 60_000);
  });

  it('alone on the store (deps.alone), a quiet tick reads its keys from memory (again each half hour) and writes its counters hourly', async () => {
    const alone = new Instance(probedWorld(), { ...deps, alone: () => true });
    const scheduler = new Scheduler(() => [alone], clock, silentLogger, { maxSleepMs: 60_000, alone: () => true });
    const ticked = tickedBy(scheduler);
    const storedTicks = async () => {
      const row = await store.db.selectFrom('instance_state').select('value').where('key', '=', 'probed:total_ticks').executeTakeFirst();
      return row ? Number(JSON.parse(String(row.value))) : 0;
    };
    scheduler.start();
    await ticked(1);
    const count = () => (store.statements ? store.statements.prepared + store.statements.reused : 0);
    let checks = 0;
    const before = count();
    const perTick: number[] = [];
    for (let k = 2; k <= 14; k++) {
      const start = count();
      await clock.advance(5 * 60_000);
      await ticked(k);
      perTick.push(count() - start);
      const c = count();
      expect((await alone.status()).total_ticks).toBe(k); // this process shows every tick at once
      checks += count() - c;
    }
    await scheduler.stop();
    if (store.statements) {
      // 13 ticks, 5 minutes apart: the keys read again each half hour (the longest they are
      // trusted) and the counters written once, at the hour; nothing else.
      expect(perTick.filter((n) => n > 0)).toEqual([1, 2]);
      expect(count() - before - checks).toBe(3);
    }
    expect(await storedTicks()).toBeGreaterThanOrEqual(12);
    expect(await storedTicks()).toBeLessThan(14);
    await alone.stop();
    expect(await storedTicks()).toBe(14);
  });

  it('runs quiet beside another worker holding the lease, but a tick with work is still excluded', async () => {
    const other = await localLeases(store.db, 'elsewhere:1', clock, 120_000).lease('probed');
    expect(other).not.toBeNull();
    expect((await instance.tick()).kind).toBe('quiet');
    expect((await leaseRow())?.holder).toBe('elsewhere:1'); // untouched

    answer = null; // maybe work: the full tick needs the lease, which the other worker holds
    const skipped = await instance.tick();
    expect(skipped.kind).toBe('skipped');
    expect(skipped.message).toMatch(/tick lock held by elsewhere:1/);
    expect(calls.observe).toBe(0);

    await other!.release();
    const full = await instance.tick();
    expect(full).toMatchObject({ kind: 'quiet', message: 'observed: nothing new' });
    expect(calls).toMatchObject({ observe: 1, commit: 1 });
    expect((await leaseRow())?.generation).toBe(2); // taken by the full tick (after the other worker's)
  });

  it('runs the full tick when the probe fails, or when a tick is left open to resume', async () => {
    answer = new Error('store hiccup');
    expect((await instance.tick()).message).toBe('observed: nothing new');
    expect(calls).toEqual({ probe: 1, observe: 1, commit: 1 });

    answer = 'nothing new';
    await store.db
      .insertInto('instance_state')
      .values({ key: 'probed:open_tick', value: JSON.stringify({ tickId: 'left', startedAt: clock.now(), since: null }), updated_at: clock.now() })
      .execute();
    const resumed = await instance.tick();
    expect(resumed).toMatchObject({ kind: 'quiet', resumed: true, message: 'observed: nothing new' });
    expect(calls.probe).toBe(1); // an open tick goes straight to the lease
  });

  it('a disabled world is skipped by the probe path without the lease', async () => {
    await instance.setEnabled(false);
    expect((await instance.tick()).kind).toBe('skipped');
    expect(calls.probe).toBe(0);
    expect(await leaseRow()).toBeUndefined();
  });
});
