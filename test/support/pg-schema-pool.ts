/**
 * Recycled Postgres test schemas (issue 22). Migrating a fresh schema is some 150 tables,
 * indexes and sequences created one by one (a second and more on a loaded machine), and dropping
 * it after takes half as long again: hundreds of tests paid both. A schema a test has finished
 * with is instead renamed out of its name, checked, emptied, and handed to the next test of the
 * run under that test's own new name:
 *
 * - the rename comes first, so a connection left behind by the old test (a pool not closed, a
 *   timer still writing) finds no table from then on, as after a drop;
 * - the check compares the schema's structure (tables, columns and their defaults, constraints,
 *   indexes, triggers, functions, types, sequences) and its `schema_migrations` rows with those
 *   of a freshly migrated one: a test that altered anything, ran a migration down or applied one
 *   of its own leaves a schema that is dropped, not reused;
 * - emptying truncates the tables the test wrote to (fresh pages, as after a migration), puts
 *   back the rows the migrations themselves insert, and resets the sequences, so the next test
 *   starts from exactly what a migration leaves, and `schema_migrations` says so (a second `openStore` finds
 *   nothing to migrate, as before).
 *
 * Pooled schemas are named `p_<run>_…` (`c_<run>_…` while being emptied). The run is set by the
 * global setup (pg-schema-pool-setup.ts), which drops the run's schemas at its end; without it
 * (a script) each process is its own run and should call `drainSchemaPool()`.
 * SUBCONSCIOUS_TEST_PG_POOL=off turns recycling off (every test migrates a fresh schema).
 */
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { MigrationSet } from '../../src/store/index.js';

export const POOL_RUN_ENV = 'SUBCONSCIOUS_TEST_PG_RUN';
/** This run's pooled schemas are `p_<POOL_RUN>_…`. */
export const POOL_RUN = process.env[POOL_RUN_ENV] ?? `${Date.now().toString(36)}x${process.pid.toString(36)}`;
const enabled = process.env.SUBCONSCIOUS_TEST_PG_POOL !== 'off';

/** What a freshly migrated schema is, learnt once per process from the first one it opens. */
interface Pristine {
  shape: string;
  migrations: string;
  /** Every table but `schema_migrations`. */
  tables: string[];
  /** The rows the migrations insert, table by table (json_agg). */
  seeds: Array<{ table: string; rows: string }>;
  sequences: Array<{ name: string; lastValue: string; isCalled: boolean }>;
}

let pristine: Promise<Pristine | null> | undefined;
let admin: pg.Pool | undefined;

function adminPool(url: string): pg.Pool {
  if (!admin) {
    admin = new pg.Pool({ connectionString: url, max: 2, idleTimeoutMillis: 30_000, allowExitOnIdle: true, options: '-c lock_timeout=10000' });
    admin.on('error', () => undefined);
  }
  return admin;
}

