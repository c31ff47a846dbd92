/**
 * Instance state: a key/value store namespaced `<world>:<key>` (seed 4), so every world keeps
 * its own cursors, baselines and counters. Values are JSON.
 */
import { SqliteAdapter, type Kysely } from 'kysely';
import { precompile } from '../store/index.js';
import type { EngineTables } from './tables.js';

type StateQueries = ReturnType<typeof compileStateQueries>;
const compiledFor = new WeakMap<Kysely<EngineTables>, StateQueries>();

/** Every tick reads its keys, and the scheduler writes one after it: compiled once per database. */
function stateQueries(db: Kysely<EngineTables>): StateQueries {
  let q = compiledFor.get(db);
  if (!q) compiledFor.set(db, (q = compileStateQueries(db)));
  return q;
}

function compileStateQueries(db: Kysely<EngineTables>) {
  const like = precompile(db, 1, (pattern: string) => db.selectFrom('instance_state').select(['key', 'value']).where('key', 'like', pattern));
  // SQLite's LIKE cannot use the primary key (it is case-insensitive): a world's keys are the
  // range [`w:`, `w;`) there (binary order; `;` follows `:`). Postgres keeps LIKE (its text order
  // follows the database's collation, where that range is not the prefix).
  const range = precompile(db, 2, (from: string, to: string) =>
    db.selectFrom('instance_state').select(['key', 'value']).where('key', '>=', from).where('key', '<', to),
  );
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const putMany = new Map<number, ReturnType<typeof compilePutMany>>();
  return {
    get: precompile(db, 1, (key: string) => db.selectFrom('instance_state').select('value').where('key', '=', key)),
    /** One key written (`next_tick_at` after every tick). */
    put: precompile(db, 3, (key: string, value: string, at: number) =>
      db
        .insertInto('instance_state')
        .values({ key, value, updated_at: at })
        .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), updated_at: eb.ref('excluded.updated_at') }))),
    ),
    /** Every key under `prefix` (which ends in `:`). */
    all: sqlite ? (prefix: string) => range(prefix, `${prefix.slice(0, -1)};`) : (prefix: string) => like(`${prefix}%`),
    /** `n` keys in one multi-row upsert, compiled once per row count (the quiet counters' flush writes the same few keys every time). */
    putMany: (n: number) => {
      let q = putMany.get(n);
      if (!q) putMany.set(n, (q = compilePutMany(db, n)));
      return q;
    },
  };
}

/** Arguments: the time, then each row's key and value. */
function compilePutMany(db: Kysely<EngineTables>, n: number) {
  return precompile<unknown[], unknown>(db, 1 + 2 * n, (at: unknown, ...kv: unknown[]) =>
    db
      .insertInto('instance_state')
      .values(Array.from({ length: n }, (_, i) => ({ key: kv[2 * i] as string, value: kv[2 * i + 1] as string, updated_at: at as number })))
      .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), updated_at: eb.ref('excluded.updated_at') }))),
  );
}

export function stateKey(world: string, key: string): string {
  if (!world || world.includes(':')) throw new Error(`invalid world name for state key: "${world}"`);
  return `${world}:${key}`;
}

export class InstanceState {
  constructor(
    private readonly db: Kysely<EngineTables>,
    private readonly now: () => number,
  ) {}

  async get<T>(world: string, key: string): Promise<T | undefined> {
    const row = (await stateQueries(this.db).get(stateKey(world, key))).rows[0];
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  /** Every key of one world, without the namespace prefix. */
  async all(world: string): Promise<Record<string, unknown>> {
    const prefix = stateKey(world, '');
    const { rows } = await stateQueries(this.db).all(prefix);
    const out: Record<string, unknown> = {};
    for (const row of rows) {
      if (row.key.startsWith(prefix)) out[row.key.slice(prefix.length)] = JSON.parse(row.value);
    }
    return out;
  }

  async set(world: string, key: string, value: unknown): Promise<void> {
    await stateQueries(this.db).put(stateKey(world, key), JSON.stringify(value ?? null), this.now());
  }

  /** Several keys in one statement (one multi-row upsert): they move together or not at all. */
  async setMany(world: string, values: Record<string, unknown>, db: Kysely<EngineTables> = this.db): Promise<void> {
    const args: unknown[] = [this.now()];
    for (const key in values) args.push(stateKey(world, key), JSON.stringify(values[key] ?? null));
    if (args.length === 1) return;
    await stateQueries(db).putMany((args.length - 1) / 2)(...args);
  }

  async delete(world: string, key: string): Promise<void> {
    await this.db.deleteFrom('instance_state').where('key', '=', stateKey(world, key)).execute();
  }

  /**
   * Move bare keys from before namespacing (the world's module names them) under `<world>:`. An
   * existing namespaced value always wins: the legacy row is then left as it was (never clobbers,
   * never loses). Idempotent. Returns the keys that were moved.
   */
  async migrateLegacyKeys(world: string, keys: readonly string[]): Promise<string[]> {
    const moved: string[] = [];
    if (keys.length === 0) return moved;
    await this.db.transaction().execute(async (trx) => {
      for (const legacy of keys) {
        const old = await trx.selectFrom('instance_state').selectAll().where('key', '=', legacy).executeTakeFirst();
        if (!old) continue;
        const target = stateKey(world, legacy);
        const existing = await trx.selectFrom('instance_state').select('key').where('key', '=', target).executeTakeFirst();
        if (existing) continue;
        await trx.insertInto('instance_state').values({ key: target, value: old.value, updated_at: old.updated_at }).execute();
        await trx.deleteFrom('instance_state').where('key', '=', legacy).execute();
        moved.push(legacy);
      }
    });
    return moved;
  }
}

/** One world's keys (`<world>:<key>`), typed by the keys it keeps. */
export class WorldKeys<K extends object> {
  constructor(
    private readonly state: InstanceState,
    readonly world: string,
  ) {}

  get<N extends keyof K & string>(key: N): Promise<K[N] | undefined> {
    return this.state.get<K[N]>(this.world, key);
  }

  async all(): Promise<Partial<K>> {
    return (await this.state.all(this.world)) as Partial<K>;
  }

  set<N extends keyof K & string>(key: N, value: K[N]): Promise<void> {
    return this.state.set(this.world, key, value);
  }

  setMany(values: Partial<K>): Promise<void> {
    return this.state.setMany(this.world, values as Record<string, unknown>);
  }
}
