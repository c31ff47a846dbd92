/**
 * The coordinator's contract (src/coordination/types.ts header), run against both
 * implementations: our tables on SQLite and pg-boss on Postgres. Time is the fake clock; a
 * "dead process" is a real child process that has exited; a "restart" is a fresh coordinator
 * on a second connection to the same database.
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { createCoordinator, type Coordinator, type Job } from '../../src/coordination/index.js';
import { FakeClock, uuid } from '../../src/core/index.js';
import { dropSchema, openTestStore, testDialects, type AnyStore, type TestStore } from '../support/stores.js';

const dialects = await testDialects();
const LEASE = 30_000;
const UNTIL = { timeout: 10_000, interval: 5 };

/** A pid on this host that no longer runs (a SIGKILLed daemon's). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  return Number(child.stdout.trim());
}

describe.each(dialects)('coordinator contract on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let bossSchema: string;
  const made: Coordinator[] = [];
  const reopened: AnyStore[] = [];

  const coordinator = async (opts: { workerId?: string; on?: AnyStore } = {}) => {
    const c = await createCoordinator({
      store: opts.on ?? store,
      clock,
      ids: uuid,
      leaseMs: LEASE,
      bossSchema,
      ...(opts.workerId ? { workerId: opts.workerId } : {}),
    });
    made.push(c);
    return c;
  };
  const ids = (jobs: Job[]) => jobs.map((j) => j.payload);

  beforeEach(async () => {
    store = await openTestStore(dialect);
    clock = new FakeClock(Date.now());
    bossSchema = `b_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  });
  afterEach(async () => {
    for (const c of made.splice(0)) await c.stop().catch(() => undefined);
    for (const s of reopened.splice(0)) await s.close();
    await store.dispose();
    if (dialect === 'postgres') await dropSchema(bossSchema);
  });

  it('send is committed before it resolves: a fresh connection sees the job', async () => {
    const a = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: { n: 1 } });
    const other = await store.reopen();
    reopened.push(other);
    const b = await coordinator({ on: other });
    const [job] = await b.fetch('test.q');
    expect(job).toMatchObject({ id, payload: { n: 1 }, state: 'active', attempt: 1, takenOverFrom: null });
  });

  it('one holder at a time: a second worker gets nothing while the lease is renewed', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 1 });
    expect((await a.fetch('test.q')).map((j) => j.id)).toEqual([id]);
    expect(await b.fetch('test.q')).toEqual([]);
    await clock.advance(LEASE * 0.7);
    expect(await a.renew(id)).toBe(true);
    await clock.advance(LEASE * 0.7);
    expect(await b.fetch('test.q')).toEqual([]);
  });

  it('a lapsed lease is taken over with its checkpoint, naming the worker it came from; the stale holder is refused', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 'work' });
    await a.fetch('test.q');
    expect(await a.checkpoint(id, { step: 2 })).toBe(true);
    await clock.advance(LEASE + 1);
    const [job] = await b.fetch('test.q');
    expect(job).toMatchObject({ id, checkpoint: { step: 2 }, takenOverFrom: a.workerId, attempt: 2 });
    expect(await a.complete(id)).toBe(false);
    expect(await a.fail(id, 'late')).toBe(false);
    expect(await a.checkpoint(id, { step: 9 })).toBe(false);
    expect(await a.renew(id)).toBe(false);
    expect(await b.getJob(id)).toMatchObject({ state: 'active', checkpoint: { step: 2 } });
    expect(await b.complete(id, { done: true })).toBe(true);
    expect((await b.getJob(id))?.state).toBe('completed');
  });

  it('a holder process that is gone on this host is noticed at once (no waiting for the lease)', async () => {
    const dead = `${os.hostname()}:${deadPid()}:w1`;
    const a = await coordinator({ workerId: dead });
    const b = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 1 });
    await a.fetch('test.q');
    const [job] = await b.fetch('test.q');
    expect(job).toMatchObject({ id, takenOverFrom: dead });
  });

  it('a restarted worker (fresh coordinator, same database) resumes its job from the checkpoint', async () => {
    const a = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 'p', key: 'k1' });
    await a.fetch('test.q');
    await a.checkpoint(id, 'half');
    const other = await store.reopen();
    reopened.push(other);
    const restarted = await coordinator({ on: other });
    await clock.advance(LEASE + 1);
    const [job] = await restarted.fetch('test.q');
    expect(job).toMatchObject({ id, checkpoint: 'half', takenOverFrom: a.workerId, key: 'k1' });
  });

  it('within a group one job is active; the next is the highest priority, then the oldest, across queues', async () => {
    const a = await coordinator();
    const b = await coordinator();
    await a.send({ queue: 'test.beat', payload: 'beat-1', group: 'bot-1' });
    await clock.advance(1);
    await a.send({ queue: 'test.msg', payload: 'msg-1', group: 'bot-1', priority: 10 });
    await clock.advance(1);
    await a.send({ queue: 'test.beat', payload: 'beat-2', group: 'bot-1' });
    await a.send({ queue: 'test.beat', payload: 'other', group: 'bot-2' });
    // The heartbeat queue must not start bot-1's work before the person's message.
    const first = await b.fetch('test.beat', { batchSize: 10 });
    expect(ids(first)).toEqual(['other']);
    const [msg] = await a.fetch('test.msg', { batchSize: 10 });
    expect(msg?.payload).toBe('msg-1');
    expect(await b.fetch('test.beat', { batchSize: 10 })).toEqual([]);
    await a.complete(msg!.id);
    const next = await b.fetch('test.beat', { batchSize: 10 });
    expect(ids(next)).toEqual(['beat-1']);
    await b.complete(next[0]!.id);
    expect(ids(await a.fetch('test.beat', { batchSize: 10 }))).toEqual(['beat-2']);
  });

  it('priorities across two workers: the highest starts first, then the oldest', async () => {
    const a = await coordinator();
    const b = await coordinator();
    await a.send({ queue: 'test.q', payload: 'low-old' });
    await clock.advance(1);
    await a.send({ queue: 'test.q', payload: 'low-new' });
    await a.send({ queue: 'test.q', payload: 'high', priority: 5 });
    expect(ids(await b.fetch('test.q'))).toEqual(['high']);
    expect(ids(await a.fetch('test.q'))).toEqual(['low-old']);
    expect(ids(await b.fetch('test.q'))).toEqual(['low-new']);
  });

  it('a key is a singleton while its job is queued or active', async () => {
    const a = await coordinator();
    const first = await a.send({ queue: 'test.q', payload: 1, key: 'resume:bot-1' });
    expect(await a.send({ queue: 'test.q', payload: 2, key: 'resume:bot-1' })).toBe(first);
    await a.fetch('test.q');
    expect(await a.send({ queue: 'test.q', payload: 3, key: 'resume:bot-1' })).toBe(first);
    await a.complete(first);
    expect(await a.send({ queue: 'test.q', payload: 4, key: 'resume:bot-1' })).not.toBe(first);
  });

  it('liveJob finds a key’s queued or active job, and nothing once it finished (it sends nothing)', async () => {
    const a = await coordinator();
    expect(await a.liveJob('live:1')).toBeNull();
    expect((await a.sizes()).find((s) => s.queue === 'test.q')?.queued ?? 0).toBe(0);
    const id = await a.send({ queue: 'test.q', payload: 1, key: 'live:1' });
    expect(await a.liveJob('live:1')).toMatchObject({ id, state: 'queued', key: 'live:1' });
    await a.fetch('test.q');
    expect(await a.liveJob('live:1')).toMatchObject({ id, state: 'active' });
    await a.complete(id);
    expect(await a.liveJob('live:1')).toBeNull();
  });

  it('completeMany completes the held jobs of a batch at once and leaves out one that is not ours any more', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await a.send({ queue: 'test.q', payload: i }));
    const other = await a.send({ queue: 'test.r', payload: 'r' });
    const batch = await a.fetch('test.q', { batchSize: 5 });
    await a.fetch('test.r');
    expect(batch.map((j) => j.id).sort()).toEqual([...sent].sort());
    await clock.advance(LEASE + 1);
    for (const id of [...sent.slice(1), other]) expect(await a.renew(id)).toBe(true);
    const [lost] = await b.fetch('test.q');
    expect(lost?.id).toBe(sent[0]);
    const done = await a.completeMany([...sent, other]);
    expect(done.sort()).toEqual([...sent.slice(1), other].sort());
    for (const id of [...sent.slice(1), other]) expect((await a.getJob(id))?.state).toBe('completed');
    expect((await a.getJob(sent[0]!))?.state).toBe('active');
    expect(await a.completeMany([])).toEqual([]);
    expect(await b.completeMany([sent[0]!])).toEqual([sent[0]]);
  });

  it('cancel by id, key and group (no holder needed)', async () => {
    const a = await coordinator();
    const byId = await a.send({ queue: 'test.q', payload: 'id' });
    await a.send({ queue: 'test.q', payload: 'key', key: 'k' });
    await a.send({ queue: 'test.q', payload: 'g1', group: 'g' });
    await a.send({ queue: 'test.r', payload: 'g2', group: 'g' });
    const keep = await a.send({ queue: 'test.q', payload: 'keep' });
    expect(await a.cancel({ id: byId })).toBe(1);
    expect(await a.cancel({ key: 'k' })).toBe(1);
    expect(await a.cancel({ group: 'g', queue: 'test.r' })).toBe(1);
    expect(await a.cancel({ group: 'g' })).toBe(1);
    expect((await a.getJob(byId))?.state).toBe('cancelled');
    const left = await a.fetch('test.q', { batchSize: 10 });
    expect(left.map((j) => j.id)).toEqual([keep]);
  });

  it('cancel with waitingOnly leaves a job a worker holds to it, and cancels one that waits', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const held = await a.send({ queue: 'test.q', payload: 'held', key: 'held' });
    expect((await b.fetch('test.q', { batchSize: 1 })).map((j) => j.id)).toEqual([held]);
    const waiting = await a.send({ queue: 'test.q', payload: 'waiting', key: 'waiting' });
    expect(await a.cancel({ key: 'held' }, { waitingOnly: true })).toBe(0);
    expect((await a.getJob(held))?.state).toBe('active');
    expect(await b.renew(held)).toBe(true);
    expect(await a.cancel({ key: 'waiting' }, { waitingOnly: true })).toBe(1);
    expect((await a.getJob(waiting))?.state).toBe('cancelled');
    expect(await b.complete(held)).toBe(true);
  });

  it('a job whose payload does not parse is moved aside with its reason; nothing else stops', async () => {
    const a = await coordinator();
    const bad = await a.send({ queue: 'test.q', payload: { version: 0 } });
    const good = await a.send({ queue: 'test.q', payload: { version: 1 } });
    const seen: string[] = [];
    const stop = a.work<{ version: number }>('test.q', { batchSize: 5 }, async (job) => {
      if (job.payload.version !== 1) return a.deadLetter(job.id, 'unknown payload version');
      seen.push(job.id);
    });
    await vi.waitFor(async () => expect((await a.getJob(good))?.state).toBe('completed'), UNTIL);
    await stop();
    expect(seen).toEqual([good]);
    expect((await a.getJob(bad))?.state).toBe('dead');
    expect((await a.sizes()).find((s) => s.queue === 'test.q')).toMatchObject({ dead: 1, queued: 0, active: 0 });
  });

  it('a hand-edited row whose payload is not JSON goes to the dead letters at fetch, with its reason; the next job runs', async () => {
    const a = await coordinator();
    const bad = await a.send({ queue: 'test.q', payload: 1 });
    const good = await a.send({ queue: 'test.q', payload: 2 });
    if (dialect === 'sqlite') await sql`update coord_jobs set payload = '{not json' where id = ${bad}`.execute(store.db);
    else await sql`update coord_holds set payload = '{not json' where job_id = ${bad}`.execute(store.db);
    const seen: string[] = [];
    const stop = a.work('test.q', { batchSize: 5, pollIntervalMs: 1000 }, async (job) => {
      seen.push(job.id);
    });
    await vi.waitFor(async () => expect((await a.getJob(good))?.state).toBe('completed'), UNTIL);
    await stop();
    expect(seen).toEqual([good]);
    expect((await a.getJob(bad))?.state).toBe('dead');
    const [dead, ...more] = await a.deadLetters();
    expect(more).toEqual([]);
    expect(dead).toMatchObject({ id: bad, queue: 'test.q' });
    expect(dead!.reason).toMatch(/payload is not JSON/);
  });

  it('deadLetters lists what deadLetter moved aside, newest first, with the reason', async () => {
    const a = await coordinator();
    const first = await a.send({ queue: 'test.q', payload: 1 });
    const second = await a.send({ queue: 'test.r', payload: 2, key: 'k2', group: 'g' });
    await a.deadLetter(first, 'unknown payload version 0');
    await clock.advance(5);
    await a.deadLetter(second, 'no such bot');
    expect(await a.deadLetters()).toMatchObject([
      { id: second, queue: 'test.r', key: 'k2', group: 'g', reason: 'no such bot' },
      { id: first, queue: 'test.q', reason: 'unknown payload version 0' },
    ]);
    expect(await a.deadLetters(1)).toHaveLength(1);
  });

  it('prune deletes finished jobs past the retention and nothing live', async () => {
    const a = await coordinator();
    const done = await a.send({ queue: 'test.q', payload: 'done' });
    const failed = await a.send({ queue: 'test.q', payload: 'failed' });
    const cancelled = await a.send({ queue: 'test.q', payload: 'cancelled' });
    const live = await a.send({ queue: 'test.q', payload: 'live', startAfter: clock.now() + 10 * 86_400_000 });
    const held = await a.send({ queue: 'test.r', payload: 'held' });
    const jobs = await a.fetch('test.q', { batchSize: 5 });
    expect(jobs.map((j) => j.id).sort()).toEqual([done, failed, cancelled].sort());
    await a.fetch('test.r');
    await a.complete(done);
    await a.fail(failed, 'boom');
    await a.cancel({ id: cancelled });
    const settledAt = clock.now();
    await clock.advance(60_000);
    expect(await a.prune(settledAt)).toBe(0);
    await clock.advance(1);
    expect(await a.prune(settledAt + 1)).toBe(3);
    for (const id of [done, failed, cancelled]) expect(await a.getJob(id)).toBeNull();
    expect((await a.getJob(live))?.state).toBe('queued');
    expect((await a.getJob(held))?.state).toBe('active');
    expect(await a.complete(held)).toBe(true);
  });

  it('the maintenance loop prunes finished jobs once they are older than the retention', async () => {
    const retentionMs = 10 * 60_000;
    const a = await createCoordinator({ store, clock, ids: uuid, leaseMs: LEASE, bossSchema, retentionMs });
    made.push(a);
    const id = await a.send({ queue: 'test.q', payload: 1 });
    await a.fetch('test.q');
    await a.complete(id);
    await a.start();
    await clock.advance(retentionMs / 2);
    expect((await a.getJob(id))?.state).toBe('completed');
    for (let i = 0; i < 120 && (await a.getJob(id)) !== null; i++) await clock.advance(LEASE / 3);
    await vi.waitFor(async () => expect(await a.getJob(id)).toBeNull(), UNTIL);
  });

  it('a failure is retried after its delay, doubled per attempt, then stays failed', async () => {
    const a = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 1, retryLimit: 2, retryDelayMs: 1000, retryBackoff: true });
    await a.fetch('test.q');
    expect(await a.fail(id, 'boom')).toBe(true);
    expect(await a.fetch('test.q')).toEqual([]);
    await clock.advance(1000);
    expect((await a.fetch('test.q'))[0]).toMatchObject({ id, attempt: 2 });
    await a.fail(id, 'boom');
    await clock.advance(1999);
    expect(await a.fetch('test.q')).toEqual([]);
    await clock.advance(1);
    expect((await a.fetch('test.q'))[0]).toMatchObject({ id, attempt: 3 });
    await a.fail(id, 'boom');
    await clock.advance(60_000);
    expect(await a.fetch('test.q')).toEqual([]);
    expect((await a.getJob(id))?.state).toBe('failed');
    const once = await a.send({ queue: 'test.q', payload: 2, retryLimit: 3 });
    await a.fetch('test.q');
    await a.fail(once, 'do not retry', { retry: false });
    expect((await a.getJob(once))?.state).toBe('failed');
  });

  it('work() renews the lease while a long handler runs, and completes the job after it', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 1 });
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      const stop = a.work('test.q', { pollIntervalMs: 1000 }, async () => {
        resolve();
        await new Promise<void>((r) => (release = r));
      });
      made.push({ stop } as unknown as Coordinator);
    });
    await started;
    // Every loop parked on the clock (the renewal among them): after each step, wait until they
    // are parked again, so the renewal has been written (real I/O) before b looks.
    await vi.waitFor(() => expect(clock.pending).toBeGreaterThan(0), UNTIL);
    const parked = clock.pending;
    for (let i = 0; i < 9; i++) {
      await clock.advance(LEASE / 3);
      await vi.waitFor(() => expect(clock.pending).toBeGreaterThanOrEqual(parked), UNTIL);
      expect(await b.fetch('test.q')).toEqual([]);
    }
    release();
    await vi.waitFor(async () => expect((await a.getJob(id))?.state).toBe('completed'), UNTIL);
  });

  it('work() is woken by a send that lands while its fetch runs (no wait for the poll, the clock never moves)', async () => {
    const a = await coordinator();
    const fetch = a.fetch.bind(a);
    let sentDuringFetch: Promise<string> | null = null;
    // The first fetch finds nothing; the job is sent after it has looked and before it returns.
    a.fetch = (async (...args: Parameters<typeof fetch>) => {
      const jobs = await fetch(...args);
      sentDuringFetch ??= a.send({ queue: 'test.q', payload: 'late' });
      await sentDuringFetch;
      return jobs;
    }) as typeof a.fetch;
    const ran: unknown[] = [];
    const stop = a.work('test.q', { pollIntervalMs: 60_000 }, async (job) => void ran.push(job.payload));
    made.push({ stop } as unknown as Coordinator);
    await vi.waitFor(() => expect(ran).toEqual(['late']), UNTIL);
  });

  it('stop() hands held jobs back at once', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const id = await a.send({ queue: 'test.q', payload: 1 });
    await a.start();
    await a.fetch('test.q');
    await a.stop();
    expect((await b.fetch('test.q')).map((j) => j.id)).toEqual([id]);
  });

  it('a named lease has one holder; each acquisition raises its generation; a lapsed one is taken', async () => {
    const a = await coordinator();
    const b = await coordinator();
    const first = await a.lease('tick:inbox', 10_000);
    expect(first).not.toBeNull();
    expect(await b.lease('tick:inbox', 10_000)).toBeNull();
    expect(await b.leaseHolder('tick:inbox')).toBe(a.workerId);
    await first!.release();
    const second = await b.lease('tick:inbox', 10_000);
    expect(second!.generation).toBeGreaterThan(first!.generation);
    await clock.advance(10_001);
    const third = await a.lease('tick:inbox', 10_000);
    expect(third!.generation).toBeGreaterThan(second!.generation);
    expect(await second!.renew()).toBe(false);
    expect(await third!.renew()).toBe(true);
  });

  it('the workers registry: id, host, pid, role, last seen, jobs held, alive', async () => {
    const a = await coordinator();
    const b = await coordinator();
    await a.start();
    await b.start();
    const id = await a.send({ queue: 'test.q', payload: 1 });
    await b.fetch('test.q');
    await a.lease('tick:w');
    let list = await a.workers();
    expect(list.find((w) => w.id === b.workerId)).toMatchObject({ host: os.hostname(), pid: process.pid, role: 'face', jobsHeld: 1, alive: true });
    expect(list.find((w) => w.id === a.workerId)).toMatchObject({ jobsHeld: 1, alive: true });
    await b.complete(id);
    await b.stop();
    list = await a.workers();
    expect(list.find((w) => w.id === b.workerId)).toMatchObject({ jobsHeld: 0, alive: false });
  });

  it('othersAlive: the live workers besides this one, counted at start and at each heartbeat; unknown before start', async () => {
    const a = await coordinator();
    const b = await coordinator();
    expect(a.othersAlive()).toBeNull();
    await a.start();
    expect(a.othersAlive()).toBe(0);
    await b.start();
    expect(b.othersAlive()).toBe(1);
    expect(a.othersAlive()).toBe(0); // until its next heartbeat
    // Time moves only once both heartbeats wait for their next beat: a loop still in its start's
    // maintenance (a slow Postgres) would otherwise go to sleep after the move and miss it.
    await vi.waitFor(() => expect(clock.pending).toBe(2), UNTIL);
    await clock.advance(LEASE / 3);
    await vi.waitFor(() => expect(a.othersAlive()).toBe(1), UNTIL);
    await b.stop();
    expect(b.othersAlive()).toBeNull();
    await vi.waitFor(() => expect(clock.pending).toBe(1), UNTIL);
    await clock.advance(LEASE / 3);
    await vi.waitFor(() => expect(a.othersAlive()).toBe(0), UNTIL);
  });
});