function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unexpected identifier ${name}`);
  return `"${name}"`;
}

function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10).padEnd(8, '0');
}

/** The schema's structure as one digest, independent of the schema's name. */
const SHAPE_SQL = `
WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname = $1),
lines AS (
  SELECT 'rel ' || c.relname || ' ' || c.relkind::text AS line
    FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
  UNION ALL
  SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull
      || ' ' || a.attidentity::text || a.attgenerated::text || ' ' || coalesce(replace(pg_get_expr(d.adbin, d.adrelid), ns.nspname || '.', ''), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON ns.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'con ' || c.relname || ' ' || co.conname || ' ' || replace(pg_get_constraintdef(co.oid), ns.nspname || '.', '')
    FROM pg_constraint co JOIN ns ON ns.oid = co.connamespace LEFT JOIN pg_class c ON c.oid = co.conrelid
  UNION ALL
  SELECT 'idx ' || replace(pg_get_indexdef(i.indexrelid), ns.nspname || '.', '')
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN ns ON ns.oid = c.relnamespace
  UNION ALL
  SELECT 'trg ' || replace(pg_get_triggerdef(t.oid), ns.nspname || '.', '')
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN ns ON ns.oid = c.relnamespace WHERE NOT t.tgisinternal
  UNION ALL
  SELECT 'fn ' || p.proname || ' ' || p.prokind::text || ' ' || md5(p.prosrc)
    FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
  UNION ALL
  SELECT 'type ' || t.typname || ' ' || t.typtype::text
    FROM pg_type t JOIN ns ON ns.oid = t.typnamespace WHERE t.typrelid = 0 AND t.typcategory <> 'A'
  UNION ALL
  SELECT 'view ' || c.relname || ' ' || md5(pg_get_viewdef(c.oid))
    FROM pg_class c JOIN ns ON ns.oid = c.relnamespace WHERE c.relkind IN ('v', 'm')
)
SELECT count(*)::int AS n, md5(coalesce(string_agg(line, E'\\n' ORDER BY line), '')) AS shape FROM lines`;

async function shapeOf(client: pg.ClientBase, schema: string): Promise<{ shape: string; migrations: string }> {
  const { rows } = await client.query<{ n: number; shape: string }>(SHAPE_SQL, [schema]);
  const migrations = await client.query<{ m: string | null }>(`SELECT string_agg(name, ',' ORDER BY name) AS m FROM ${ident(schema)}.schema_migrations`);
  return { shape: `${rows[0]!.n}:${rows[0]!.shape}`, migrations: migrations.rows[0]?.m ?? '' };
}

async function learn(client: pg.ClientBase, schema: string): Promise<Pristine | null> {
  const s = ident(schema);
  const { shape, migrations } = await shapeOf(client, schema);
  const tables = (
    await client.query<{ t: string }>(
      `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_migrations' ORDER BY 1`,
      [schema],
    )
  ).rows.map((r) => r.t);
  const seeds: Pristine['seeds'] = [];
  if (tables.length > 0) {
    const { rows } = await client.query<{ t: string; rows: string | null }>(
      tables.map((t) => `SELECT '${t}' AS t, (SELECT json_agg(x)::text FROM ${s}.${ident(t)} x) AS rows`).join(' UNION ALL '),
    );
    for (const r of rows) if (r.rows !== null) seeds.push({ table: r.t, rows: r.rows });
  }
  const sequences: Pristine['sequences'] = [];
  const seqNames = (
    await client.query<{ s: string }>(
      `SELECT c.relname AS s FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'S' ORDER BY 1`,
      [schema],
    )
  ).rows.map((r) => r.s);
  for (const name of seqNames) {
    const { rows } = await client.query<{ last_value: string; is_called: boolean }>(`SELECT last_value::text, is_called FROM ${s}.${ident(name)}`);
    sequences.push({ name, lastValue: rows[0]!.last_value, isCalled: rows[0]!.is_called });
  }
  return { shape, migrations, tables, seeds, sequences };
}

/**
 * Give a pooled schema of this run the name `schema`; false when none is free (the caller then
 * migrates a fresh one).
 */
export async function claimPooledSchema(url: string, schema: string): Promise<boolean> {
  if (!enabled) return false;
  const client = await adminPool(url).connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 ORDER BY random() LIMIT 4`, [
      `p\\_${POOL_RUN}\\_%`,
    ]);
    for (const { nspname } of rows) {
      try {
        await client.query(`ALTER SCHEMA ${ident(nspname)} RENAME TO ${ident(schema)}`);
        return true;
      } catch {
        // another process took it first
      }
    }
    return false;
  } finally {
    client.release();
  }
}

/** Learn what a fresh schema is from `schema`, just opened (migrated or claimed) and not yet used. */
export async function notePristine(url: string, schema: string): Promise<void> {
  if (!enabled) return;
  pristine ??= (async () => {
    const client = await adminPool(url).connect();
    try {
      return await learn(client, schema);
    } catch (err) {
      if (process.env.SUBCONSCIOUS_TEST_PG_POOL_DEBUG) console.warn(`[pg-schema-pool] no recycling: ${(err as Error).message}`);
      return null;
    } finally {
      client.release();
    }
  })();
  await pristine;
}

/**
 * Undo, through the test's own store before it closes, the migrations a layer applied on top of
 * a test store (the coordinator's, which `createCoordinator` applies): their `down`s, newest
 * first, in one transaction, and their `schema_migrations` rows. The schema is then checked like
 * any other (a `down` that leaves anything behind gets it dropped). Nothing is undone when a
 * migration beyond the known ones has no `down` here.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- reads and shapes any table
export async function undoLayerMigrations(db: Kysely<any>, layers: readonly MigrationSet[]): Promise<void> {
  const known = enabled ? await pristine : null;
  if (!known) return;
  const base = new Set(known.migrations.split(','));
  const applied = (await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(db)).rows.map((r) => r.name).filter((n) => !base.has(n));
  if (applied.length === 0) return;
  const downs = new Map(layers.flatMap((set) => Object.entries(set)));
  if (!applied.every((n) => downs.get(n)?.down)) return;
  await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL lock_timeout = '10s'`.execute(trx); // a process still using the schema: dropped instead
    for (const name of applied.sort().reverse()) {
      await downs.get(name)!.down!(trx, { dialect: 'postgres' });
      await sql`DELETE FROM schema_migrations WHERE name = ${name}`.execute(trx);
    }
  });
}

