/**
 * The protocol's `productContracts` (what the page and the CLI call and listen to) and what the
 * daemon built from `src/app/modules.ts` serves must be the same: a method or event in one and not
 * the other is a page button calling nothing, or a served method no face can type.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { createApp } from '../../src/app/app.js';
import { appContracts } from '../../src/app/contracts.js';
import { productModules } from '../../src/app/modules.js';
import { silentLogger } from '../../src/core/index.js';
import { productContracts, type Contract } from '../../src/protocol/index.js';

const methodsOf = (contracts: readonly Contract[]) => contracts.flatMap((c) => Object.keys(c.methods)).sort();
const eventsOf = (contracts: readonly Contract[]) => contracts.flatMap((c) => [...c.events]).sort();
const served: readonly Contract[] = [...appContracts, ...productModules.map((m) => m.contract)];

it('lists each served contract once: the app’s own and one per module, nothing else', () => {
  expect(new Set(productContracts).size).toBe(productContracts.length);
  expect(new Set<Contract>(productContracts)).toEqual(new Set(served));
});

it('names every method and event the modules serve, and no other', () => {
  expect(methodsOf(productContracts)).toEqual(methodsOf(served));
  expect(eventsOf(productContracts)).toEqual(eventsOf(served));
  // No name is claimed by two contracts.
  expect(new Set(methodsOf(productContracts)).size).toBe(methodsOf(productContracts).length);
  expect(new Set(eventsOf(productContracts)).size).toBe(eventsOf(productContracts).length);
});

it('matches what a daemon built from the module list answers to (rpc.methods)', async () => {
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'subconscious-contracts-'));
  const app = await createApp({ workspace, log: silentLogger, env: {} });
  try {
    expect(
      app.rpc
        .list()
        .map((m) => m.name)
        .sort(),
    ).toEqual(methodsOf(productContracts));
  } finally {
    await app.close();
    await rm(workspace, { recursive: true, force: true });
  }
});
