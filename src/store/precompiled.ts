/**
 * A query built and compiled once, run many times with new values. Kysely builds an operation
 * tree and compiles it to SQL on every call, which costs more than running a small indexed
 * statement on SQLite; the hot statements of a quiet tick (its lease, its keys) are compiled
 * once per database and only their values change.
 *
 * `build` is called once with one placeholder object per argument; each becomes a parameter of
 * the compiled query, so every argument must be a value Kysely binds (no identifiers, no lists).
 * A parameter the builder adds itself stays as compiled.
 */
import { CompiledQuery, type Compilable, type Kysely, type QueryResult } from 'kysely';

export type Precompiled<A extends readonly unknown[], R> = (...args: A) => Promise<QueryResult<R>>;

export function precompile<A extends readonly unknown[], R>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table set: the caller's builder is typed
  db: Kysely<any>,
  arity: A['length'],
  build: (...args: A) => Compilable<R>,
): Precompiled<A, R> {
  const slots = Array.from({ length: arity }, (_, i) => ({ precompiledSlot: i }));
  const compiled = build(...(slots as unknown as A)).compile();
  const mapping = compiled.parameters.map((p) => {
    const slot = slots.indexOf(p as (typeof slots)[number]);
    return slot >= 0 ? { slot } : { value: p };
  });
  const used = new Set(mapping.flatMap((m) => ('slot' in m ? [m.slot] : [])));
  if (used.size !== arity) throw new Error(`precompile: ${arity - used.size} argument(s) did not become parameters of: ${compiled.sql}`);
  return (...args: A) =>
    db.executeQuery<R>(
      CompiledQuery.raw(
        compiled.sql,
        mapping.map((m) => ('slot' in m ? args[m.slot] : m.value)),
      ),
    );
}

/** `compile` run once per database (a WeakMap on the Kysely instance): a store's hot queries, compiled at first use. */
export function perDatabase<D extends object, Q>(compile: (db: D) => Q): (db: D) => Q {
  const compiled = new WeakMap<D, Q>();
  return (db) => {
    let q = compiled.get(db);
    if (q === undefined) compiled.set(db, (q = compile(db)));
    return q;
  };
}