/**
 * Return `schema` (its store closed) to the pool: renamed away at once, then checked and emptied;
 * dropped instead when it is not as a migration left it. Never throws for a schema it could not
 * recycle: it drops it. `alsoDrop`: schemas named after it (the coordinator's pg-boss schema),
 * dropped first.
 */
export async function recycleSchema(url: string, schema: string, alsoDrop: readonly string[] = []): Promise<'recycled' | 'dropped'> {
  const known = enabled ? await pristine : null;
  const client = await adminPool(url).connect();
  let name = schema;
  try {
    for (const other of alsoDrop) await client.query(`DROP SCHEMA IF EXISTS ${ident(other)} CASCADE`);
    if (!known) {
      await client.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
      return 'dropped';
    }
    const suffix = randomSuffix();
    const cleaning = `c_${POOL_RUN}_${suffix}`;
    await client.query(`ALTER SCHEMA ${ident(schema)} RENAME TO ${ident(cleaning)}`);
    name = cleaning;
    const now = await shapeOf(client, cleaning);
    if (now.shape !== known.shape || now.migrations !== known.migrations) {
      if (process.env.SUBCONSCIOUS_TEST_PG_POOL_DEBUG) {
        const extra = now.migrations.split(',').filter((m) => !known.migrations.split(',').includes(m));
        console.warn(`[pg-schema-pool] ${schema} changed (${now.shape === known.shape ? 'same' : 'other'} shape, migrations +${extra.join('+')}): dropped`);
      }
      await client.query(`DROP SCHEMA ${ident(cleaning)} CASCADE`);
      return 'dropped';
    }
    const s = ident(cleaning);
    // The tables the test wrote to (a seeded one: whose rows are not the seed's any more) are
    // truncated, not emptied row by row: a table then starts on fresh pages as after a migration,
    // so rows come back in the order they were written (a test may lean on it, a tie in an ORDER BY).
    const seedOf = new Map(known.seeds.map((x) => [x.table, x.rows]));
    const written = (
      await client.query<{ t: string }>(
        known.tables
          .map((t) =>
            seedOf.has(t)
              ? `SELECT '${t}' AS t WHERE (SELECT json_agg(x)::text FROM ${s}.${ident(t)} x) IS DISTINCT FROM ${client.escapeLiteral(seedOf.get(t)!)}`
              : `SELECT '${t}' AS t WHERE EXISTS (SELECT 1 FROM ${s}.${ident(t)})`,
          )
          .join(' UNION ALL '),
      )
    ).rows.map((r) => r.t);
    const statements = [
      'BEGIN',
      ...(written.length > 0 ? [`TRUNCATE ${written.map((t) => `${s}.${ident(t)}`).join(', ')} CASCADE`] : []),
      ...known.seeds.map(
        ({ table, rows }) =>
          `INSERT INTO ${s}.${ident(table)} SELECT * FROM json_populate_recordset(NULL::${s}.${ident(table)}, ${client.escapeLiteral(rows)}::json) WHERE NOT EXISTS (SELECT 1 FROM ${s}.${ident(table)})`,
      ),
      ...known.sequences.map(({ name: q, lastValue, isCalled }) => `SELECT setval('${cleaning}.${q}', ${Number(lastValue)}, ${isCalled})`),
      'COMMIT',
    ];
    await client.query(statements.join(';\n'));
    await client.query(`ALTER SCHEMA ${s} RENAME TO ${ident(`p_${POOL_RUN}_${suffix}`)}`);
    return 'recycled';
  } catch (err) {
    if (process.env.SUBCONSCIOUS_TEST_PG_POOL_DEBUG) console.warn(`[pg-schema-pool] ${schema} not recycled: ${(err as Error).message}`);
    await client.query('ROLLBACK').catch(() => undefined);
    await client.query(`DROP SCHEMA IF EXISTS ${ident(name)} CASCADE`).catch(() => undefined);
    return 'dropped';
  } finally {
    client.release();
  }
}

/** Drop the pooled schemas of `run` (this process's by default), and close the admin connection. */
export async function drainSchemaPool(url: string, run: string = POOL_RUN): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await dropPooled(client, run);
  } finally {
    await client.end();
    await admin?.end().catch(() => undefined);
    admin = undefined;
  }
}

export async function dropPooled(client: pg.ClientBase, run: string): Promise<number> {
  const { rows } = await client.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 OR nspname LIKE $2`, [
    `p\\_${run}\\_%`,
    `c\\_${run}\\_%`,
  ]);
  for (const { nspname } of rows) await client.query(`DROP SCHEMA IF EXISTS ${ident(nspname)} CASCADE`).catch(() => undefined);
  return rows.length;
}
