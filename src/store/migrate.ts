/**
 * Applies the numbered migrations in name order, each in its own transaction, under a lock so
 * two processes starting at once never migrate twice. Our own runner rather than Kysely's
 * Migrator: that one introspects every schema of the database, which fails when another schema
 * is dropped at the same moment (parallel test runs, tenants).
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from './open.js';
import { baseMigrations } from './migrations/index.js';

const LOCK_KEY = 7_224_001; // pg advisory lock id for migrations

/** One migration. `ctx.dialect` lets a migration say what only one dialect has (FTS5, tsvector). */
export interface Migration {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
  up(db: Kysely<any>, ctx: MigrationContext): Promise<void>;
  /** Undo (tests only: migrations never run down in production). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
  down?(db: Kysely<any>, ctx: MigrationContext): Promise<void>;
}

export interface MigrationContext {
  dialect: DialectName;
}

/** Migrations by name: each set is applied in name order. */
export type MigrationSet = Readonly<Record<string, Migration>>;

export async function applyMigrations(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's Migration takes Kysely<any>
  db: Kysely<any>,
  dialect: DialectName,
  sets: MigrationSet | readonly MigrationSet[],
  now: () => number = Date.now,
): Promise<string[]> {
  const ordered = orderedMigrations(Array.isArray(sets) ? sets : [sets as MigrationSet]);
  await sql`CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at bigint NOT NULL)`.execute(db);
  if (dialect === 'sqlite') {
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations_lock (id integer PRIMARY KEY, locked_at bigint NOT NULL)`.execute(db);
    await sql`INSERT OR IGNORE INTO schema_migrations_lock (id, locked_at) VALUES (1, 0)`.execute(db);
  }
  // One read first: a migration recorded as applied stays applied, so only the missing ones need
  // the lock (a process opening a current schema, a restart or a second connection, takes no lock
  // and makes one round trip instead of four per migration).
  const recorded = new Set((await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(db)).rows.map((r) => r.name));
  const applied: string[] = [];
  for (const [name, migration] of ordered) {
    if (recorded.has(name)) continue;
    const done = await db.transaction().execute(async (trx) => {
      // Take the lock first: a write (SQLite) or an advisory lock (Postgres), then re-check.
      if (dialect === 'postgres') await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
      else await sql`UPDATE schema_migrations_lock SET locked_at = ${now()} WHERE id = 1`.execute(trx);
      const row = await sql<{ name: string }>`SELECT name FROM schema_migrations WHERE name = ${name}`.execute(trx);
      if (row.rows.length > 0) return false;
      await migration.up(trx, { dialect });
      await sql`INSERT INTO schema_migrations (name, applied_at) VALUES (${name}, ${now()})`.execute(trx);
      return true;
    });
    if (done) applied.push(name);
  }
  return applied;
}

/** The sets in order, each by name; a name used twice (two modules, one name) is refused. */
function orderedMigrations(sets: readonly MigrationSet[]): Array<[string, Migration]> {
  const seen = new Set<string>();
  const out: Array<[string, Migration]> = [];
  for (const set of sets) {
    for (const name of Object.keys(set).sort()) {
      if (seen.has(name)) throw new Error(`migration "${name}" is defined twice`);
      seen.add(name);
      out.push([name, set[name]!]);
    }
  }
  return out;
}

/**
 * The migrations of `sets` (the base ones are always included) not yet recorded as applied: empty
 * when the schema is current (`/readyz`). Throws when the database does not answer.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- reads only the runner's own table
export async function pendingMigrations(db: Kysely<any>, sets: readonly MigrationSet[]): Promise<string[]> {
  const rows = await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(db).catch((err: unknown) => {
    if (/schema_migrations/.test(String((err as Error).message))) return { rows: [] };
    throw err;
  });
  const applied = new Set(rows.rows.map((r) => r.name));
  return orderedMigrations([baseMigrations, ...sets])
    .map(([name]) => name)
    .filter((name) => !applied.has(name));
}
