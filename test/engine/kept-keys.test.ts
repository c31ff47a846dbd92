/**
 * A world's keys kept in memory while this process is the store's only writer (`EngineDeps.alone`):
 * read once, then every read answers from memory and every write goes through to the store and
 * into memory; anything else — not alone, too old, a failed write, a read a write overtook, a
 * write through another handle — goes back to the store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.js';
import { InstanceState, KEYS_CACHE_MAX_AGE_MS, type EngineTables } from '../../src/engine/index.js';
import { tablesView } from '../../src/store/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();

describe.each(dialects)('kept keys on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let alone: boolean;
  let state: InstanceState;
  /** Another process's handle on the same store (it never keeps anything). */
  let other: InstanceState;
  let reads: number;
  /** The next write through `state` lands, but its answer is lost (an unknown outcome). */
  let loseNextAnswer: boolean;

  beforeEach(async () => {
    store = await openTestStore(dialect);
    clock = new FakeClock();
    alone = true;
    reads = 0;
    loseNextAnswer = false;
    // This handle's statements, seen as they answer (precompiled ones too): reads counted, a write's answer lost on demand.
    const counted = store.db.withPlugin({
      transformQuery: (a) => a.node,
      transformResult: async (a) => {
        if (a.result.numAffectedRows === undefined) reads++;
        else if (loseNextAnswer) {
          loseNextAnswer = false;
          throw new Error('connection lost');
        }
        return a.result;
      },
    });
    state = new InstanceState(
      counted,
      () => clock.now(),
      () => alone,
    );
    other = new InstanceState(store.db, () => clock.now());
    await other.setMany('w', { enabled: true, total_ticks: 3 });
  });
  afterEach(async () => {
    await store.dispose();
  });

  it('reads once, then answers from memory: its own writes show at once, and reach the store', async () => {
    expect(await state.all('w')).toEqual({ enabled: true, total_ticks: 3 });
    expect(reads).toBe(1);
    await state.setMany('w', { total_ticks: 4, last_summary: 'quiet' });
    await state.set('w', 'halt', undefined);
    await state.delete('w', 'enabled');
    const kept = await state.all('w');
    expect(kept).toEqual({ total_ticks: 4, last_summary: 'quiet', halt: null });
    expect(await state.get('w', 'last_summary')).toBe('quiet');
    expect(await state.get('w', 'enabled')).toBeUndefined();
    expect(reads).toBe(1);
    kept.total_ticks = 99; // a copy: the caller's changes are not kept
    expect((await state.all('w')).total_ticks).toBe(4);
    expect(await other.all('w')).toEqual({ total_ticks: 4, last_summary: 'quiet', halt: null });
    await state.set('w', 'cursor', { seq: 7 });
    const cursor = await state.get<{ seq: number }>('w', 'cursor');
    cursor!.seq = 8; // a world's own value, changed by it: what is kept is not
    expect(await state.get('w', 'cursor')).toEqual({ seq: 7 });
  });

  it('reads the store again when not alone, when asked fresh, and after the longest trusted age', async () => {
    await state.all('w');
    await other.set('w', 'total_ticks', 10); // unseen while alone: nobody else should be writing
    expect((await state.all('w')).total_ticks).toBe(3);
    expect((await state.all('w', true)).total_ticks).toBe(10);
    await other.set('w', 'total_ticks', 11);
    alone = false;
    expect((await state.all('w')).total_ticks).toBe(11);
    alone = true;
    await other.set('w', 'total_ticks', 12);
    expect((await state.all('w')).total_ticks).toBe(12); // kept only from a read made while alone
    await other.set('w', 'total_ticks', 13);
    clock.set(clock.now() + KEYS_CACHE_MAX_AGE_MS);
    expect((await state.all('w')).total_ticks).toBe(13);
    expect(reads).toBe(5);
  });

  it('forgets what it kept when a write fails, or goes through another handle', async () => {
    await state.all('w');
    loseNextAnswer = true;
    await expect(state.setMany('w', { total_ticks: 4 })).rejects.toThrow('connection lost');
    await other.set('w', 'total_ticks', 5);
    expect((await state.all('w')).total_ticks).toBe(5);
    await tablesView<EngineTables>(store.db)
      .transaction()
      .execute((trx) => state.setMany('w', { total_ticks: 6 }, trx));
    await other.set('w', 'total_ticks', 7);
    expect((await state.all('w')).total_ticks).toBe(7);
  });

  it('does not keep a read that a write overtook', async () => {
    const read = state.all('w');
    const write = other.set('w', 'total_ticks', 8);
    const written = state.set('w', 'last_summary', 'x');
    await Promise.all([read, write, written]);
    await other.set('w', 'total_ticks', 9);
    expect((await state.all('w')).total_ticks).toBe(9);
  });
});
