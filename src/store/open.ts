/**
 * Opening the store: SQLite (embedded default, WAL) or Postgres (`postgres://…`), the same
 * schema on both, migrations applied at open. Postgres may be given a `schema` so that test
 * runs (or tenants) never collide.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import { READ_PRAGMAS, SQLite, type SqliteDatabase } from './sqlite-driver.js';
import pg from 'pg';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { ArrayListPostgresDialect } from './pg-dialect.js';
import { SubconsciousError } from '../core/errors.js';
import { applyMigrations } from './migrate.js';
import { baseMigrations } from './migrations/index.js';
import type { MigrationSet } from './migrate.js';
import { pgNotifications, type Notifications } from './notify.js';
import { cachedStatements } from './statement-cache.js';
import { prepareMarked } from './pg-prepared.js';
import type { ColumnReader } from './columns.js';
import { readWorkerDialect } from './read-dialect.js';

export type DialectName = 'sqlite' | 'postgres';

/** No table is known here (DESIGN: the store knows no module's tables): each owner takes a typed view with `tablesView`. */
export type AnyTables = object;

export interface Store {
  db: Kysely<AnyTables>;
  /**
   * For heavy reads (the usage tab's aggregates): on a SQLite file, a read-only connection on a
   * worker thread, so the statement never holds the event loop (store/read-worker.ts); absent
   * where `db` is already fine (Postgres answers over a socket; `:memory:` has no second connection).
   */
  reads?: Kysely<AnyTables>;
  /** With `reads`: a compiled read answered on that thread in columns (columns.ts), for reads of thousands of small rows. */
  readColumns?: ColumnReader;
  dialect: DialectName;
  /** Where the data lives, for logs and status (`sqlite:/path` or `postgres://host/db`, no password). */
  location: string;
  /** Postgres: the schema given at open (a test run's own), so other layers can name theirs after it. */
  schema?: string | undefined;
  /** Postgres only: LISTEN/NOTIFY on this database, scoped to this store's schema. */
  notifications?: Notifications;
  /** SQLite only: the prepared-statement cache's counts (statement-cache.ts). */
  statements?: { readonly prepared: number; readonly reused: number; readonly size: number };
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** Workspace folder: SQLite lives at `<workspace>/.subconscious/subconscious.db`. */
  workspace?: string;
  /** An explicit SQLite file (`:memory:` for a throwaway store). */
  sqliteFile?: string;
  /** `postgres://…`: use Postgres instead of SQLite. */
  databaseUrl?: string;
  /** Postgres only: the schema to use (created if missing). */
  schema?: string;
  /** Postgres pool size (default 10). */
  poolSize?: number;
  /** The modules' migrations, applied after the base ones, set by set in this order. */
  migrations?: readonly MigrationSet[];
  /**
   * Postgres only: session settings for every connection of the pool (`-c name=value`). The
   * product sets none; test stores turn `synchronous_commit` off (a test database need not
   * survive a crash, and each commit then skips its wait for the disk).
   */
  postgresSettings?: Readonly<Record<string, string>>;
}

// int8 (bigint) columns hold epoch milliseconds: well inside Number's exact range.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));

export function defaultSqlitePath(workspace: string): string {
  return path.join(workspace, '.subconscious', 'subconscious.db');
}

export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  const url = opts.databaseUrl?.trim();
  const store = url ? await openPostgres(url, opts) : openSqlite(opts);
  try {
    await applyMigrations(store.db, store.dialect, [baseMigrations, ...(opts.migrations ?? [])]);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw new SubconsciousError('store_unavailable', `Could not migrate the database at ${store.location}: ${(err as Error).message}`, {
      cause: err,
      hint: 'Check that the database is reachable and that this user may create tables.',
    });
  }
  return store;
}

