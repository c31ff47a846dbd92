/**
 * pg-boss's statements on our pool (`bossDb`): its schema creation is one `BEGIN; …; COMMIT;`
 * text, and when two daemons start at once the second one's fails ("already exists", which
 * pg-boss ignores). The connection must not go back to the pool inside the aborted transaction,
 * or the next query on it fails with "current transaction is aborted" (a daemon started beside
 * another fell over). A pool of one connection makes "the next query gets that connection" sure.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { bossDb } from '../../src/coordination/pgboss.js';
import type { CoordinationTables } from '../../src/coordination/tables.js';
import { TEST_PG_URL, testDialects } from '../support/stores.js';

const postgres = (await testDialects()).includes('postgres');

describe.skipIf(!postgres)('pg-boss statements on our Postgres pool', () => {
  let db: Kysely<CoordinationTables> | undefined;
  afterEach(async () => {
    await db?.destroy();
    db = undefined;
  });

  it('a failed BEGIN…COMMIT text is rolled back before its connection is used again', async () => {
    db = new Kysely<CoordinationTables>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: TEST_PG_URL, max: 1 }) }) });
    const boss = bossDb(db);
    // What the second of two simultaneous starts sends: a transaction whose statement fails halfway.
    await expect(boss.executeSql('BEGIN; SELECT 1; SELECT 1/0; COMMIT;', [])).rejects.toThrow(/division by zero/);
    // The one connection of the pool serves the next query (it is not left in the aborted transaction).
    expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(db)).rows).toEqual([{ one: 1 }]);
    expect((await boss.executeSql('SELECT 2 AS two', [])).rows).toEqual([{ two: 2 }]);
  });

  it('two pg-boss instances creating one schema at the same moment both start and both work', async () => {
    const schema = `boss_race_${Date.now().toString(36)}`;
    db = new Kysely<CoordinationTables>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: TEST_PG_URL, max: 1 }) }) });
    const other = new Kysely<CoordinationTables>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: TEST_PG_URL, max: 1 }) }) });
    const { default: PgBoss } = await import('pg-boss');
    const make = (k: Kysely<CoordinationTables>) => new PgBoss({ db: bossDb(k), schema, schedule: false, supervise: false });
    const [a, b] = [make(db), make(other)];
    try {
      await Promise.all([a.start(), b.start()]);
      await a.createQueue('q');
      expect(await b.getQueue('q')).toMatchObject({ name: 'q' });
      expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(other)).rows).toEqual([{ one: 1 }]);
    } finally {
      await a.stop({ graceful: false, wait: true, close: false }).catch(() => undefined);
      await b.stop({ graceful: false, wait: true, close: false }).catch(() => undefined);
      await sql.raw(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).execute(db);
      await other.destroy();
    }
  });
});
