/**
 * Test stores on both dialects. SQLite is a fresh file in a temp folder; Postgres is a fresh
 * schema in the `test` database (so runs never collide), dropped afterwards.
 * With CI=true a missing Postgres is a failure, not a skip.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openStore, type Store, type DialectName } from '../../src/store/index.js';

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

export interface TestStore extends Store {
  /** Remove everything this store created (temp folder or Postgres schema). */
  dispose(): Promise<void>;
  /** The workspace folder (SQLite) or a temp folder (Postgres) for files. */
  workspace: string;
  /** Open a second, independent connection to the same database (as a restarted process would). */
  reopen(): Promise<Store>;
}

export async function openTestStore(dialect: DialectName): Promise<TestStore> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-test-'));
  if (dialect === 'sqlite') {
    const store = await openStore({ workspace });
    return {
      ...store,
      workspace,
      reopen: () => openStore({ workspace }),
      dispose: async () => {
        await store.close();
        rmSync(workspace, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const store = await openStore({ databaseUrl: TEST_PG_URL, schema, poolSize: 4 });
  return {
    ...store,
    workspace,
    reopen: () => openStore({ databaseUrl: TEST_PG_URL, schema, poolSize: 4 }),
    dispose: async () => {
      await store.close();
      await dropSchema(schema);
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}
