/**
 * Marked statements (`PREPARED`) go to Postgres as named prepared statements, once per
 * connection; unmarked ones stay unnamed (nothing is kept for them on the server).
 */
import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { PREPARED } from '../../src/store/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const postgres = (await testDialects()).includes('postgres');

describe.skipIf(!postgres)('named prepared statements on Postgres', () => {
  let store: TestStore | undefined;
  afterEach(async () => {
    await store?.dispose();
    store = undefined;
  });

  it('a marked statement is prepared once on its connection and answers as before; an unmarked one is not', async () => {
    store = await openTestStore('postgres');
    const prepared = await store.db.connection().execute(async (conn) => {
      const marked = CompiledQuery.raw(`${PREPARED} SELECT $1::int + 1 AS n`, [41]);
      expect((await conn.executeQuery<{ n: number }>(marked)).rows).toEqual([{ n: 42 }]);
      expect((await conn.executeQuery<{ n: number }>(CompiledQuery.raw(marked.sql, [1]))).rows).toEqual([{ n: 2 }]);
      await conn.executeQuery(CompiledQuery.raw('SELECT $1::int AS unmarked', [1]));
      return (await conn.executeQuery<{ statement: string }>(CompiledQuery.raw('SELECT statement FROM pg_prepared_statements'))).rows;
    });
    expect(prepared.map((r) => r.statement)).toEqual([`${PREPARED} SELECT $1::int + 1 AS n`]);
  });
});
