/**
 * On Postgres a list of values in `in` / `not in` goes as one array parameter (`= any($1)`,
 * `<> all($1)`): the same rows as a list, whatever the values hold (commas, quotes, braces, the
 * word null), and one statement text whatever the list's length.
 */
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { arrayText } from '../../src/store/pg-dialect.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const postgres = (await testDialects()).includes('postgres');

describe.skipIf(!postgres)('value lists on Postgres', () => {
  let store: TestStore | undefined;
  afterEach(async () => {
    await store?.dispose();
    store = undefined;
  });

  it('in and not in bind one array: the same rows, one text for every length', async () => {
    store = await openTestStore('postgres');
    const { db } = store;
    await sql`create table list_probe (id text primary key, n bigint, flag integer)`.execute(db);
    const ids = ['a,b', 'q"x', '{c}', 'null', "it's", 'back\\slash\\"', '', ' padded ', 'é ✓'];
    await db
      .insertInto('list_probe')
      .values(ids.map((id, i) => ({ id, n: i === 3 ? null : i + 1, flag: i < 5 ? i % 2 : 2 })))
      .execute();
    const byIds = (list: string[]) => db.selectFrom('list_probe').select('id').where('id', 'in', list).orderBy('id');
    expect(byIds(ids).compile().sql).toBe('select "id" from "list_probe" where "id" = any($1) order by "id"');
    expect(byIds(ids.slice(0, 1)).compile().sql).toBe(byIds(ids).compile().sql);
    expect((await byIds(ids).execute()).map((r) => r.id)).toEqual([...ids].sort());
    expect((await byIds(['{c}', "it's", 'absent']).execute()).map((r) => r.id)).toEqual(['{c}', "it's"].sort());
    const numbers = await db.selectFrom('list_probe').select('id').where('n', 'in', [1, 5]).orderBy('id').execute();
    expect(numbers.map((r) => r.id)).toEqual(['a,b', "it's"].sort());
    const notIn = await db.selectFrom('list_probe').select('id').where('id', 'not in', ['a,b', 'null']).orderBy('id').execute();
    expect(notIn.map((r) => r.id)).toEqual(ids.filter((id) => id !== 'a,b' && id !== 'null').sort());
    // Bound as the array's text (made here, not by pg's writer): each value comes back as it went.
    expect(arrayText(ids)).toBeTypeOf('string');
    for (const id of ids) expect((await byIds([id]).execute()).map((r) => r.id)).toEqual([id]);
    // A list that is not all strings or all finite numbers goes as an array, as before.
    expect(arrayText([1, 'a'])).toBeUndefined();
    expect(arrayText([1, Number.NaN])).toBeUndefined();
    expect(
      await db
        .selectFrom('list_probe')
        .select('id')
        .where('id', 'in', ['a,b', null as unknown as string])
        .execute(),
    ).toEqual([{ id: 'a,b' }]);
    // A list of literals is left as it was written.
    const literal = db
      .selectFrom('list_probe')
      .select('id')
      .where('flag', 'in', [sql.lit(0)]);
    expect(literal.compile().sql).toBe('select "id" from "list_probe" where "flag" in (0)');
    expect(await literal.execute()).toHaveLength(3);
  });
});
