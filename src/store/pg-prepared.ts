/**
 * Named prepared statements for marked hot statements on Postgres. Kysely's driver sends every
 * query unnamed, so Postgres parses and plans it each time; for the coordinator's claim (a
 * statement of several CTEs, sent at every fetch) planning cost about as much as running it. A
 * statement whose text starts with `PREPARED` (below) is sent as a named statement instead:
 * parsed once per connection, and its plan cached by Postgres (re-planned by Postgres itself when
 * a table it reads changes). Opt-in by marker, so one-off statements never fill a connection's
 * statement cache; the name is a hash of the text, so two texts never share one.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';

/** Lead a statement's text with this to have it prepared once per connection. */
export const PREPARED = '/* prepared */';

type Query = (...args: unknown[]) => unknown;

/** Wrap a pool client's `query` so marked texts go as named statements (call once per client, on 'connect'). */
export function prepareMarked(client: pg.PoolClient): void {
  // The class's `query`, looked up at each call: a wrapper installed on it later (a bench's or a
  // test's statement counter) still sees every statement.
  const proto = Object.getPrototypeOf(client) as { query: Query };
  (client as unknown as { query: Query }).query = (...args: unknown[]) => {
    const [text, values] = args;
    if (typeof text !== 'string' || !text.startsWith(PREPARED)) return proto.query.apply(client, args);
    const name = `p_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    return proto.query.apply(client, [{ name, text, values }, ...args.slice(2)]);
  };
}
