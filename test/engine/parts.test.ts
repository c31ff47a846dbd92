/**
 * The engine's parts on their own (issue 8 §5): the provider gate with the rate-cap breaker and
 * the lease keeper, each with a fake model layer or a fake lease, a real store for the keys and
 * the fake clock — no tick around them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, flush, silentLogger } from '../../src/core/index.js';
import { GateClosed, ProviderGate } from '../../src/engine/gate.js';
import { LEASE_TTL_MS, type TickLease } from '../../src/engine/lease.js';
import { LeaseLost, keepLease } from '../../src/engine/lease-keeper.js';
import { InstanceState, WorldKeys, type EngineKeys, type World } from '../../src/engine/index.js';
import { ModelError, type Llm, type ModelRole, type ProbeResult } from '../../src/llm/index.js';
import { openTestStore, type TestStore } from '../support/stores.js';

let store: TestStore;
const clock = new FakeClock();
beforeEach(async () => {
  store = await openTestStore('sqlite');
});
afterEach(async () => {
  await store.dispose();
});

/** The part of `Llm` the gate uses, answering as told. */
function fakeLlm(answers: Partial<Record<ModelRole, ProbeResult>>, signature = 'http://m|model'): Llm {
  return {
    probe: async (role: ModelRole) => answers[role] ?? { available: true },
    signature: () => signature,
  } as Partial<Llm> as Llm;
}

const world = (roles: ModelRole[], optionalRoles: ModelRole[] = []): World =>
  ({ kind: 'w', roles, optionalRoles, intervalMinutes: () => 5 }) as Partial<World> as World;

describe('provider gate', () => {
  const keysFor = () => new WorldKeys<EngineKeys>(new InstanceState(store.db, () => clock.now()), 'w');

  it('opens when every required role answers, records the probe, and reports optional roles that did not', async () => {
    const keys = keysFor();
    let changed = 0;
    const gate = new ProviderGate(
      world(['local'], ['agent']),
      fakeLlm({ agent: { available: false, reason: 'refused' } }),
      keys,
      () => clock.now(),
      silentLogger,
      () => changed++,
    );
    await gate.open();
    expect(await keys.get('provider')).toEqual({ available: true, reason: null, at: clock.now() });
    expect(await keys.get('optional_unavailable')).toEqual([{ role: 'agent', reason: 'refused' }]);
    expect(changed).toBe(1);
    await gate.open(); // unchanged: no write, no event
    expect(changed).toBe(1);
  });

  it('closes with model_unreachable naming the role and the reason', async () => {
    const keys = keysFor();
    const gate = new ProviderGate(
      world(['local']),
      fakeLlm({ local: { available: false, reason: 'ECONNREFUSED' } }),
      keys,
      () => clock.now(),
      silentLogger,
      () => undefined,
    );
    const err = await gate.open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GateClosed);
    expect((err as GateClosed).code).toBe('model_unreachable');
    expect((err as Error).message).toBe('the local model is unavailable: ECONNREFUSED');
    expect(await keys.get('provider')).toMatchObject({ available: false, reason: 'ECONNREFUSED' });
  });

  it('arms a halt only for a permanent rate cap, holds it for that signature, lifts it when the model changes or by hand', async () => {
    const keys = keysFor();
    const gate = new ProviderGate(
      world(['local']),
      fakeLlm({}, 'http://m|small'),
      keys,
      () => clock.now(),
      silentLogger,
      () => undefined,
    );
    expect(gate.haltFor(new ModelError('rate_limit', 'slow down'), 'slow down')).toBeNull();
    const halt = gate.haltFor(new ModelError('rate_cap', 'too large'), 'too large')!;
    expect(halt).toEqual({ signature: 'local=http://m|small', reason: 'too large', at: clock.now() });
    await keys.set('halt', halt);
    expect(await gate.haltReason(halt)).toBe('too large');

    const bigger = new ProviderGate(
      world(['local']),
      fakeLlm({}, 'http://m|big'),
      keys,
      () => clock.now(),
      silentLogger,
      () => undefined,
    );
    expect(await bigger.haltReason(halt)).toBeNull();
    expect(await keys.get('halt')).toBeNull();

    await keys.set('halt', halt);
    expect(await gate.clear()).toBe(true);
    expect(await keys.get('halt')).toBeNull();
    expect(await gate.clear()).toBe(false);
  });
});

describe('lease keeper', () => {
  /** A lease whose renewals answer from a script. */
  function scriptedLease(answers: Array<boolean | Error>): TickLease & { renewals: number } {
    const lease = {
      renewals: 0,
      renew: async () => {
        const answer = answers[lease.renewals++] ?? true;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
    return lease as unknown as TickLease & { renewals: number };
  }

  it('renews every third of the TTL while the tick runs, and stops when told', async () => {
    const lease = scriptedLease([]);
    const tick = new AbortController();
    const stop = keepLease({ lease, clock, log: silentLogger, world: 'w', tick, committing: () => false });
    await clock.advance(LEASE_TTL_MS);
    expect(lease.renewals).toBe(3);
    stop();
    await clock.advance(LEASE_TTL_MS);
    expect(lease.renewals).toBe(3);
    expect(tick.signal.aborted).toBe(false);
  });

  it('a store hiccup is not a lost lease; a lost one stops the tick with LeaseLost', async () => {
    const lease = scriptedLease([new Error('database is locked'), false]);
    const tick = new AbortController();
    keepLease({ lease, clock, log: silentLogger, world: 'w', tick, committing: () => false });
    await clock.advance(LEASE_TTL_MS / 3);
    await flush();
    expect(tick.signal.aborted).toBe(false);
    await clock.advance(LEASE_TTL_MS / 3);
    await flush();
    expect(tick.signal.aborted).toBe(true);
    expect(tick.signal.reason).toBeInstanceOf(LeaseLost);
  });

  it('never stops a committing tick (its effects are real; the commit re-checks the lease itself)', async () => {
    const lease = scriptedLease([false, false]);
    const tick = new AbortController();
    keepLease({ lease, clock, log: silentLogger, world: 'w', tick, committing: () => true });
    await clock.advance(LEASE_TTL_MS);
    await flush();
    expect(tick.signal.aborted).toBe(false);
    tick.abort();
  });
});
