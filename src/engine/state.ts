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
    /** Every key under `prefix` (which ends in `:`). */
    all: sqlite ? (prefix: string) => range(prefix, `${prefix.slice(0, -1)};`) : (prefix: string) => like(`${prefix}%`),
    /**
     * `n` keys in one upsert, compiled once per row count: one key (`next_tick_at` after every
     * tick), and the quiet counters' flush, which writes the same few keys every time.
     */
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

const copyOf = (value: unknown) => (typeof value === 'object' && value !== null ? structuredClone(value) : value);

export function stateKey(world: string, key: string): string {
  if (!world || world.includes(':')) throw new Error(`invalid world name for state key: "${world}"`);
  return `${world}:${key}`;
}

/**
 * How long keys kept in memory are trusted at most: the bound on what a worker that came and went
 * between two of the coordinator's counts could have written unseen.
 */
export const KEYS_CACHE_MAX_AGE_MS = 30 * 60_000;

interface CachedKeys {
  values: Record<string, unknown>;
  at: number;
}

export class InstanceState {
  /** Each world's keys as last read or written, while this process is the store's only writer. */
  private readonly cache = new Map<string, CachedKeys>();
  /** Writes started: a read that a write overtook is not kept (its values may be older). */
  private writes = 0;

  constructor(
    private readonly db: Kysely<EngineTables>,
    private readonly now: () => number,
    /**
     * True while no other process writes these keys (no other worker or face is alive on the
     * store): every write to them then goes through here, so a world's keys are read once and kept
     * (at most `KEYS_CACHE_MAX_AGE_MS`). Absent or false: every read goes to the store.
     */
    private readonly soleWriter: () => boolean = () => false,
  ) {}

  async get<T>(world: string, key: string): Promise<T | undefined> {
    const kept = this.kept(world);
    // A world's own value is its to change: a copy, as a read from the store would give.
    if (kept) return copyOf(kept[key]) as T | undefined;
    const row = (await stateQueries(this.db).get(stateKey(world, key))).rows[0];
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  /**
   * Every key of one world, without the namespace prefix (`fresh`: from the store even when kept).
   * Kept keys come as a new object whose values are shared with what is kept: read them, do not
   * change them (the engine's keys; a world reads its own through `get`).
   */
  async all(world: string, fresh = false): Promise<Record<string, unknown>> {
    const kept = fresh ? null : this.kept(world);
    if (kept) return { ...kept };
    const prefix = stateKey(world, '');
    const sole = this.soleWriter();
    const at = this.now();
    const writes = this.writes;
    const { rows } = await stateQueries(this.db).all(prefix);
    const out: Record<string, unknown> = {};
    for (const row of rows) {
      if (row.key.startsWith(prefix)) out[row.key.slice(prefix.length)] = JSON.parse(row.value);
    }
    if (sole && writes === this.writes) this.cache.set(world, { values: { ...out }, at });
    else this.cache.delete(world);
    return out;
  }

  set(world: string, key: string, value: unknown): Promise<void> {
    return this.setMany(world, { [key]: value });
  }

  /** Several keys in one statement (one multi-row upsert): they move together or not at all. */
  async setMany(world: string, values: Record<string, unknown>, db: Kysely<EngineTables> = this.db): Promise<void> {
    const args: unknown[] = [this.now()];
    const pairs: Array<[string, string]> = [];
    for (const key in values) {
      const json = JSON.stringify(values[key] ?? null);
      args.push(stateKey(world, key), json);
      pairs.push([key, json]);
    }
    if (pairs.length === 0) return;
    // Through another handle (a transaction that may roll back): what is kept is read again.
    await this.written(world, stateQueries(db).putMany(pairs.length)(...args), db === this.db ? pairs : null);
  }

  async delete(world: string, key: string): Promise<void> {
    await this.written(world, this.db.deleteFrom('instance_state').where('key', '=', stateKey(world, key)).execute(), [[key, undefined]]);
  }

  /** The keys kept for `world`, when they can be trusted now. */
  private kept(world: string): Record<string, unknown> | null {
    const c = this.cache.get(world);
    if (!c) return null;
    const age = this.now() - c.at;
    if (age >= 0 && age < KEYS_CACHE_MAX_AGE_MS && this.soleWriter()) return c.values;
    this.cache.delete(world);
    return null;
  }

  /** A write's outcome applied to the kept keys (JSON-parsed, as a read gives them); a failed or unknown one forgets them. */
  private async written(world: string, write: Promise<unknown>, pairs: Array<[string, string | undefined]> | null): Promise<void> {
    this.writes++;
    try {
      await write;
    } catch (err) {
      this.cache.delete(world);
      throw err;
    }
    const c = this.cache.get(world);
    if (!c) return;
    if (!pairs) return void this.cache.delete(world);
    for (const [key, json] of pairs) {
      if (json === undefined) delete c.values[key];
      else c.values[key] = JSON.parse(json);
    }
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

  async all(fresh = false): Promise<Partial<K>> {
    return (await this.state.all(this.world, fresh)) as Partial<K>;
  }

  set<N extends keyof K & string>(key: N, value: K[N]): Promise<void> {
    return this.state.set(this.world, key, value);
  }

  setMany(values: Partial<K>): Promise<void> {
    return this.state.setMany(this.world, values as Record<string, unknown>);
  }
}
