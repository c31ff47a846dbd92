import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventBus, FakeClock, flush, isSubconsciousError, sequentialIds, type BusEvent } from '../../src/core/index.js';
import { ApprovalStore, type NewApproval } from '../../src/agent/index.js';
import type { Store } from '../../src/store/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const TEN_MIN = 10 * 60_000;

function request(over: Partial<NewApproval> = {}): NewApproval {
  return {
    runId: 'run-1',
    world: 'heartbeat',
    tool: 'write_file',
    server: 'fs',
    arguments: { path: '/tmp/x', content: 'hi' },
    reason: 'forward the report',
    expiresAt: null,
    ...over,
  };
}

const isCode = (code: string) => (e: unknown) => isSubconsciousError(e, code);

describe.each(await testDialects())('ApprovalStore on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let events: BusEvent[];
  let approvals: ApprovalStore;
  const others: Store[] = [];

  beforeEach(async () => {
    store = await openTestStore(dialect);
    clock = new FakeClock();
    events = [];
    const bus = new EventBus(() => clock.now());
    bus.subscribe((e) => events.push(e));
    approvals = new ApprovalStore({ db: store.db, clock, ids: sequentialIds('ap'), events: bus });
  });
  afterEach(async () => {
    for (const s of others.splice(0)) await s.close();
    await store.dispose();
  });

  it('creates a pending row and lists it with its arguments parsed', async () => {
    const a = await approvals.create(request({ expiresAt: clock.now() + TEN_MIN }));
    expect(a).toMatchObject({
      id: 'ap-1',
      state: 'pending',
      run_id: 'run-1',
      tool: 'write_file',
      server: 'fs',
      answered_at: null,
      expires_at: clock.now() + TEN_MIN,
    });
    await approvals.create(request({ runId: 'run-2' }));
    expect((await approvals.list()).map((x) => x.id)).toEqual(['ap-2', 'ap-1']);
    expect((await approvals.list({ runId: 'run-1' })).map((x) => x.id)).toEqual(['ap-1']);
    expect(await approvals.get('ap-1')).toEqual(a);
    expect(a.arguments).toEqual({ path: '/tmp/x', content: 'hi' });
    expect(events.map((e) => [e.type, e.data.state])).toEqual([
      ['approvals.changed', 'pending'],
      ['approvals.changed', 'pending'],
    ]);
  });

  it('answers once: a second answer is a conflict that changes nothing', async () => {
    const a = await approvals.create(request());
    clock.set(clock.now() + 5000);
    const approved = await approvals.approve(a.id);
    expect(approved).toMatchObject({ state: 'approved', answered_at: clock.now() });
    clock.set(clock.now() + 5000);
    await expect(approvals.approve(a.id)).rejects.toSatisfy(isCode('conflict'));
    await expect(approvals.deny(a.id)).rejects.toThrow(/already approved/);
    expect(await approvals.get(a.id)).toEqual(approved);
    expect((await approvals.list({ state: 'approved' })).map((x) => x.id)).toEqual([a.id]);
    expect(await approvals.list({ state: 'pending' })).toEqual([]);
  });

  it('an unknown id is not_found', async () => {
    await expect(approvals.approve('nope')).rejects.toSatisfy(isCode('not_found'));
    await expect(approvals.deny('nope')).rejects.toSatisfy(isCode('not_found'));
  });

  it('answering after the expiry is a conflict and the row becomes expired', async () => {
    const a = await approvals.create(request({ expiresAt: clock.now() + TEN_MIN }));
    clock.set(clock.now() + TEN_MIN);
    await expect(approvals.approve(a.id)).rejects.toThrow(/expired before it was answered/);
    expect(await approvals.get(a.id)).toMatchObject({ state: 'expired', answered_at: clock.now() });
    await expect(approvals.deny(a.id)).rejects.toSatisfy(isCode('conflict'));
  });

  it('an approve and a deny racing: exactly one wins', async () => {
    const a = await approvals.create(request());
    const results = await Promise.allSettled([approvals.approve(a.id), approvals.deny(a.id)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(isSubconsciousError(rejected.reason, 'conflict')).toBe(true);
  });

  it('waitForAnswer wakes on the answer, on the expiry (fake clock) and rejects on abort', async () => {
    const approvedRow = await approvals.create(request());
    const waiting = approvals.waitForAnswer(approvedRow.id);
    await flush();
    await approvals.approve(approvedRow.id);
    expect(await waiting).toBe('approved');

    const expiring = await approvals.create(request({ expiresAt: clock.now() + TEN_MIN }));
    let answer: string | undefined;
    const expiry = approvals.waitForAnswer(expiring.id).then((a) => (answer = a));
    await flush();
    await clock.advance(TEN_MIN - 1);
    expect(answer).toBeUndefined();
    await clock.advance(1);
    expect(await expiry).toBe('expired');
    expect((await approvals.get(expiring.id))!.state).toBe('expired');

    const aborted = await approvals.create(request());
    const ctl = new AbortController();
    const wait = approvals.waitForAnswer(aborted.id, ctl.signal);
    await flush();
    ctl.abort();
    await expect(wait).rejects.toSatisfy(isCode('cancelled'));
    expect((await approvals.get(aborted.id))!.state).toBe('pending');
  });

  it('rows are durable: a restarted process sees them and expires the pending rows of dead runs', async () => {
    await approvals.create(request({ runId: 'dead-run' }));
    const live = await approvals.create(request({ runId: 'live-run' }));
    const done = await approvals.create(request({ runId: 'dead-run' }));
    await approvals.deny(done.id);

    const reopened = await store.reopen();
    others.push(reopened);
    const restarted = new ApprovalStore({ db: reopened.db, clock, ids: sequentialIds('other') });
    expect(await restarted.list()).toHaveLength(3);
    expect(await restarted.expireOrphans(['live-run'])).toBe(1);
    const states = Object.fromEntries((await restarted.list()).map((a) => [a.id, a.state]));
    expect(states).toEqual({ 'ap-1': 'expired', [live.id]: 'pending', [done.id]: 'denied' });
    expect(await restarted.expireRun('live-run')).toBe(1);
    expect((await restarted.get(live.id))!.state).toBe('expired');
  });

  it('never expires rows another live process waits on; expires those of a process that is gone', async () => {
    const mine = await approvals.create(request({ runId: 'gone-from-this-process' }));
    const otherLive = await approvals.create(request({ runId: 'run-in-another-daemon' }));
    const otherDead = await approvals.create(request({ runId: 'run-of-a-killed-daemon' }));
    const dead = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!; // a pid that no longer runs
    const host = os.hostname();
    await store.db
      .updateTable('approvals')
      .set({ owner: `${host}:1` })
      .where('id', '=', otherLive.id)
      .execute(); // pid 1 is alive
    await store.db
      .updateTable('approvals')
      .set({ owner: `${host}:${dead}` })
      .where('id', '=', otherDead.id)
      .execute();
    // A second process (a CLI command, another daemon) recovering must leave the live owner's row alone.
    expect(await approvals.expireOrphans([])).toBe(2);
    const states = Object.fromEntries((await approvals.list()).map((a) => [a.id, a.state]));
    expect(states).toEqual({ [mine.id]: 'expired', [otherLive.id]: 'pending', [otherDead.id]: 'expired' });
  });

  it('with pollMs, a waiter sees an answer given by another process', async () => {
    const a = await approvals.create(request());
    const reopened = await store.reopen();
    others.push(reopened);
    const elsewhere = new ApprovalStore({ db: reopened.db, clock, ids: sequentialIds('other') });
    const polling = new ApprovalStore({ db: store.db, clock, ids: sequentialIds('p'), pollMs: 2000 });
    let answer: string | undefined;
    const sleeping = clock.pending;
    const wait = polling.waitForAnswer(a.id).then((x) => (answer = x));
    // Its first read done (on Postgres a round trip a loaded machine can stretch past a flush): it sleeps until the poll.
    await vi.waitFor(() => expect(clock.pending).toBe(sleeping + 1), { timeout: 5000, interval: 1 });
    await elsewhere.deny(a.id);
    await flush();
    expect(answer).toBeUndefined(); // not told in-process: it re-reads on its next poll
    await clock.advance(2000);
    expect(await wait).toBe('denied');
  });
});