function openSqlite(opts: OpenStoreOptions): Store {
  const file = opts.sqliteFile ?? defaultSqlitePath(opts.workspace ?? process.cwd());
  if (file !== ':memory:') makePrivate(file, opts.sqliteFile === undefined);
  let database: SqliteDatabase;
  try {
    database = new SQLite(file);
    database.pragma('journal_mode = WAL');
    database.pragma('busy_timeout = 5000');
    database.pragma('foreign_keys = ON');
    database.pragma('synchronous = NORMAL');
    for (const pragma of READ_PRAGMAS) database.pragma(pragma);
  } catch (err) {
    throw new SubconsciousError('store_unavailable', `Could not open the SQLite database ${file}: ${(err as Error).message}`, {
      cause: err,
      hint: 'Check the path and its permissions, or set SUBCONSCIOUS_DATABASE_URL to use Postgres.',
    });
  }
  const cached = cachedStatements(database);
  const db = new Kysely<AnyTables>({ dialect: new SqliteDialect({ database: cached }) });
  const readDialect = file === ':memory:' ? undefined : readWorkerDialect(file);
  const reads = readDialect ? new Kysely<AnyTables>({ dialect: readDialect }) : undefined;
  return {
    db,
    ...(reads && readDialect ? { reads, readColumns: readDialect.columns } : {}),
    dialect: 'sqlite',
    location: `sqlite:${file}`,
    statements: cached.stats,
    close: async () => {
      await reads?.destroy();
      await readDialect?.close();
      await db.destroy();
    },
  };
}

/**
 * The database holds tasks, the activity log and the model ledger: only its owner may read it.
 * The file is created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the
 * database file's mode), and existing ones are tightened. `.subconscious/` (the default place)
 * is 0700; the folder of a file given explicitly is the caller's and is left alone. The daemon
 * logs each tightening at start (server/private-files.ts); here it happens silently, for every
 * command that opens the store.
 */
function makePrivate(file: string, inPrivateFolder: boolean): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, ...(inPrivateFolder ? { mode: 0o700 } : {}) });
  if (inPrivateFolder) restrict(dir, 0o700);
  try {
    closeSync(openSync(file, 'wx', 0o600)); // an empty file is an empty SQLite database
  } catch {
    // it exists already
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`]) restrict(f, 0o600);
}

/** Drop the bits `mode` does not allow; a missing file or one this user may not change is left alone. */
function restrict(target: string, mode: number): void {
  try {
    const current = statSync(target).mode & 0o777;
    if (current & ~mode) chmodSync(target, current & mode);
  } catch {
    // missing, or not ours: SQLite reports a file it cannot use when it opens it
  }
}

/** A database URL this store can open: `postgres://` or `postgresql://`; config_invalid otherwise. */
export function checkPostgresUrl(url: string): void {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new SubconsciousError('config_invalid', `SUBCONSCIOUS_DATABASE_URL must start with postgres:// (got "${url.slice(0, 40)}")`);
  }
}

async function openPostgres(url: string, opts: OpenStoreOptions): Promise<Store> {
  checkPostgresUrl(url);
  const schema = opts.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new SubconsciousError('config_invalid', `Postgres schema "${schema}" must be lower-case letters, digits and underscores.`);
  }
  const settings: Record<string, string> = { ...opts.postgresSettings, ...(schema ? { search_path: schema } : {}) };
  for (const [name, value] of Object.entries(settings)) {
    if (!/^[a-z_][a-z0-9_.]*$/.test(name) || !/^[A-Za-z0-9_.,-]+$/.test(value)) {
      throw new SubconsciousError('config_invalid', `Postgres setting "${name}=${value}" must be a plain name and value.`);
    }
  }
  const options = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const location = redact(url) + (schema ? `#${schema}` : '');
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    ...(options ? { options } : {}),
  });
  pool.on('error', () => undefined); // idle client errors surface on the next query instead
  // A client in use whose connection dies (a terminated backend, a Postgres restart) fails its
  // query; its later socket error must not be an unhandled 'error' event that ends the process.
  // The pool drops the client when it comes back (it is no longer queryable).
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    prepareMarked(client);
  });
  let currentSchema: string;
  try {
    const client = await pool.connect();
    try {
      if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      currentSchema = String((await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]?.s ?? 'public');
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new SubconsciousError('store_unavailable', `Could not connect to Postgres at ${location}: ${(err as Error).message}`, {
      cause: err,
      hint: 'Start Postgres or fix SUBCONSCIOUS_DATABASE_URL (unset it to use the embedded SQLite store).',
    });
  }
  const db = new Kysely<AnyTables>({ dialect: new ArrayListPostgresDialect({ pool }) });
  const notifications = pgNotifications({ connectionString: url, schema, scope: currentSchema });
  return {
    db,
    dialect: 'postgres',
    location,
    schema,
    notifications,
    close: async () => {
      await notifications.close();
      await db.destroy();
    },
  };
}

/** A Postgres URL without its password, for logs and messages. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparseable url)';
  }
}

/** The dialect-neutral "now" is passed in from the clock; this is only for raw SQL helpers. */
export { sql };
