import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InstanceState } from '../../src/engine/index.js';
import { applyMigrations, baseMigrations as migrations } from '../../src/store/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();

describe.each(dialects)('store on %s', (dialect) => {
  let store: TestStore;
  const now = 1_000;
  let state: InstanceState;

  beforeEach(async () => {
    store = await openTestStore(dialect);
    state = new InstanceState(store.db, () => now);
  });
  afterEach(async () => {
    await store.dispose();
  });

  it('applies migrations idempotently', async () => {
    // Opening again over the same database re-runs the migrator: nothing to do, nothing lost.
    await state.set('tasks', 'cursor', 42);
    const again = await store.reopen();
    try {
      const reread = new InstanceState(again.db, () => now);
      expect(await reread.get('tasks', 'cursor')).toBe(42);
    } finally {
      await again.close();
    }
  });

  it('upgrades a database made by an older version: only the missing migrations run', async () => {
    const older = Object.fromEntries(Object.entries(migrations).slice(0, -1)) as typeof migrations;
    const latest = Object.keys(migrations).at(-1)!;
    await store.db
      .deleteFrom('schema_migrations' as never)
      .where('name' as never, '=', latest as never)
      .execute();
    await migrations[latest]!.down!(store.db, { dialect });
    expect(await applyMigrations(store.db, dialect, older)).toEqual([]);
    expect(await applyMigrations(store.db, dialect, migrations)).toEqual([latest]);
    expect(await applyMigrations(store.db, dialect, migrations)).toEqual([]);
  });

  it('namespaces state per world', async () => {
    await state.set('memory', 'last_tick_at', 10);
    await state.set('steering', 'last_tick_at', 20);
    expect(await state.get('memory', 'last_tick_at')).toBe(10);
    expect(await state.get('steering', 'last_tick_at')).toBe(20);
    expect(await state.all('memory')).toEqual({ last_tick_at: 10 });
    await expect(state.get('bad:world', 'x')).rejects.toThrow(/invalid world/);
  });

  it('round-trips JSON values and epoch-ms bigints', async () => {
    const big = Date.UTC(2026, 10, 30, 12, 0, 0);
    await state.setMany('tasks', { obj: { a: [1, 'two'] }, at: big, none: null });
    expect(await state.all('tasks')).toEqual({ obj: { a: [1, 'two'] }, at: big, none: null });
    await store.db.insertInto('tick_leases').values({ world: 'w', holder: null, generation: 1, expires_at: big }).execute();
    const lease = await store.db.selectFrom('tick_leases').selectAll().executeTakeFirstOrThrow();
    expect(lease.expires_at).toBe(big);
    expect(typeof lease.expires_at).toBe('number');
  });

  const LEGACY = ['last_tick_at', 'baseline_checkpoint_id'];
  it('migrates the bare legacy keys a world claims to its namespace', async () => {
    await store.db.insertInto('instance_state').values({ key: 'last_tick_at', value: '123', updated_at: 1 }).execute();
    await store.db.insertInto('instance_state').values({ key: 'baseline_checkpoint_id', value: '"cp-7"', updated_at: 1 }).execute();
    expect((await state.migrateLegacyKeys('memory', LEGACY)).sort()).toEqual(['baseline_checkpoint_id', 'last_tick_at']);
    expect(await state.get('memory', 'last_tick_at')).toBe(123);
    expect(await state.get('memory', 'baseline_checkpoint_id')).toBe('cp-7');
    // Idempotent: a second run moves nothing and changes nothing.
    expect(await state.migrateLegacyKeys('memory', LEGACY)).toEqual([]);
    expect(await state.get('memory', 'last_tick_at')).toBe(123);
  });

  it('never clobbers an existing namespaced value with a legacy one', async () => {
    await state.set('memory', 'last_tick_at', 999);
    await store.db.insertInto('instance_state').values({ key: 'last_tick_at', value: '1', updated_at: 1 }).execute();
    expect(await state.migrateLegacyKeys('memory', LEGACY)).toEqual([]);
    expect(await state.get('memory', 'last_tick_at')).toBe(999);
    // The legacy row is kept, not lost.
    const legacy = await store.db.selectFrom('instance_state').select('value').where('key', '=', 'last_tick_at').executeTakeFirst();
    expect(legacy?.value).toBe('1');
  });
});
