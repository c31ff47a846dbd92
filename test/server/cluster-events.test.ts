/**
 * One cluster, one view (issue 17 §3): two daemons ("workers") on one Postgres send each other's
 * events on `/events` with the same monotonic ids; a client that reconnects with `Last-Event-ID`
 * gets exactly what it missed, in order; one that missed more than the store keeps is told
 * (`events.gap`); a payload past NOTIFY's 8000-byte limit still travels. Both workers accept the
 * one token kept in the database. SQLite (one process) replays the same way.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/cli/daemon.js';
import { Registry } from 'prom-client';
import { EventBus, RpcDispatcher, silentLogger } from '../../src/core/index.js';
import { createHttpApp, listen } from '../../src/server/http.js';
import { EventFeed } from '../../src/store/index.js';
import { TEST_PG_URL, openTestStore, postgresReachable, type TestStore } from '../support/stores.js';
import { unreachableBaseUrl } from '../support/model-server.js';
import { openEvents } from '../support/sse.js';

const pg = await postgresReachable();
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function modelEnv(): Promise<Record<string, string>> {
  const nowhere = await unreachableBaseUrl();
  return { SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: nowhere, SUBCONSCIOUS_LOCAL_MODEL: 'm', SUBCONSCIOUS_AGENT_MODEL: 'm' };
}

async function daemonOn(env: Record<string, string>): Promise<Daemon> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-cluster-'));
  const daemon = await startDaemon({ workspace, port: 0, log: silentLogger, env: { ...env, SUBCONSCIOUS_TOKEN: '' } });
  cleanups.push(async () => {
    await daemon.stop();
    rmSync(workspace, { recursive: true, force: true });
  });
  return daemon;
}

const changed = (reason: string) => ({ world: 'tasks', reason });
const isChanged = (m: { type: string }) => m.type === 'tasks.changed';

describe.skipIf(!pg)('two workers on one Postgres', () => {
  let store: TestStore;
  let a: Daemon;
  let b: Daemon;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    cleanups.push(() => store.dispose());
    const schema = /#(.+)$/.exec(store.location)![1]!;
    const env = { ...(await modelEnv()), SUBCONSCIOUS_DATABASE_URL: `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}` };
    a = await daemonOn(env);
    b = await daemonOn(env);
  });

  it('accept the one token kept in the database', async () => {
    expect(a.token).toBe(b.token);
    expect(a.token.length).toBeGreaterThanOrEqual(32);
    for (const d of [a, b]) {
      const res = await fetch(`${d.http.url}/rpc`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'rpc.methods' }),
      });
      expect(res.status).toBe(200);
    }
  });

  it("an event emitted on A arrives on B's /events with the id A's stream gives it", async () => {
    const onA = await openEvents(a.http.url, a.token);
    const onB = await openEvents(b.http.url, b.token);
    try {
      await onA.next((m) => m.type === 'hello');
      await onB.next((m) => m.type === 'hello');
      a.app.events.emit('tasks.changed', changed('from A'));
      const seenOnB = await onB.next(isChanged);
      const seenOnA = await onA.next(isChanged);
      expect(seenOnB.data).toEqual(changed('from A'));
      expect(seenOnB.id).toBe(seenOnA.id);
      // Bigger than NOTIFY allows: only its id is notified, the row is read.
      const big = 'x'.repeat(20_000);
      b.app.events.emit('tasks.changed', changed(big));
      expect((await onA.next(isChanged)).data.reason).toBe(big);
      expect((await onB.next(isChanged)).id).toBeGreaterThan(seenOnB.id);
    } finally {
      onA.close();
      onB.close();
    }
  });

  it('a client that reconnects with Last-Event-ID gets exactly what it missed, in order, then live events', async () => {
    const first = await openEvents(b.http.url, b.token);
    await first.next((m) => m.type === 'hello');
    a.app.events.emit('tasks.changed', changed('seen'));
    const last = await first.next((m) => isChanged(m) && m.data.reason === 'seen');
    first.close();
    for (const n of [1, 2, 3]) a.app.events.emit('tasks.changed', changed(`missed ${n}`));
    await a.app.feed.settled();

    const again = await openEvents(b.http.url, b.token, last.id);
    try {
      const hello = await again.next();
      expect(hello).toMatchObject({ type: 'hello', id: last.id, data: { last_event_id: last.id } });
      const replayed = [await again.next(isChanged), await again.next(isChanged), await again.next(isChanged)];
      expect(replayed.map((m) => m.data.reason)).toEqual(['missed 1', 'missed 2', 'missed 3']);
      const ids = replayed.map((m) => m.id);
      expect(ids[0]).toBeGreaterThan(last.id);
      expect([...ids].sort((x, y) => x - y)).toEqual(ids);
      a.app.events.emit('tasks.changed', changed('live'));
      const live = await again.next(isChanged);
      expect(live.data.reason).toBe('live');
      expect(live.id).toBeGreaterThan(ids[2]!);
      // Nothing twice, nothing else of ours between.
      expect(again.seen.filter(isChanged).map((m) => m.data.reason)).toEqual(['missed 1', 'missed 2', 'missed 3', 'live']);
    } finally {
      again.close();
    }
  });

  it('a Last-Event-ID that is not a number is refused with a clear 400', async () => {
    const res = await fetch(`${b.http.url}/events`, { headers: { authorization: `Bearer ${b.token}`, 'last-event-id': 'yesterday' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_params');
  });
});

describe.each(['sqlite', ...(pg ? ['postgres' as const] : [])] as const)('the bounded store of events, on %s', (dialect) => {
  it('replays what a client missed after a restart of its worker, and tells it of a gap past what is kept', async () => {
    const store = await openTestStore(dialect);
    cleanups.push(() => store.dispose());
    // The server's own messages (hello, events.gap) carry the app's clock, as its events do.
    const at = Date.UTC(2030, 0, 1);
    const serve = async (keep: number) => {
      const bus = new EventBus(() => at);
      const feed = await EventFeed.open({ store, bus, now: () => at, keep });
      const http = await listen(
        createHttpApp({
          rpc: new RpcDispatcher([]),
          events: feed,
          token: 't'.repeat(32),
          metrics: new Registry(),
          webRoot: null,
          log: silentLogger,
          health: async () => ({}),
          now: () => at,
        }),
        { host: '127.0.0.1', port: 0 },
      );
      return { bus, feed, http, close: async () => (await http.close(), await feed.close()) };
    };
    const token = 't'.repeat(32);

    const one = await serve(1000);
    const client = await openEvents(one.http.url, token);
    expect(await client.next((m) => m.type === 'hello')).toMatchObject({ at });
    one.bus.publish('tasks.changed', changed('before'));
    const last = await client.next(isChanged);
    client.close();
    for (const n of [1, 2]) one.bus.publish('tasks.changed', changed(`while away ${n}`));
    await one.close();

    // The worker restarts (a new feed on the same store); the client comes back.
    const two = await serve(5);
    const back = await openEvents(two.http.url, token, last.id);
    expect((await back.next(isChanged)).data.reason).toBe('while away 1');
    expect((await back.next(isChanged)).data.reason).toBe('while away 2');
    back.close();

    // 300 more: past the prune cadence, the store keeps only the newest few.
    for (let n = 0; n < 300; n++) two.bus.publish('tasks.changed', changed(`flood ${n}`));
    await two.feed.settled();
    const late = await openEvents(two.http.url, token, last.id);
    try {
      await late.next((m) => m.type === 'hello');
      const gap = await late.next();
      expect(gap).toMatchObject({ type: 'events.gap', at });
      expect(gap.data).toMatchObject({ last_event_id: last.id, head_id: two.feed.head });
      expect(gap.data.oldest_id as number).toBeGreaterThan(last.id + 1);
      expect(gap.id).toBe(two.feed.head);
      two.bus.publish('tasks.changed', changed('after the gap'));
      expect((await late.next(isChanged)).data.reason).toBe('after the gap');
    } finally {
      late.close();
      await two.close();
    }
  });
});
