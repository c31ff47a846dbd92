/** The rules a module list must keep, refused before anything opens (src/app/module-checks.ts). */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkModules } from '../../src/app/module-checks.js';
import { productModules } from '../../src/app/modules.js';
import { serviceKey } from '../../src/core/index.js';
import { defineModule, type WorldModule } from '../../src/engine/index.js';
import { defineContract } from '../../src/protocol/index.js';

const contract = defineContract()({ methods: {}, events: [] });
const Thing = serviceKey<{ n: number }>('test.thing');

function mod(kind: string, over: Partial<Parameters<typeof defineModule>[0]> = {}): WorldModule {
  return defineModule({ kind, description: kind, host: true, config: z.strictObject({}), contract, create: () => ({ handlers: {} }), ...over });
}

describe('module checks', () => {
  it('accepts the product list', () => {
    expect(() => checkModules(productModules)).not.toThrow();
  });

  it('refuses two modules of one kind', () => {
    expect(() => checkModules([mod('a'), mod('a')])).toThrow('two modules are named "a"');
  });

  it('refuses tables and migrations not namespaced by kind (shipped names excepted)', () => {
    const table = mod('notes', { tables: { names: ['items'], migrations: {} } });
    expect(() => checkModules([table])).toThrow('module notes: table "items" must start with "notes_"');
    const migration = mod('notes', { tables: { names: ['notes_items'], migrations: { '0001_items': { up: async () => undefined } } } });
    expect(() => checkModules([migration])).toThrow('module notes: migration "0001_items" must be named "notes/NNNN_…"');
    // Names a module declares as shipped before modules keep theirs.
    const shipped = mod('notes', {
      tables: { names: ['items'], migrations: { '0001_items': { up: async () => undefined } }, shipped: { tables: ['items'], migrations: ['0001_items'] } },
    });
    expect(() => checkModules([shipped])).not.toThrow();
    const twice = [mod('a', { tables: { names: ['a_x'], migrations: {} } }), mod('b', { tables: { names: ['a_x'], migrations: {} } })];
    expect(() => checkModules(twice)).toThrow('must start with "b_"');
  });

  it('refuses a module whose needed service no module before it provides', () => {
    const user = mod('user', { needs: [Thing] });
    const provider = mod('provider', { provides: [Thing] });
    expect(() => checkModules([user, provider])).toThrow('module user needs test.thing, which no module before it provides');
    expect(() => checkModules([provider, user])).not.toThrow();
    expect(() => checkModules([provider, mod('again', { provides: [Thing] })])).toThrow('module again provides test.thing, which is already provided');
  });
});
