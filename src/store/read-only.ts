/**
 * Reading someone's database without writing it (`simulate` reads the user's tasks). No
 * migration runs and nothing is created next to the file:
 * - SQLite with no `-wal` file (no process has it open): the file's bytes are read once and
 *   opened as an in-memory image, so not even the `-wal`/`-shm` files a read-only connection
 *   makes are left behind;
 * - SQLite with a `-wal` file (a daemon has it open): a read-only connection, which reads the
 *   latest rows through that WAL (the side files exist already);
 * - Postgres: every transaction is read-only (`default_transaction_read_only`), so the server
 *   itself refuses a write.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SQLite, type SqliteDatabase } from './sqlite-driver.js';
import pg from 'pg';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { ArrayListPostgresDialect } from './pg-dialect.js';
import { SubconsciousError } from '../core/errors.js';
import { cachedStatements } from './statement-cache.js';
import { checkPostgresUrl, defaultSqlitePath, redact, type AnyTables, type Store } from './open.js';

export interface ReadOnlyStoreOptions {
  workspace: string;
  /** `postgres://…`; otherwise the workspace's SQLite file. */
  databaseUrl?: string | undefined;
}

/** The database, read-only; null when the workspace has no SQLite database yet. */
export async function openReadOnlyStore(opts: ReadOnlyStoreOptions): Promise<Store | null> {
  const url = opts.databaseUrl?.trim();
  if (url) return openPostgresReadOnly(url);
  const file = defaultSqlitePath(opts.workspace);
  if (!existsSync(file)) return null;
  let database: SqliteDatabase;
  try {
    database = existsSync(`${file}-wal`)
      ? new SQLite(file, { readonly: true, fileMustExist: true })
      : new SQLite(rollbackImage(readFileSync(file)), { readonly: true });
  } catch (err) {
    throw new SubconsciousError('store_unavailable', `Could not read the SQLite database ${file}: ${(err as Error).message}`, {
      cause: err,
      hint: 'Check that the file is readable and is a subconscious database.',
    });
  }
  const db = new Kysely<AnyTables>({ dialect: new SqliteDialect({ database: cachedStatements(database) }) });
  return { db, dialect: 'sqlite', location: `sqlite:${file} (read-only)`, close: () => db.destroy() };
}

/** Whether `name` is a table of this store (a database never started by this version may lack it). */
export async function hasTable(store: Store, name: string): Promise<boolean> {
  const query =
    store.dialect === 'postgres'
      ? sql<{ found: unknown }>`SELECT to_regclass(${name}) IS NOT NULL AS found`
      : sql<{ found: unknown }>`SELECT count(*) AS found FROM sqlite_master WHERE type = 'table' AND name = ${name}`;
  const { rows } = await query.execute(store.db);
  const found = rows[0]?.found;
  return found === true || Number(found) > 0;
}

/**
 * An image of a WAL-mode file marked as a rollback-journal database (header bytes 18-19), which
 * SQLite needs to open it from memory. Only the in-memory copy changes.
 */
function rollbackImage(bytes: Buffer): Buffer {
  if (bytes.length >= 20 && bytes[18] === 2 && bytes[19] === 2) {
    bytes[18] = 1;
    bytes[19] = 1;
  }
  return bytes;
}

async function openPostgresReadOnly(url: string): Promise<Store> {
  checkPostgresUrl(url);
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 5000, options: '-c default_transaction_read_only=on' });
  pool.on('error', () => undefined); // an idle client's error surfaces on the next query instead
  const db = new Kysely<AnyTables>({ dialect: new ArrayListPostgresDialect({ pool }) });
  return { db, dialect: 'postgres', location: `${redact(url)} (read-only)`, close: () => db.destroy() };
}
