/**
 * Bare instance-state keys from before namespacing (seed 4) go to the module that claims them
 * (`legacyStateKeys`): the app names no world, so a module in a test gets the same treatment.
 */
import { expect, it } from 'vitest';
import { z } from 'zod';
import { createApp } from '../../src/app/app.js';
import { checkModules } from '../../src/app/module-checks.js';
import { productModules } from '../../src/app/modules.js';
import { silentLogger } from '../../src/core/index.js';
import { defineModule } from '../../src/engine/index.js';
import { defineContract } from '../../src/protocol/index.js';
import { openTestStore } from '../support/stores.js';

const contract = defineContract()({ methods: {}, events: [] });
const notesModule = defineModule({
  kind: 'notes',
  description: 'notes',
  host: true,
  config: z.strictObject({}),
  contract,
  legacyStateKeys: ['notes_cursor'],
  create: () => ({ handlers: {} }),
});

it("moves each module's legacy keys under its kind at start (the memory world's, and a test module's)", async () => {
  const store = await openTestStore('sqlite');
  const bare = (key: string, value: string) => store.db.insertInto('instance_state').values({ key, value, updated_at: 1 }).execute();
  await bare('last_tick_at', '123');
  await bare('notes_cursor', '"n-9"');
  await bare('unclaimed', '1');
  const app = await createApp({ workspace: store.workspace, modules: [...productModules, notesModule], store, log: silentLogger, env: {} });
  try {
    const rows = await store.db.selectFrom('instance_state').select(['key', 'value']).orderBy('key').execute();
    expect(rows).toEqual(
      expect.arrayContaining([
        { key: 'memory:last_tick_at', value: '123' },
        { key: 'notes:notes_cursor', value: '"n-9"' },
        { key: 'unclaimed', value: '1' }, // nobody claims it: left as it was
      ]),
    );
    expect(rows.map((r) => r.key)).not.toContain('last_tick_at');
    expect(rows.map((r) => r.key)).not.toContain('notes_cursor');
  } finally {
    await app.close();
    await store.dispose();
  }
});

it('refuses two modules claiming one legacy key', () => {
  const other = defineModule({
    ...{ kind: 'other', description: 'o', host: true, config: z.strictObject({}), contract },
    legacyStateKeys: ['notes_cursor'],
    create: () => ({ handlers: {} }),
  });
  expect(() => checkModules([notesModule, other])).toThrow('modules notes and other both claim the legacy state key "notes_cursor"');
});
