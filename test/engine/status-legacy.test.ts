/**
 * `subconscious.status`'s legacy top-level fields (seed 4 back-compat) mirror the first registered
 * world — not the busiest, not the alphabetically first — and have fixed values with no world.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { productModules } from '../../src/app/modules.js';
import { Registry, engineRpcHandlers } from '../../src/engine/index.js';
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

const status = () => engineRpcHandlers(registry, () => [])['subconscious.status']({});

it('mirrors the first registered world only', async () => {
  registry.add(inboxWorld({ kind: 'zeta' })); // registered first, last in the alphabet
  registry.add(inboxWorld({ kind: 'alpha' }));
  await registry.setEnabled('zeta', false);
  // alpha: two committed ticks and a failure; zeta: never ticked.
  await addInboxItems(worldState(engine.state, 'alpha'), ['x']);
  server.handle(() => ({ json: { summary: 'ok', important: [] } }));
  await registry.tickOnce('alpha');
  await registry.tickOnce('alpha');
  await addInboxItems(worldState(engine.state, 'alpha'), ['y']);
  server.handle(() => ({ status: 500, message: 'down' }));
  await registry.tickOnce('alpha');

  const s = await status();
  expect(s.instances.map((i) => i.world)).toEqual(['zeta', 'alpha']);
  const [zeta, alpha] = s.instances;
  expect(alpha).toMatchObject({ enabled: true, total_ticks: 2, consecutive_failures: 1 });
  expect({ enabled: s.enabled, total_ticks: s.total_ticks, consecutive_failures: s.consecutive_failures, last_tick_at: s.last_tick_at }).toEqual({
    enabled: zeta!.enabled,
    total_ticks: zeta!.total_ticks,
    consecutive_failures: zeta!.consecutive_failures,
    last_tick_at: zeta!.last_tick_at,
  });
  expect(s).toMatchObject({ enabled: false, total_ticks: 0, consecutive_failures: 0, last_tick_at: null });
});

it('with no world: false, 0, 0 and null', async () => {
  expect(await status()).toEqual({ instances: [], enabled: false, total_ticks: 0, consecutive_failures: 0, last_tick_at: null, structured_output: [] });
});

it('in the shipped daemon the first registered world is memory (seed 4’s own), as the contract says', () => {
  expect(productModules.find((m) => !m.host)?.kind).toBe('memory');
});
