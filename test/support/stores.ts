/**
 * Test stores on both dialects. SQLite is a fresh file in a temp folder; Postgres is a schema of
 * its own in the `test` database (so runs never collide), as a migration leaves it: a fresh one,
 * or one another test of the run has finished with, emptied and checked (pg-schema-pool.ts).
 * With CI=true a missing Postgres is a failure, not a skip.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Kysely } from 'kysely';
import { claimPooledSchema, notePristine, recycleSchema, undoLayerMigrations } from './pg-schema-pool.js';
import { botsMigrations } from '../../src/bots/migrations.js';
import { coordinationMigrations } from '../../src/coordination/migrations/index.js';
import { memoryMigrations } from '../../src/memory/migrations.js';
import { orchestrationMigrations } from '../../src/orchestration/migrations.js';
import { runtimesMigrations } from '../../src/runtimes/migrations.js';
import { openStore, type DialectName, type MigrationSet, type OpenStoreOptions, type Store } from '../../src/store/index.js';
import { consciousMigrations } from '../../src/worlds/conscious/migrations.js';
import { heartbeatMigrations } from '../../src/worlds/heartbeat/migrations.js';
import { memoryWorldMigrations } from '../../src/worlds/memory/migrations.js';
import { steeringMigrations } from '../../src/worlds/steering/migrations.js';
import { tasksMigrations } from '../../src/worlds/tasks/migrations/index.js';

/**
 * The product modules' migrations, in the modules' order: a test store holds every table the
 * daemon would have. Read from each module's migrations file rather than through `productModules`,
 * which would load every module (seconds of import in each of the many files that open a store);
 * pg-schema-pool.test.ts checks that the two lists are the same.
 */
export const MODULE_MIGRATIONS: readonly MigrationSet[] = [
  { ...memoryMigrations, ...memoryWorldMigrations },
  tasksMigrations,
  consciousMigrations,
  botsMigrations,
  runtimesMigrations,
  heartbeatMigrations,
  orchestrationMigrations,
  steeringMigrations,
];

/** Migrations a layer applies on a test store itself (`createCoordinator`): undone before the schema is recycled. */
const LAYER_MIGRATIONS: MigrationSet[] = [coordinationMigrations];

export const TEST_PG_URL = process.env.SUBCONSCIOUS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let pgReachable: Promise<boolean> | undefined;

export function postgresReachable(): Promise<boolean> {
  pgReachable ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return pgReachable;
}

/** The dialects this run covers. Under CI, Postgres is required. */
export async function testDialects(): Promise<DialectName[]> {
  if (await postgresReachable()) return ['sqlite', 'postgres'];
  if (process.env.CI === 'true') throw new Error(`Postgres is required in CI but ${TEST_PG_URL} is unreachable.`);
  console.warn(`[tests] Postgres unreachable at ${TEST_PG_URL}: running SQLite only (CI=true makes this a failure).`);
  return ['sqlite'];
}

/** A store whose connection is untyped (see `TestStore.db`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see TestStore.db
export type AnyStore = Omit<Store, 'db'> & { db: Kysely<any> };

export interface TestStore extends AnyStore {
  /** The connection is untyped so a test can hand it to any layer (each takes its own typed view) and read any table. */
  /** Remove everything this store created (temp folder or Postgres schema). */
  dispose(): Promise<void>;
  /** The workspace folder (SQLite) or a temp folder (Postgres) for files. */
  workspace: string;
  /** Open a second, independent connection to the same database (as a restarted process would). */
  reopen(): Promise<AnyStore>;
}

export async function openTestStore(dialect: DialectName): Promise<TestStore> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-test-'));
  if (dialect === 'sqlite') {
    const store = await openStore({ workspace, migrations: MODULE_MIGRATIONS });
    return {
      ...store,
      workspace,
      reopen: () => openStore({ workspace, migrations: MODULE_MIGRATIONS }),
      dispose: async () => {
        await store.close();
        rmSync(workspace, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  // A schema another test has finished with, emptied (pg-schema-pool.ts), or else a fresh one.
  await claimPooledSchema(TEST_PG_URL, schema).catch(() => false);
  const store = await openStore(pgOptions(schema));
  await notePristine(TEST_PG_URL, schema);
  return {
    ...store,
    workspace,
    reopen: () => openStore(pgOptions(schema)),
    dispose: async () => {
      await undoLayerMigrations(store.db, LAYER_MIGRATIONS).catch(() => undefined);
      await store.close();
      // The coordinator's pg-boss schema is named after the store's; then back to the pool (or dropped).
      await recycleSchema(TEST_PG_URL, schema, [`${schema}_pgboss`]);
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/**
 * A test store's Postgres connection: its own schema, and commits that do not wait for the disk
 * (`synchronous_commit=off`: a test database need not survive a crash). What a test reads and
 * writes is the same; only the wait at each commit goes.
 */
function pgOptions(schema: string): OpenStoreOptions {
  return { databaseUrl: TEST_PG_URL, schema, poolSize: 4, migrations: MODULE_MIGRATIONS, postgresSettings: TEST_PG_SETTINGS };
}

export const TEST_PG_SETTINGS = { synchronous_commit: 'off' } as const;

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** `openStore` as the daemon opens it (every product module's tables), with an untyped connection. */
export function openProductStore(opts: Omit<OpenStoreOptions, 'migrations'>): Promise<AnyStore> {
  return openStore({ ...opts, migrations: MODULE_MIGRATIONS });
}
