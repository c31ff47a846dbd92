/**
 * The Tasks world switched off (in subconscious.toml, or on the page): no tick evaluates a task,
 * so each says so (why `world_off`) instead of "checked at the next tick" or "model unavailable".
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app/app.js';
import { silentLogger } from '../../../src/core/index.js';
import type { Task } from '../../../src/worlds/tasks/index.js';
import { unreachableBaseUrl } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

let store: TestStore | undefined;
let app: App | undefined;
afterEach(async () => {
  await app?.close();
  await store?.dispose();
  app = store = undefined;
});

async function start(config: string): Promise<App> {
  store = await openTestStore('sqlite');
  writeFileSync(path.join(store.workspace, 'subconscious.toml'), config);
  // The model is down too: the world being off is still the reason given.
  const nowhere = await unreachableBaseUrl();
  app = await createApp({
    workspace: store.workspace,
    store,
    log: silentLogger,
    env: { SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: nowhere },
  });
  const health = (await app.rpc.call('subconscious.health', { check: true })) as { models: Array<{ role: string; available: boolean | null }> };
  expect(health.models.find((m) => m.role === 'local')!.available).toBe(false);
  return app;
}

const whys = async (a: App) => ((await a.rpc.call('subconscious.tasks_list', {})) as Task[]).filter((t) => t.enabled && !t.completed).map((t) => t.why);

it('off in subconscious.toml: every task says the world is off, and how to switch it on', async () => {
  const a = await start('[worlds.tasks]\nenabled = false\n');
  const all = await whys(a);
  expect(all.length).toBeGreaterThan(0);
  for (const why of all) {
    expect(why).toMatchObject({
      kind: 'world_off',
      detail:
        '[worlds.tasks] enabled = false in subconscious.toml (set enabled = true under [worlds.tasks] in Settings on the Subconscious tab: it applies at once)',
    });
  }
});

it('switched off on the page: every task says so; switched on again, they are due', async () => {
  const a = await start('');
  await a.rpc.call('subconscious.set_enabled', { world: 'tasks', enabled: false });
  for (const why of await whys(a)) expect(why).toMatchObject({ kind: 'world_off', detail: 'switched off on the page (switch it on first)' });
  await a.rpc.call('subconscious.set_enabled', { world: 'tasks', enabled: true });
  for (const why of await whys(a)) expect(why.kind).not.toBe('world_off');
});
