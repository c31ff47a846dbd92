/**
 * A quiet tick writes only what a crash needs: its lease (taken, released), nothing else. Its
 * counters wait in memory (status and the scheduler see them at once) and reach the store with the
 * next write the instance makes anyway, after `QUIET_FLUSH_MS`, or at stop.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, sequentialIds, silentLogger } from '../../src/core/index.js';
import { Instance, QUIET_FLUSH_MS, type EngineDeps, type World } from '../../src/engine/index.js';
import { StoreCheckpointer } from '../../src/graph/index.js';
import { createLlm } from '../../src/llm/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();

describe.each(dialects)('quiet tick writes on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let instance: Instance;
  let observed = 0;

  beforeEach(async () => {
    store = await openTestStore(dialect);
    clock = new FakeClock();
    const ids = sequentialIds('q');
    const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'none', timeoutMs: 1000 };
    const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids, log: silentLogger });
    const deps: EngineDeps = {
      db: store.db,
      llm,
      clock,
      ids,
      events: new EventBus(() => clock.now()),
      log: silentLogger,
      checkpointer: new StoreCheckpointer(store.db, clock),
    };
    const world: World<null, null, null> = {
      kind: 'still',
      roles: [],
      intervalMinutes: () => 5,
      observe: async () => {
        observed++;
        return { quiet: true, tainted: false, data: null };
      },
      prepareContext: async () => null,
      reflect: async () => {
        throw new Error('a quiet tick never reflects');
      },
      commit: async () => ({ summary: 'nothing new' }),
    };
    instance = new Instance(world, deps);
  });
  afterEach(async () => {
    await store.dispose();
  });

  /** The world's keys as the store holds them, with when each row was last written. */
  async function stored(): Promise<Record<string, { value: unknown; at: number }>> {
    const rows = await store.db.selectFrom('instance_state').select(['key', 'value', 'updated_at']).where('key', 'like', 'still:%').execute();
    return Object.fromEntries(rows.map((r) => [String(r.key).slice('still:'.length), { value: JSON.parse(String(r.value)), at: Number(r.updated_at) }]));
  }

  it('writes no status row on a quiet tick; status, keys and the next write carry the counters', async () => {
    expect((await instance.tick()).kind).toBe('quiet');
    const first = await stored();
    expect(first.total_ticks?.value).toBe(1);
    const statementsBefore = store.statements ? store.statements.prepared + store.statements.reused : 0;
    for (let k = 0; k < 5; k++) {
      clock.set(clock.now() + 30_000);
      expect((await instance.tick()).kind).toBe('quiet');
    }
    if (store.statements) {
      // lease take, keys read, lease check, lease release: four statements per quiet tick
      expect(store.statements.prepared + store.statements.reused - statementsBefore).toBe(5 * 4);
    }
    // Nothing of the world's state was written by the five quiet ticks.
    expect(await stored()).toEqual(first);
    // This process sees them at once.
    const status = await instance.status();
    expect(status.total_ticks).toBe(6);
    expect(status.last_tick_at).toBe(clock.now());
    expect((await instance.keys()).last_tick_at).toBe(clock.now());
    expect(observed).toBe(6);

    // After QUIET_FLUSH_MS the next quiet tick writes them.
    clock.set(clock.now() + QUIET_FLUSH_MS);
    await instance.tick();
    const flushed = await stored();
    expect(flushed.total_ticks?.value).toBe(7);
    expect(flushed.last_tick_at?.value).toBe(clock.now());

    // And stop writes what waits.
    clock.set(clock.now() + 30_000);
    await instance.tick();
    expect((await stored()).total_ticks?.value).toBe(7);
    await instance.stop();
    expect((await stored()).total_ticks?.value).toBe(8);
  });

  it('a disabled world is skipped after one read of its keys; waiting counters stay in status', async () => {
    await instance.tick();
    clock.set(clock.now() + 30_000);
    await instance.tick();
    expect((await stored()).total_ticks?.value).toBe(1);
    await instance.setEnabled(false);
    expect((await instance.tick()).kind).toBe('skipped');
    await instance.setEnabled(true);
    expect((await instance.status()).total_ticks).toBe(2);
  });
});
