import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InstanceState, type EngineTables } from '../../src/engine/index.js';
import { applyMigrations, openStore, tablesView, type Store } from '../../src/store/index.js';
import { cachedStatements } from '../../src/store/statement-cache.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a scratch table made by the test
type AnyDb = Kysely<any>;

describe('SQLite prepared-statement cache', () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-stmt-'));
    store = await openStore({ workspace: dir });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reuses a statement compiled to the same text, with the new parameters', async () => {
    const state = new InstanceState(tablesView<EngineTables>(store.db), () => 1);
    await state.set('w', 'a', 1);
    await state.set('w', 'b', 2);
    const before = { ...store.statements! };
    expect(await state.get('w', 'a')).toBe(1);
    expect(await state.get('w', 'b')).toBe(2);
    expect(await state.get('w', 'c')).toBeUndefined();
    expect(store.statements!.prepared - before.prepared).toBeLessThanOrEqual(1);
    expect(store.statements!.reused - before.reused).toBeGreaterThanOrEqual(2);
  });

  it('returns correct rows after a migration changes the schema under a cached statement', async () => {
    const db = store.db as AnyDb;
    await db.schema
      .createTable('scratch')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .execute();
    await db.insertInto('scratch').values({ id: 1 }).execute();
    const read = () => db.selectFrom('scratch').selectAll().orderBy('id').execute();
    expect(await read()).toEqual([{ id: 1 }]);
    await applyMigrations(store.db, 'sqlite', [
      {
        '9999_scratch_note': {
          up: async (m) => {
            await (m as AnyDb).schema
              .alterTable('scratch')
              .addColumn('note', 'text', (c) => c.defaultTo('x'))
              .execute();
          },
        },
      },
    ]);
    expect(await read()).toEqual([{ id: 1, note: 'x' }]);
    await db.schema.dropTable('scratch').execute();
    await expect(read()).rejects.toThrow(/no such table/);
    await db.schema.createTable('scratch').addColumn('other', 'text').execute();
    await db.insertInto('scratch').values({ other: 'y' }).execute();
    expect(await db.selectFrom('scratch').selectAll().execute()).toEqual([{ other: 'y' }]);
  });

  it('never hands out a statement that is still iterating', () => {
    const cached = cachedStatements(new SQLite(':memory:'));
    cached.prepare('CREATE TABLE nums (n INTEGER)').run([]);
    for (let n = 1; n <= 3; n++) cached.prepare('INSERT INTO nums VALUES (?)').run([n]);
    const text = 'SELECT n FROM nums ORDER BY n';
    const seen: number[] = [];
    for (const row of cached.prepare(text).iterate([]) as Iterable<{ n: number }>) {
      seen.push(row.n);
      // The same text while the first statement iterates: a fresh statement answers.
      expect((cached.prepare(text).all([]) as Array<{ n: number }>).map((r) => r.n)).toEqual([1, 2, 3]);
    }
    expect(seen).toEqual([1, 2, 3]);
    cached.close();
  });

  it('stays bounded, evicting the least recently used', () => {
    const cached = cachedStatements(new SQLite(':memory:'), 2);
    for (const n of [1, 2, 1, 3, 1]) cached.prepare(`SELECT ${n}`);
    expect(cached.stats).toEqual({ prepared: 3, reused: 2, size: 2 });
    cached.close();
  });
});
