/**
 * A recycled Postgres test schema (pg-schema-pool.ts) is what a fresh migration leaves: no row of
 * the test before, the migrations' own rows, sequences from the start, `schema_migrations` as a
 * migration writes it; a schema a test changed is dropped, never handed on.
 */
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { recycleSchema, undoLayerMigrations } from './pg-schema-pool.js';
import { coordinationMigrations, createCoordinator } from '../../src/coordination/index.js';
import { FakeClock, uuid } from '../../src/core/index.js';
import { MODULE_MIGRATIONS as STORE_MIGRATIONS, openTestStore, postgresReachable, TEST_PG_URL, type TestStore } from './stores.js';
import { pendingMigrations } from '../../src/store/migrate.js';
import { productModules } from '../../src/app/modules.js';

const reachable = await postgresReachable();
const MODULE_MIGRATIONS = productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : []));

it("the test stores' migrations are the product modules', in their order", () => {
  expect(STORE_MIGRATIONS.map((set) => Object.entries(set))).toEqual(MODULE_MIGRATIONS.map((set) => Object.entries(set)));
});

async function schemaExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [name])).rows.length > 0;
  } finally {
    await client.end();
  }
}

/** Every table's rows and every sequence's state, by name. */
async function contents(store: TestStore): Promise<Record<string, unknown>> {
  const tables = await sql<{ t: string; k: string }>`
    SELECT c.relname AS t, c.relkind::text AS k FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'S') ORDER BY 1`.execute(store.db);
  const out: Record<string, unknown> = {};
  for (const { t, k } of tables.rows) {
    if (t === 'schema_migrations') {
      out[t] = (await sql<{ name: string }>`SELECT name FROM schema_migrations ORDER BY name`.execute(store.db)).rows;
    } else if (k === 'S') {
      out[t] = (await sql`SELECT last_value, is_called FROM ${sql.table(t)}`.execute(store.db)).rows;
    } else {
      out[t] = (await sql`SELECT * FROM ${sql.table(t)}`.execute(store.db)).rows;
    }
  }
  return out;
}

describe.skipIf(!reachable)('recycled Postgres test schemas', () => {
  const open: TestStore[] = [];
  afterAll(async () => {
    for (const s of open) await s.dispose().catch(() => undefined);
  });

  it('hand the next test what a fresh migration leaves, under its own name', async () => {
    const first = await openTestStore('postgres');
    const pristine = await contents(first);
    await sql`INSERT INTO event_log (type, payload, at) SELECT 'k', '{}', 1 FROM generate_series(1, 3)`.execute(first.db);
    await sql`INSERT INTO tick_leases (world, generation) VALUES ('w2', 2)`.execute(first.db);
    await sql`DELETE FROM memory_state`.execute(first.db);
    expect(await contents(first)).not.toEqual(pristine);
    await first.dispose();
    expect(await schemaExists(first.schema!)).toBe(false);

    const second = await openTestStore('postgres');
    open.push(second);
    expect(second.schema).not.toBe(first.schema);
    expect(await contents(second)).toEqual(pristine);
    expect(await pendingMigrations(second.db, MODULE_MIGRATIONS)).toEqual([]);
    const again = await second.reopen();
    await again.close();
  });

  it('drop a schema a test changed instead of handing it on', async () => {
    const altered = await openTestStore('postgres');
    await sql`ALTER TABLE tick_leases ADD COLUMN extra text`.execute(altered.db);
    await altered.close();
    expect(await recycleSchema(TEST_PG_URL, altered.schema!)).toBe('dropped');
    expect(await schemaExists(altered.schema!)).toBe(false);

    const unmigrated = await openTestStore('postgres');
    await sql`DELETE FROM schema_migrations WHERE name = (SELECT max(name) FROM schema_migrations)`.execute(unmigrated.db);
    await unmigrated.close();
    expect(await recycleSchema(TEST_PG_URL, unmigrated.schema!)).toBe('dropped');

    const untouched = await openTestStore('postgres');
    await sql`INSERT INTO tick_leases (world) VALUES ('w')`.execute(untouched.db);
    await untouched.close();
    expect(await recycleSchema(TEST_PG_URL, untouched.schema!)).toBe('recycled');
  });

  it("undo the coordinator's migrations, so a store a coordinator ran on is recycled too", async () => {
    const store = await openTestStore('postgres');
    const pristine = await contents(store);
    const coordinator = await createCoordinator({ store, clock: new FakeClock(Date.now()), ids: uuid });
    await coordinator.send({ queue: 'q', payload: { n: 1 } });
    await coordinator.stop();
    await undoLayerMigrations(store.db, [coordinationMigrations]);
    expect(await contents(store)).toEqual(pristine);
    await store.close();
    expect(await recycleSchema(TEST_PG_URL, store.schema!, [`${store.schema!}_pgboss`])).toBe('recycled');
  });
});
