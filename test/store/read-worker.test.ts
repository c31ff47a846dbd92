/**
 * The heavy-read connection (store/read-worker.ts): a SQLite file's `reads` answers on a worker
 * thread, sees what the main connection committed, writes nothing, and leaves the event loop
 * free while its statement runs (issue 22: `usage.summary`'s 170 ms statement held status up).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, valueAt, type Store } from '../../src/store/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a scratch table made by the test
type AnyDb = Kysely<any>;

/** A statement that keeps SQLite busy for a while (a few hundred ms; longer on a loaded machine). */
const BUSY = sql<{ n: number }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000) select count(*) as n from c`;

/** How many 1 ms timers fired while `work` ran: none can while a statement holds the main thread. */
async function timersDuring(work: Promise<unknown>): Promise<number> {
  let fired = 0;
  let done = false;
  void work.finally(() => (done = true));
  const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 1));
  await tick(); // the statement is on its way before counting starts
  while (!done) {
    await tick();
    fired++;
  }
  await work;
  return fired;
}

/** Each thread of this process and its nice value (Linux: field 19 of `/proc/self/task/<tid>/stat`). */
function niceByThread(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // After the command name (which may hold spaces and parentheses) come fields 3, 4, …
    out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return out;
}

describe('the heavy-read connection on a SQLite file', () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-reads-'));
    store = await openStore({ workspace: dir });
    await (store.db as AnyDb).schema.createTable('scratch').addColumn('n', 'integer').execute();
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('both connections keep a 32 MiB page cache and map the file (a daemon reads the same pages all day)', async () => {
    for (const db of [store.db, store.reads!] as AnyDb[]) {
      expect((await sql<{ cache_size: number }>`pragma cache_size`.execute(db)).rows).toEqual([{ cache_size: -32768 }]);
      expect((await sql<{ mmap_size: number }>`pragma mmap_size`.execute(db)).rows).toEqual([{ mmap_size: 268435456 }]);
    }
  });

  it('hands over one answer per turn of the event loop, also when many piled up while the main thread was busy', async () => {
    const reads = store.reads as AnyDb;
    const order: string[] = [];
    const answers = Array.from({ length: 10 }, () => sql`select 1 as one`.execute(reads).then(() => order.push('answer')));
    // The main thread busy while every answer arrives at its port.
    const until = Date.now() + 300;
    while (Date.now() < until);
    // Other work, a turn at a time, until every answer is in (however late the read thread is).
    let done = false;
    const turn = (): void => {
      order.push('turn');
      if (!done) setImmediate(turn);
    };
    setImmediate(turn);
    await Promise.all(answers);
    done = true;
    const first = order.indexOf('answer');
    const last = order.lastIndexOf('answer');
    // Other work ran between every two answers.
    expect(order.slice(first, last + 1).filter((e) => e === 'turn').length).toBeGreaterThanOrEqual(9);
  });

  it('reads what the main connection committed, with parameters', async () => {
    const db = store.db as AnyDb;
    await db
      .insertInto('scratch')
      .values([{ n: 1 }, { n: 2 }, { n: 3 }])
      .execute();
    const reads = store.reads as AnyDb;
    expect(await reads.selectFrom('scratch').select('n').where('n', '>=', 2).orderBy('n').execute()).toEqual([{ n: 2 }, { n: 3 }]);
    await db.insertInto('scratch').values({ n: 4 }).execute();
    expect(
      await reads
        .selectFrom('scratch')
        .select(sql<number>`count(*)`.as('c'))
        .executeTakeFirst(),
    ).toEqual({ c: 4 });
  });

  it('answers in columns: numbers in a Float64Array, anything else as codes into its distinct values; rows again after', async () => {
    const db = store.db as AnyDb;
    await db.schema.alterTable('scratch').addColumn('t', 'text').execute();
    await db
      .insertInto('scratch')
      .values([
        { n: 1, t: 'a' },
        { n: 2, t: null },
        { n: 3, t: 'a' },
      ])
      .execute();
    const query = db.selectFrom('scratch').select(['n', 't']).where('n', '>=', 1).orderBy('n').compile();
    const answer = await store.readColumns!(query);
    expect(answer.length).toBe(3);
    expect(answer.columns.n).toEqual(new Float64Array([1, 2, 3]));
    expect([0, 1, 2].map((i) => valueAt(answer.columns.t!, i))).toEqual(['a', null, 'a']);
    expect(answer.columns.t).toMatchObject({ values: ['a', null] });
    // The same statement (cached on the thread) as rows again: objects, not arrays.
    expect(await (store.reads as AnyDb).executeQuery(query).then((r) => r.rows)).toEqual([
      { n: 1, t: 'a' },
      { n: 2, t: null },
      { n: 3, t: 'a' },
    ]);
  });

  it('refuses writes', async () => {
    await expect((store.reads as AnyDb).insertInto('scratch').values({ n: 9 }).execute()).rejects.toThrow();
    expect(await (store.db as AnyDb).selectFrom('scratch').selectAll().execute()).toEqual([]);
  });

  it('leaves the event loop free while its statement runs (the main connection holds it)', async () => {
    const off = await timersDuring(BUSY.execute(store.reads!));
    const on = await timersDuring(BUSY.execute(store.db));
    console.log(`[read-worker] 1 ms timers fired during the busy statement: ${off} on the read thread, ${on} on the main connection`);
    expect(on).toBeLessThanOrEqual(1);
    expect(off).toBeGreaterThanOrEqual(10);
  });

  it.runIf(process.platform === 'linux')('runs at a lower CPU priority than the main thread (10 nice steps), which keeps its own', async () => {
    const before = niceByThread();
    await sql`select 1 as one`.execute(store.reads!);
    const after = niceByThread();
    const main = before.get(process.pid)!;
    const started = [...after].filter(([tid]) => !before.has(tid));
    expect(started.filter(([, nice]) => nice === Math.min(19, main + 10))).toHaveLength(1); // the read thread
    expect(after.get(process.pid)).toBe(before.get(process.pid));
  });

  it('is absent for :memory: (no second connection sees that database)', async () => {
    const memory = await openStore({ sqliteFile: ':memory:' });
    expect(memory.reads).toBeUndefined();
    expect(memory.readColumns).toBeUndefined();
    await memory.close();
  });
});
