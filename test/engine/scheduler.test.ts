/**
 * The scheduler with a fake clock: it sleeps between passes (no fixed interval), ticks what is
 * due, runs worlds concurrently, never hot-loops on failures, and supersedes an overrun tick.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { FakeClock, flush } from '../../src/core/index.js';
import { LEASE_TTL_MS, Registry } from '../../src/engine/index.js';
import { describeBackoff } from '../../src/protocol/index.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { engineFor, worldState, type EngineUnderTest } from './support/engine.js';
import { addInboxItems, inboxWorld } from './support/inbox-world.js';

let store: TestStore;
let server: ModelServer;
let engine: EngineUnderTest;
let registry: Registry;

beforeEach(async () => {
  store = await openTestStore('sqlite');
  server = await startModelServer();
  engine = engineFor(store, server.baseUrl);
  registry = new Registry(engine.deps, { maxSleepMs: 60_000 });
});
afterEach(async () => {
  await registry.stop();
  await server.close();
  await store.dispose();
});

const totalTicks = async (name: string) => (await registry.get(name).status()).total_ticks;
async function settle() {
  for (let i = 0; i < 20; i++) await flush();
}

it('ticks each world on its own cadence and sleeps in between', async () => {
  registry.add(inboxWorld({ kind: 'fast', intervalMinutes: 5 }));
  registry.add(inboxWorld({ kind: 'slow', intervalMinutes: 30 }));
  registry.start();
  await settle();
  expect(await totalTicks('fast')).toBe(1); // due at start: never ticked
  expect(await totalTicks('slow')).toBe(1);
  for (let minute = 0; minute < 60; minute++) {
    await engine.clock.advance(60_000);
    await settle();
  }
  expect(await totalTicks('fast')).toBe(13); // 0, 5, …, 60
  expect(await totalTicks('slow')).toBe(3); // 0, 30, 60
  expect(server.chatRequests).toHaveLength(0); // quiet worlds never call the model
  // Passes are driven by due times, not a tight loop.
  expect(registry.scheduler.passes).toBeLessThan(200);
});

it('backs a failing world off exponentially (capped), says why in status, and resets on success', async () => {
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
  server.handle(() => ({ status: 500, message: 'down' }));
  const start = engine.clock.now();
  registry.start();
  await settle();
  // Tries at 0, then waits 5, 10, 20, 40 min, then the 60-minute cap: 0, 5, 15, 35, 75, 135, 195.
  const tries: number[] = [];
  for (let minute = 0; minute <= 200; minute++) {
    while (tries.length < server.chatRequests.length) tries.push(Math.round((engine.clock.now() - start) / 60_000));
    await engine.clock.advance(60_000);
    await settle();
  }
  expect(tries).toEqual([0, 5, 15, 35, 75, 135, 195]);
  const failing = await registry.get('inbox').status();
  expect(failing.consecutive_failures).toBe(7);
  expect(failing.last_tick_at).toBeNull();
  expect(failing.backoff).toEqual({ failures: 7, reason: failing.last_error, next_try_at: start + 255 * 60_000 });
  expect(failing.next_tick_at).toBe(start + 255 * 60_000);
  const line = describeBackoff(failing.backoff!, (at) => `+${(at - start) / 60_000}min`);
  expect(line).toMatch(/^failed 7 times in a row: .*down.*; next try at \+255min$/);

  // The model answers again: one success resets the failures and the cadence.
  server.handle(() => ({ json: { summary: 'ok', important: [] } }));
  await registry.trigger('inbox').done;
  const healed = await registry.get('inbox').status();
  expect(healed.consecutive_failures).toBe(0);
  expect(healed.backoff).toBeNull();
  expect(healed.next_tick_at).toBe(engine.clock.now() + 5 * 60_000);
});

it('a halted world is not backed off: it checks at its cadence whether its model changed', async () => {
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
  let calls = 0;
  // Two failures, then a permanent rate cap (413) that halts the world.
  server.handle(() => (++calls <= 2 ? { status: 500, message: 'down' } : { status: 413, message: 'Request too large for this model' }));
  const start = engine.clock.now();
  registry.start();
  await settle();
  for (let minute = 0; minute < 15; minute++) {
    await engine.clock.advance(60_000);
    await settle();
  }
  const halted = await registry.get('inbox').status();
  expect(halted).toMatchObject({ halted: true, consecutive_failures: 3, backoff: null });
  expect(halted.next_tick_at).toBe(start + 20 * 60_000); // 15 + the cadence, not 15 + 20
});

it('keeps the backed-off wait across a restart (it is stored as next_tick_at)', async () => {
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
  server.handle(() => ({ status: 500, message: 'down' }));
  registry.start();
  await settle();
  for (let minute = 0; minute < 15; minute++) {
    await engine.clock.advance(60_000);
    await settle();
  }
  expect(server.chatRequests).toHaveLength(3); // 0, 5, 15: the next waits 20 min, until 35
  await registry.stop();
  registry = new Registry(engine.deps, { maxSleepMs: 60_000 });
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  registry.start();
  for (let minute = 15; minute < 34; minute++) {
    await engine.clock.advance(60_000);
    await settle();
  }
  expect(server.chatRequests).toHaveLength(3);
  await engine.clock.advance(60_000);
  await settle();
  expect(server.chatRequests).toHaveLength(4);
});

it('runs worlds concurrently: a slow evaluation does not hold another world back', async () => {
  registry.add(inboxWorld({ kind: 'slow', intervalMinutes: 5 }));
  registry.add(inboxWorld({ kind: 'quiet', intervalMinutes: 5 }));
  await addInboxItems(worldState(engine.state, 'slow'), ['x']);
  let release!: () => void;
  server.handle(() => new Promise((r) => (release = () => r({ json: { summary: 's', important: [] } }))));
  registry.start();
  while (server.chatRequests.length === 0) await flush();
  await settle();
  expect(await totalTicks('quiet')).toBe(1);
  expect((await registry.get('slow').status()).running).toBe(true);
  release();
  await settle();
  await settle();
  expect(await totalTicks('slow')).toBe(1);
});

it('supersedes a tick that overran its cadence', async () => {
  const world = inboxWorld({ kind: 'inbox', intervalMinutes: 5 });
  registry.add(world);
  await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
  let calls = 0;
  server.handle(async () => {
    calls++;
    if (calls === 1) await new Promise(() => undefined); // never answers; aborted by supersession
    return { json: { summary: 'second try', important: [] } };
  });
  registry.start();
  while (server.chatRequests.length === 0) await flush();
  await engine.clock.advance(5 * 60_000);
  await settle();
  // Time moves only until the second try is sent; its answer then arrives in real time, so a slow
  // machine never lets the fake clock time that call out.
  while (server.chatRequests.length < 2) {
    await engine.clock.advance(1000);
    await settle();
  }
  await vi.waitFor(() => expect(world.commits).toHaveLength(1), { timeout: 10_000, interval: 5 });
  expect(world.abandoned).toEqual(['superseded']);
  expect(world.commits).toEqual([{ summary: 'second try', important: [] }]);
  expect((await registry.get('inbox').status()).consecutive_failures).toBe(0);
});

it('two workers on one store share the cadence: each tick runs once, not once per worker', async () => {
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  const worker2 = new Registry(engine.deps, { maxSleepMs: 60_000 });
  worker2.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }), { holderTag: 'worker-2' });
  registry.start();
  await settle();
  worker2.start();
  try {
    for (let minute = 0; minute < 60; minute++) {
      await engine.clock.advance(60_000);
      await settle();
    }
    expect(await totalTicks('inbox')).toBe(13); // 0, 5, …, 60 — not doubled
  } finally {
    await worker2.stop();
  }
});

it('a worker that died mid-tick: another worker takes its open tick over within two lease periods, not a whole cadence later', async () => {
  await addInboxItems(worldState(engine.state, 'inbox'), ['from before the kill']);
  // The dead worker: its tick waits on a model reply that never comes, on a clock that never
  // moves again, so its lease is never renewed.
  let release!: () => void;
  const never = new Promise<void>((r) => (release = r));
  server.handle(async (req) => {
    if (server.chatRequests.indexOf(req) === 0) await never;
    return { json: { summary: 'read', important: [1] } };
  });
  const dead = engineFor(store, server.baseUrl, { clock: new FakeClock(engine.clock.now()) }).instance(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }), {
    holderTag: 'dead-worker',
  });
  const cutOff = dead.tick();
  while (server.chatRequests.length === 0) await flush();

  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  registry.start();
  await settle();
  const start = engine.clock.now();
  let committedAt: number | null = null;
  for (let s = 0; s < 2 * LEASE_TTL_MS && committedAt === null; s += 10_000) {
    await engine.clock.advance(10_000);
    await settle();
    if ((await registry.get('inbox').status()).total_ticks > 0) committedAt = engine.clock.now();
  }
  expect(committedAt, 'the open tick is taken over within two lease periods').not.toBeNull();
  expect(committedAt! - start).toBeGreaterThanOrEqual(LEASE_TTL_MS); // not before the lease lapsed
  expect((await registry.get('inbox').status()).last_outcome).toBe('committed');
  release();
  await cutOff;
});

it('Run now (trigger) returns at once and the tick runs in the background', async () => {
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 60 }));
  const { triggered, done } = registry.trigger('all');
  expect(triggered).toEqual(['inbox']);
  const [outcome] = await done;
  expect(outcome!.kind).toBe('quiet');
  expect(() => registry.trigger('nope')).toThrow(/no world named "nope"/);
});

it('a world waiting out its initial delay says when its first tick comes (status next_tick_at), then ticks then', async () => {
  registry.add({ ...inboxWorld({ kind: 'inbox', intervalMinutes: 5 }), initialDelayMs: () => 60_000 });
  const start = engine.clock.now();
  registry.start();
  await settle();
  const waiting = await registry.get('inbox').status();
  expect(waiting).toMatchObject({ last_tick_at: null, total_ticks: 0, next_tick_at: start + 60_000 });
  await engine.clock.advance(60_000);
  await settle();
  expect(await totalTicks('inbox')).toBe(1);
  expect((await registry.get('inbox').status()).next_tick_at).toBe(start + 60_000 + 5 * 60_000);
});

it('Run now of a world that is off is refused with why; Run now of all runs only the worlds that are on and says what it skipped', async () => {
  registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 60 }));
  registry.add(inboxWorld({ kind: 'paged', intervalMinutes: 60 }));
  registry.add(inboxWorld({ kind: 'tasks', intervalMinutes: 60 }), { disabledBy: '[worlds.tasks] enabled = false in subconscious.toml' });
  await registry.setEnabled('paged', false);
  await expect(registry.requestRun('tasks')).rejects.toMatchObject({
    code: 'world_off',
    message: expect.stringMatching(
      /tasks is off: \[worlds\.tasks\] enabled = false in subconscious\.toml \(set enabled = true under \[worlds\.tasks\] in Settings on the Subconscious tab: it applies at once\)/,
    ),
  });
  await expect(registry.requestRun('paged')).rejects.toMatchObject({
    code: 'world_off',
    message: expect.stringMatching(/switched off on the page \(switch it on first\)/),
  });
  const all = await registry.requestRun('all');
  expect(all.triggered).toEqual(['inbox']);
  expect(all.skipped.map((s) => s.world)).toEqual(['paged', 'tasks']);
  expect(all.skipped[1]!.reason).toMatch(/set enabled = true under \[worlds\.tasks\]/);
  const outcomes = await all.done;
  expect(outcomes.map((o) => o.world)).toEqual(['inbox']);
  expect(await totalTicks('tasks')).toBe(0);
  expect(await totalTicks('paged')).toBe(0);
});

it('a tick committing past its cadence is left to finish: the loop sleeps, never spins, and the next tick follows', async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let commits = 0;
  const world = inboxWorld({
    kind: 'inbox',
    intervalMinutes: 5,
    hooks: {
      beforeCommit: async () => {
        if (++commits === 1) await held; // the first commit outlasts several cadences
      },
    },
  });
  registry.add(world);
  await addInboxItems(worldState(engine.state, 'inbox'), ['slow']);
  server.enqueue({ json: { summary: 'done at last', important: [] } });
  registry.start();
  await vi.waitFor(() => expect(commits).toBe(1), { timeout: 10_000, interval: 5 });
  const before = registry.scheduler.passes;
  for (let minute = 0; minute < 20; minute++) {
    await engine.clock.advance(60_000);
    await settle(); // a spinning loop would starve these turns and never get here
  }
  // About one pass per simulated minute (the sleep cap), not thousands.
  expect(registry.scheduler.passes - before).toBeLessThan(40);
  expect(world.abandoned).toEqual([]);
  release();
  await vi.waitFor(() => expect(world.commits).toHaveLength(1), { timeout: 10_000, interval: 5 });
  expect((await registry.get('inbox').status()).consecutive_failures).toBe(0);
});

it('Run now pressed 50 times while a tick runs: never supersedes it; one more tick follows, then nothing (issue 9)', async () => {
  const world = inboxWorld({ kind: 'inbox', intervalMinutes: 60 });
  registry.add(world);
  await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  server.handle(async () => {
    if (server.chatRequests.length === 1) await held;
    return { json: { summary: `tick ${server.chatRequests.length}`, important: [] } };
  });
  const first = registry.trigger('inbox');
  while (server.chatRequests.length === 0) await flush();
  const presses = Array.from({ length: 50 }, () => registry.trigger('inbox').done);
  release();
  const outcomes = (await Promise.all([first.done, ...presses])).flat();
  // Every press is answered by the tick that ran after it: the same one for all 50.
  expect(new Set(outcomes.slice(1).map((o) => o.generation)).size).toBe(1);
  expect(outcomes[0]!.kind).toBe('committed');
  expect(world.abandoned).toEqual([]); // nothing superseded
  expect(await totalTicks('inbox')).toBe(2);
  await settle();
  expect(await totalTicks('inbox')).toBe(2);
  // With nothing running, a press starts a tick at once.
  const [alone] = await registry.trigger('inbox').done;
  expect(alone!.kind).toBe('quiet');
  expect(await totalTicks('inbox')).toBe(3);
});

it('counts a Run-now tick in flight until its next time is written, and a press waiting behind it', async () => {
  const instance = registry.add(inboxWorld({ kind: 'inbox', intervalMinutes: 5 }));
  expect(registry.scheduler.inFlight()).toBe(0);
  const first = registry.scheduler.runNow(instance);
  const second = registry.scheduler.runNow(instance); // waits for the first
  expect(registry.scheduler.inFlight()).toBe(2);
  await first;
  await second;
  await settle();
  expect(registry.scheduler.inFlight()).toBe(0);
  // By then the world's next time is stored: nothing of the scheduler's still writes.
  expect((await instance.keys()).next_tick_at).toBeGreaterThan(0);
});
