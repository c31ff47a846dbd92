/**
 * The engine's invariants (seed 4's test list) with a test world, the real model layer against
 * the scripted model server, and the store on both dialects.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { flush } from '../../src/core/index.js';
import { LEASE_TTL_MS } from '../../src/engine/lease.js';
import type { TickContext } from '../../src/engine/index.js';
import { startModelServer, unreachableBaseUrl, type ModelServer } from '../support/model-server.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';
import { engineFor, worldState, type EngineUnderTest } from './support/engine.js';
import { addInboxItems, inboxWorld } from './support/inbox-world.js';

const dialects = await testDialects();
const UNTIL = { timeout: 10_000, interval: 5 };

const summary = (text: string) => ({ json: { summary: text, important: [1] } });

describe.each(dialects)('engine on %s', (dialect) => {
  let store: TestStore;
  let server: ModelServer;
  let engine: EngineUnderTest;

  beforeEach(async () => {
    store = await openTestStore(dialect);
    server = await startModelServer();
    engine = engineFor(store, server.baseUrl);
  });
  afterEach(async () => {
    await server.close();
    await store.dispose();
  });

  const ledgerCount = async () =>
    Number(
      (
        await store.db
          .selectFrom('model_calls')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('a quiet observation commits and advances without reflecting', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    const outcome = await instance.tick();
    expect(outcome.kind).toBe('quiet');
    expect(server.chatRequests).toHaveLength(0);
    expect(await ledgerCount()).toBe(0);
    const status = await instance.status();
    expect(status.total_ticks).toBe(1);
    expect(status.last_tick_at).toBe(engine.clock.now());
    expect(status.consecutive_failures).toBe(0);
  });

  it('a changed observation runs the full pipeline and commits on success', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['invoice overdue', 'lunch?']);
    server.enqueue(summary('one invoice is overdue'));
    const outcome = await instance.tick();
    expect(outcome).toMatchObject({ kind: 'committed', message: 'summarised 2 item(s)' });
    expect(world.commits).toEqual([{ summary: 'one invoice is overdue', important: [1] }]);
    expect(await engine.state.get('inbox', 'baseline')).toBe(2);
    // The untrusted items reached the model fenced.
    const prompt = JSON.stringify(server.chatRequests[0]!.body!.messages);
    expect(prompt).toContain('untrusted-data');
    const rows = await store.db.selectFrom('model_calls').selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ world: 'inbox', purpose: 'summarise', role: 'local', outcome: 'ok' });
    // The next tick has nothing new: quiet, no model call.
    expect((await instance.tick()).kind).toBe('quiet');
    expect(server.chatRequests).toHaveLength(1);
  });

  it('a failing reflect holds the baseline and bumps failures', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    server.enqueue({ status: 500, message: 'boom' }, { malformed: true });
    const first = await instance.tick();
    expect(first.kind).toBe('failed');
    await engine.clock.advance(60_000);
    const second = await instance.tick();
    expect(second.kind).toBe('failed');
    const status = await instance.status();
    expect(status.consecutive_failures).toBe(2);
    expect(status.last_tick_at).toBeNull();
    expect(status.total_ticks).toBe(0);
    expect(await engine.state.get('inbox', 'baseline')).toBeUndefined();
    expect(world.abandoned).toEqual(['failed', 'failed']);
    // Back to health: the same window is covered and the counter resets.
    server.enqueue(summary('ok now'));
    const third = await instance.tick();
    expect(third.kind).toBe('committed');
    expect((await instance.status()).consecutive_failures).toBe(0);
    expect(await engine.state.get('inbox', 'baseline')).toBe(1);
  });

  it('a permanent rate-cap error arms the halt; a config change resumes', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    server.enqueue({ status: 413, message: 'Request too large' });
    expect((await instance.tick()).kind).toBe('failed');
    let status = await instance.status();
    expect(status.halted).toBe(true);
    expect(status.halt_reason).toMatch(/413|too large|rate/i);
    // Halted: no model call, no failure counted again.
    const before = server.chatRequests.length;
    const skipped = await instance.tick();
    expect(skipped).toMatchObject({ kind: 'skipped' });
    expect(skipped.message).toMatch(/^halted/);
    expect(server.chatRequests.length).toBe(before);
    expect(await instance.status()).toMatchObject({ last_outcome: 'skipped', last_summary: skipped.message }); // visible on the page
    // A transient 429 never arms it: covered in the llm suite; here, the model changes.
    server.models = ['scripted-model', 'bigger-context-model'];
    const changed = engineFor(store, server.baseUrl, { model: 'bigger-context-model', clock: engine.clock });
    const resumed = changed.instance(inboxWorld());
    server.enqueue(summary('fits now'));
    expect((await resumed.tick()).kind).toBe('committed');
    status = await resumed.status();
    expect(status.halted).toBe(false);
  });

  it('a transient 429 never arms the halt, even when the retries run out', async () => {
    const instance = engine.instance(inboxWorld());
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    server.enqueue(...Array.from({ length: 4 }, () => ({ status: 429, retryAfter: 1 })));
    const running = instance.tick();
    // The model layer waits out Retry-After on the clock: move time only once each wait has begun
    // (the tick timeout and the lease renewal are the two sleepers always parked).
    for (let attempt = 1; attempt <= 3; attempt++) {
      await vi.waitFor(() => expect(server.chatRequests).toHaveLength(attempt), UNTIL);
      await vi.waitFor(() => expect(engine.clock.pending).toBe(3), UNTIL);
      await engine.clock.advance(1000);
    }
    const outcome = await running;
    expect(outcome.kind).toBe('failed');
    expect(server.chatRequests).toHaveLength(4); // first try + 3 retries
    const status = await instance.status();
    expect(status.halted).toBe(false);
    expect(status.consecutive_failures).toBe(1);
    server.enqueue(summary('fine now'));
    expect((await instance.tick()).kind).toBe('committed');
  });

  it('a superseded tick discards its result and skips commit', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['slow']);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let calls = 0;
    server.handle(async () => {
      calls++;
      if (calls === 1) {
        await held; // the first evaluation is slow
        return summary('stale');
      }
      return summary('fresh');
    });
    const first = instance.tick();
    while (server.chatRequests.length === 0) await flush();
    const second = await instance.tick({ supersede: true });
    const firstOutcome = await first;
    release();
    expect(firstOutcome.kind).toBe('superseded');
    expect(second.kind).toBe('committed');
    expect(world.commits).toEqual([{ summary: 'fresh', important: [1] }]);
    expect(world.abandoned).toEqual(['superseded']);
    const status = await instance.status();
    expect(status.consecutive_failures).toBe(0);
    expect(status.total_ticks).toBe(1);
  });

  // Another worker on the same store took the lease (ours expired): it owns the tick now.
  const stealLease = () => sql`update tick_leases set holder = 'elsewhere:1', generation = generation + 1 where world = 'inbox'`.execute(store.db);

  it('a tick whose lease another worker took while it reflected stops as superseded and never commits', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    server.handle(() => ({ hang: true }));
    const running = instance.tick();
    await vi.waitFor(() => expect(server.chatRequests).toHaveLength(1), UNTIL);
    await stealLease();
    await engine.clock.advance(LEASE_TTL_MS / 3); // the next renewal finds the lease gone
    const outcome = await running;
    expect(outcome.kind).toBe('superseded');
    expect(outcome.message).toMatch(/lease was lost/);
    expect(world.commits).toEqual([]);
    // Hands off: the other worker may be resuming this tick from its checkpoint.
    expect(world.abandoned).toEqual([]);
    expect(await engine.state.get('inbox', 'open_tick')).not.toBeNull();
    expect((await instance.status()).consecutive_failures).toBe(0);

    // Whoever holds the lease next (here: a worker after the stolen lease lapsed) resumes it.
    await engine.clock.advance(LEASE_TTL_MS);
    server.handle(() => summary('resumed elsewhere'));
    const other = engine.instance(inboxWorld(), { holderTag: 'worker-2' });
    const resumed = await other.tick();
    expect(resumed).toMatchObject({ kind: 'committed', resumed: true });
    expect(await engine.state.get('inbox', 'baseline')).toBe(1);
  });

  it('a tick that times out after another worker took its lease (before a renewal noticed) leaves the tick to that worker', async () => {
    const inbox = inboxWorld();
    const stuck = { ...inbox, reflect: () => new Promise<never>(() => undefined) };
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    const instance = engine.instance(stuck, { tickTimeoutMs: 10_000 }); // shorter than the renewal interval
    const running = instance.tick();
    await vi.waitFor(() => expect(engine.clock.pending).toBe(2), UNTIL);
    await stealLease();
    await engine.clock.advance(10_000);
    const outcome = await running;
    expect(outcome.kind).toBe('superseded');
    expect(outcome.message).toMatch(/lease was lost/);
    expect(inbox.abandoned).toEqual([]);
    expect(await engine.state.get('inbox', 'open_tick')).not.toBeNull();
    expect((await instance.status()).consecutive_failures).toBe(0);
  });

  it('a tick whose lease was taken just before commit does not commit', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    server.handle(async () => {
      await stealLease(); // taken while the model answered, before any renewal came due
      return summary('too late');
    });
    const outcome = await instance.tick();
    expect(outcome.kind).toBe('superseded');
    expect(outcome.message).toMatch(/lease was lost to another worker before commit/);
    expect(world.commits).toEqual([]);
  });

  it('a quiet tick goes through the same commit checks: with its lease taken during observe, it does not commit', async () => {
    let committed = 0;
    const world = inboxWorld({ hooks: { afterObserve: () => stealLease().then(() => undefined), beforeCommit: () => void committed++ } });
    const instance = engine.instance(world);
    const outcome = await instance.tick();
    expect(outcome.kind).toBe('superseded');
    expect(outcome.message).toMatch(/lease was lost to another worker before commit/);
    expect(committed).toBe(0);
    const status = await instance.status();
    expect(status.total_ticks).toBe(0);
    expect(status.last_tick_at).toBeNull();
  });

  it('a quiet tick overtaken by a newer one never commits (the superseded-generation check)', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let committed = 0;
    let first = true;
    const world = inboxWorld({
      hooks: {
        afterObserve: async () => {
          if (!first) return;
          first = false;
          await held;
        },
        beforeCommit: () => void committed++,
      },
    });
    const instance = engine.instance(world);
    const old = instance.tick();
    await vi.waitFor(() => expect(first).toBe(false), UNTIL);
    const newer = instance.tick({ supersede: true });
    release();
    expect((await old).kind).toBe('superseded');
    expect((await newer).kind).toBe('quiet');
    expect(committed).toBe(1);
    expect((await instance.status()).total_ticks).toBe(1);
  });

  it('a tainted observation makes every later stage tainted, resumed ticks too: full work is downgraded to need approval', async () => {
    const seen: Array<[string, boolean, string]> = [];
    const world = inboxWorld();
    const spy =
      <A extends unknown[], R>(stage: string, fn: (ctx: TickContext, ...rest: A) => Promise<R>) =>
      async (ctx: TickContext, ...rest: A): Promise<R> => {
        seen.push([stage, ctx.tainted, ctx.permit('full')]);
        return fn(ctx, ...rest);
      };
    const tainted: typeof world = {
      ...world,
      prepareContext: spy('prepare', world.prepareContext),
      reflect: spy('reflect', world.reflect),
      commit: spy('commit', world.commit),
    };
    await addInboxItems(worldState(engine.state, 'inbox'), ['from outside']);
    server.enqueue(summary('read'));
    expect((await engine.instance(tainted).tick()).kind).toBe('committed');
    expect(seen).toEqual([
      ['prepare', true, 'tainted'],
      ['reflect', true, 'tainted'],
      ['commit', true, 'tainted'],
    ]);
    expect(seen.every(([, , mode]) => mode !== 'full')).toBe(true);

    // An untainted observation keeps full mode; analysis is never widened.
    const clean = { ...tainted, observe: async (ctx: TickContext) => ({ ...(await world.observe(ctx)), tainted: false }) };
    seen.length = 0;
    await addInboxItems(worldState(engine.state, 'inbox'), ['mine']);
    server.enqueue(summary('read'));
    expect((await engine.instance(clean).tick()).kind).toBe('committed');
    expect(seen.map(([stage, t, mode]) => [stage, t, mode])).toEqual([
      ['prepare', false, 'full'],
      ['reflect', false, 'full'],
      ['commit', false, 'full'],
    ]);
  });

  it('a scheduled tick that finds the lock held is skipped', async () => {
    const instance = engine.instance(inboxWorld());
    const other = engineFor(store, server.baseUrl, { clock: engine.clock }).instance(inboxWorld(), { holderTag: 'other-process' });
    await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    server.handle(async () => {
      await held;
      return summary('done');
    });
    const running = instance.tick();
    while (server.chatRequests.length === 0) await flush();
    const skipped = await other.tick();
    expect(skipped.kind).toBe('skipped');
    expect(skipped.message).toMatch(/^tick lock held by \S+: another tick of this world is running/);
    expect(skipped.message).toContain('Nothing to do: the next tick runs after it; a lock left by a process that died expires within 120 s.');
    expect((await other.status()).running).toBe(true); // status answers while the tick runs
    release();
    expect((await running).kind).toBe('committed');
  });

  it('two ticks of one instance at once: one runs, the other is skipped (never stacks)', async () => {
    const world = inboxWorld();
    const instance = engine.instance(world);
    await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
    server.enqueue(summary('once'));
    const [a, b] = await Promise.all([instance.tick(), instance.tick()]);
    expect([a.kind, b.kind].sort()).toEqual(['committed', 'skipped']);
    expect([a, b].find((o) => o.kind === 'skipped')!.message).toBe('a tick is already running');
    expect(world.commits).toHaveLength(1);
    expect(server.chatRequests).toHaveLength(1);
  });

  it('keeps state keys namespaced per instance', async () => {
    const a = engine.instance(inboxWorld({ kind: 'inbox' }), { name: 'inbox-a' });
    const b = engine.instance(inboxWorld({ kind: 'inbox' }), { name: 'inbox-b' });
    await addInboxItems(worldState(engine.state, 'inbox-a'), ['only for a']);
    server.enqueue(summary('a'));
    expect((await a.tick()).kind).toBe('committed');
    expect((await b.tick()).kind).toBe('quiet');
    expect(await engine.state.get('inbox-a', 'baseline')).toBe(1);
    expect(await engine.state.get('inbox-b', 'baseline')).toBeUndefined();
    expect((await a.status()).total_ticks).toBe(1);
    expect((await b.status()).total_ticks).toBe(1);
    const keys = (await store.db.selectFrom('instance_state').select('key').execute()).map((r) => r.key);
    expect(keys.every((k) => k.startsWith('inbox-a:') || k.startsWith('inbox-b:'))).toBe(true);
  });

  it('a model that hangs times out, the failure is counted, and the next tick runs', async () => {
    const hanging = engineFor(store, server.baseUrl, { timeoutMs: 300, clock: engine.clock });
    const instance = hanging.instance(inboxWorld());
    await addInboxItems(worldState(hanging.state, 'inbox'), ['x']);
    server.enqueue({ hang: true });
    const outcome = await instance.tick();
    expect(outcome.kind).toBe('failed');
    expect(outcome.message).toMatch(/timed out|timeout/i);
    expect((await instance.status()).consecutive_failures).toBe(1);
    const row = await store.db.selectFrom('model_calls').selectAll().executeTakeFirstOrThrow();
    expect(row.outcome).toBe('timeout');
    server.enqueue(summary('back'));
    expect((await instance.tick()).kind).toBe('committed');
  });

  it('the tick timeout aborts a stuck tick and counts a failure', async () => {
    let committing = false;
    const world = inboxWorld({
      hooks: {
        beforeCommit: (ctx) => {
          committing = true;
          return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
        },
      },
    });
    const instance = engine.instance(world, { tickTimeoutMs: 30 * 60_000 });
    const running = instance.tick();
    // In commit, with the timeout guard and the lease renewal waiting (on a slow store the guard is
    // armed long before the tick reaches commit: moving the clock then would time out an earlier stage).
    await vi.waitFor(() => expect(committing && engine.clock.pending >= 2).toBe(true), UNTIL);
    await engine.clock.advance(30 * 60_000);
    const outcome = await running;
    expect(outcome.kind).toBe('failed');
    expect(outcome.message).toMatch(/30-minute timeout/);
    expect(world.abandoned).toEqual(['timeout']);
    expect((await instance.status()).consecutive_failures).toBe(1);
  });

  it('the tick timeout ends a tick whose stage ignores its signal, and the next tick runs', async () => {
    const inbox = inboxWorld();
    const stuck = { ...inbox, reflect: () => new Promise<never>(() => undefined) }; // never settles, never listens
    await addInboxItems(worldState(engine.state, 'inbox'), ['a']);
    const instance = engine.instance(stuck, { tickTimeoutMs: 30 * 60_000 });
    const running = instance.tick();
    await vi.waitFor(() => expect(engine.clock.pending).toBe(2), UNTIL); // the timeout guard and lease renewal
    await engine.clock.advance(30 * 60_000);
    const outcome = await running;
    expect(outcome.kind).toBe('failed');
    expect(outcome.message).toMatch(/30-minute timeout/);
    expect(inbox.abandoned).toEqual(['timeout']);
    expect((await instance.status()).consecutive_failures).toBe(1);
    // The lock was released: a healthy tick of the same world runs at once.
    server.enqueue(summary('fine'));
    expect((await engine.instance(inboxWorld()).tick()).kind).toBe('committed');
  });

  it('the provider gate skips a tick when the model is unreachable and counts it', async () => {
    const instance = engine.instance(inboxWorld());
    await addInboxItems(worldState(engine.state, 'inbox'), ['x']);
    await server.close();
    const outcome = await instance.tick();
    expect(outcome.kind).toBe('skipped');
    expect(outcome.message).toMatch(/unavailable/);
    const status = await instance.status();
    expect(status.consecutive_failures).toBe(1);
    expect(status.provider_available).toBe(false);
    expect(status.provider_unavailable_reason).toBeTruthy();
    expect(await ledgerCount()).toBe(0);
  });

  it('an optional model that does not answer is reported in status but never stops the tick', async () => {
    const away = engineFor(store, server.baseUrl, { agentBaseUrl: await unreachableBaseUrl(), clock: engine.clock });
    const instance = away.instance(inboxWorld({ optionalRoles: ['agent'] }));
    await addInboxItems(worldState(away.state, 'inbox'), ['a']);
    server.enqueue(summary('fine'));
    expect((await instance.tick()).kind).toBe('committed');
    const status = await instance.status();
    expect(status.provider_available).toBe(true);
    expect(status.optional_models_unavailable).toEqual([{ role: 'agent', reason: expect.stringMatching(/not answering|refused|unreachable/i) }]);

    // Back: the next gate clears it.
    const back = engineFor(store, server.baseUrl, { clock: engine.clock });
    await addInboxItems(worldState(back.state, 'inbox'), ['b']);
    server.enqueue(summary('fine again'));
    expect((await back.instance(inboxWorld({ optionalRoles: ['agent'] })).tick()).kind).toBe('committed');
    expect((await back.instance(inboxWorld()).status()).optional_models_unavailable).toEqual([]);
  });

  it('an instance switched off by config never ticks, whatever its stored toggle says, and refuses to be switched on', async () => {
    const on = engine.instance(inboxWorld());
    await on.setEnabled(true); // a toggle stored earlier, before the config said no
    const off = engine.instance(inboxWorld(), { disabledBy: '[heartbeat] enabled = false in subconscious.toml' });
    expect(await off.isEnabled()).toBe(false);
    expect(off.enabledFrom(await off.keys())).toBe(false);
    expect(await off.status()).toMatchObject({ enabled: false, disabled_by: '[heartbeat] enabled = false in subconscious.toml' });
    await expect(off.setEnabled(true)).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('enabled = false') });
    expect((await off.tick()).message).toBe('disabled');
    await off.setEnabled(false); // switching off is always allowed
  });

  it('a disabled instance does not tick', async () => {
    const instance = engine.instance(inboxWorld());
    await instance.setEnabled(false);
    expect(await instance.tick()).toMatchObject({ kind: 'skipped', message: 'disabled' });
    expect((await instance.status()).enabled).toBe(false);
  });
});
