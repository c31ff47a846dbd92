/**
 * Triage's reads of many threads at once (`triageTail`, `activities`) go to the store's read
 * thread when the host is given one (`BotsHostDeps.reads`, a SQLite file, as the daemon wires it):
 * the same answer as on the main connection, no statement on the main connection.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import { FakeClock, uuid } from '../../src/core/index.js';
import { ThreadStore } from '../../src/bots/thread-store.js';
import type { BotsTables } from '../../src/bots/index.js';
import { tablesView } from '../../src/store/index.js';
import { StatementCounter } from '../../devtools/statement-counter.js';
import { populate } from '../../devtools/heartbeat-triage-world.js';
import { openTestStore, type TestStore } from '../support/stores.js';

describe('triage reads on the read thread (SQLite file)', () => {
  let store: TestStore;
  const clock = new FakeClock();
  beforeEach(async () => {
    store = await openTestStore('sqlite');
  });
  afterEach(async () => {
    await store.dispose();
  });

  it('reads the threads’ tails and the person’s activity there, with the same answer as the main connection', async () => {
    expect(store.reads).toBeDefined();
    const candidates = await populate(store.db, 300, clock.now());
    const list = candidates.map((bot) => ({ threadId: bot.replace('bot-', 'thread-'), botId: bot }));
    const main = new StatementCounter();
    const reads = new StatementCounter();
    const db = tablesView<BotsTables>(store.db.withPlugin(main));
    const onMain = new ThreadStore({ db, clock, ids: uuid });
    const onThread = new ThreadStore({ db, clock, ids: uuid, reads: tablesView<BotsTables>((store.reads as Kysely<BotsTables>).withPlugin(reads)) });

    const expected = await onMain.triageTail(list, 20);
    const expectedActivity = await onMain.activities(list.map((t) => t.threadId));
    main.reset();
    const tail = await onThread.triageTail(list, 20);
    const activity = await onThread.activities(list.map((t) => t.threadId));
    expect([main.statements, reads.statements]).toEqual([0, 2]);
    expect(tail).toEqual(expected);
    expect(activity).toEqual(expectedActivity);
    // What the rules look at of each cut-off thread: its interrupted reply, one row.
    expect(tail.size).toBe(3);
    for (const messages of tail.values()) expect(messages.map((m) => [m.seq, m.interrupted])).toEqual([[4, true]]);
  });
});
