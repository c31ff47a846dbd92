/**
 * The Postgres coordinator's claim and batch complete are one statement each, over pg-boss's job
 * and our `coord_holds` together (pgboss-batch.ts).
 *
 * Found by the chaos run (issue 17): with pg-boss's claim and ours as separate statements, a
 * worker killed between them left a job pg-boss ran and nobody held; its group (a bot) never
 * started another job. Here our half of a claim fails inside the statement (a trigger refuses
 * it, as a death at that point would end it): pg-boss's half must be undone with it, and the job
 * must stay claimable in its group's order. Then: two workers claiming at once get disjoint
 * batches, pg-boss's rows follow ours, and a batch costs the statements the bench reports.
 */
import pg from 'pg';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createCoordinator, type Coordinator } from '../../src/coordination/index.js';
import { FakeClock, uuid } from '../../src/core/index.js';
import { openTestStore, testDialects, type AnyStore, type TestStore } from '../support/stores.js';

const postgres = (await testDialects()).includes('postgres');

describe.skipIf(!postgres)('pg-boss claim and ours, in one statement', () => {
  let store: TestStore | undefined;
  let other: AnyStore | undefined;
  const made: Coordinator[] = [];
  afterEach(async () => {
    for (const c of made.splice(0)) await c.stop().catch(() => undefined);
    await other?.close().catch(() => undefined);
    await store?.dispose();
    store = other = undefined;
  });

  const twoWorkers = async () => {
    store = await openTestStore('postgres');
    other = await store.reopen();
    const clock = new FakeClock(Date.now());
    const a = await createCoordinator({ store: other, clock, ids: uuid, leaseMs: 30_000, workerId: 'worker-a' });
    const b = await createCoordinator({ store, clock, ids: uuid, leaseMs: 30_000, workerId: 'worker-b' });
    made.push(a, b);
    return { a, b, db: store.db, boss: `${store.schema}_pgboss` };
  };
  const bossStates = async (db: TestStore['db'], boss: string, ids: string[]) => {
    const rows = await sql<{ id: string; state: string }>`SELECT id::text, state::text FROM ${sql.id(boss, 'job')} WHERE id = ANY(${ids}::uuid[])`.execute(db);
    return Object.fromEntries(rows.rows.map((r) => [r.id, r.state]));
  };

  it('a claim whose hold fails undoes pg-boss’s claim too; the job stays claimable in its group', async () => {
    const { a, b, db, boss } = await twoWorkers();
    const first = await a.send({ queue: 'bots.run', payload: { n: 1 }, group: 'bot-1' });
    const second = await a.send({ queue: 'bots.run', payload: { n: 2 }, group: 'bot-1' });
    await sql`CREATE FUNCTION refuse_hold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.state = 'active' THEN RAISE EXCEPTION 'hold refused'; END IF; RETURN NEW; END $$`.execute(db);
    await sql`CREATE TRIGGER refuse_hold BEFORE UPDATE ON coord_holds FOR EACH ROW EXECUTE FUNCTION refuse_hold()`.execute(db);
    try {
      await expect(a.fetch('bots.run')).rejects.toThrow(/hold refused/);
    } finally {
      await sql`DROP TRIGGER refuse_hold ON coord_holds`.execute(db);
      await sql`DROP FUNCTION refuse_hold()`.execute(db);
    }
    // pg-boss did not keep its half: the job was never started there.
    expect(await bossStates(db, boss, [first])).toEqual({ [first]: 'created' });
    const got = await b.fetch('bots.run');
    expect(got.map((j) => j.id)).toEqual([first]);
    expect(await b.complete(first)).toBe(true);
    expect((await b.fetch('bots.run')).map((j) => j.id)).toEqual([second]);
  });

  it('two workers claiming at once get disjoint batches that cover every job', async () => {
    const { a, b } = await twoWorkers();
    const sent = new Set<string>();
    for (let i = 0; i < 60; i++) sent.add(await a.send({ queue: 'test.q', payload: i }));
    const [x, y] = await Promise.all([a.fetch('test.q', { batchSize: 40 }), b.fetch('test.q', { batchSize: 40 })]);
    const xs = x.map((j) => j.id);
    const ys = y.map((j) => j.id);
    expect(xs.filter((id) => ys.includes(id))).toEqual([]);
    expect(new Set([...xs, ...ys, ...(await a.fetch('test.q', { batchSize: 60 })).map((j) => j.id)])).toEqual(sent);
  });

  it('pg-boss’s rows follow ours: started at the claim, completed with the batch, a lost one left alone', async () => {
    const { a, b, db, boss } = await twoWorkers();
    for (let i = 0; i < 3; i++) await a.send({ queue: 'test.q', payload: i });
    const ids = (await a.fetch('test.q', { batchSize: 3 })).map((j) => j.id);
    expect(Object.values(await bossStates(db, boss, ids))).toEqual(['active', 'active', 'active']);
    // The third is cancelled by a person while held: a batch complete leaves it out in both tables.
    expect(await b.cancel({ id: ids[2]! })).toBe(1);
    expect((await a.completeMany(ids)).sort()).toEqual(ids.slice(0, 2).sort());
    expect(await bossStates(db, boss, ids)).toEqual({ [ids[0]!]: 'completed', [ids[1]!]: 'completed', [ids[2]!]: 'cancelled' });
  });

  it('a batch of 50 is claimed in one statement and completed in one', async () => {
    const { a } = await twoWorkers();
    for (let i = 0; i < 50; i++) await a.send({ queue: 'test.q', payload: i });
    await a.fetch('test.q', { batchSize: 1 }).then((j) => a.completeMany(j.map((x) => x.id))); // warm: queue known, pg-boss started
    const claim = await statements(() => a.fetch('test.q', { batchSize: 50 }));
    expect(claim.value).toHaveLength(49);
    expect(claim.count).toBe(1);
    const done = await statements(() => a.completeMany(claim.value.map((j) => j.id)));
    expect(done.value).toHaveLength(49);
    expect(done.count).toBe(1);
  });
});

/** Statements sent on pg's clients while `fn` runs (this test runs alone in its file's worker). */
async function statements<T>(fn: () => Promise<T>): Promise<{ value: T; count: number }> {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  let count = 0;
  proto.query = function (this: unknown, ...args: unknown[]) {
    count++;
    return original.apply(this, args);
  };
  try {
    return { value: await fn(), count };
  } finally {
    proto.query = original;
  }
}
