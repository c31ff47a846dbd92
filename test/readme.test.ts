/** The README's RPC and event reference is the contracts' own list (regenerate: `npm run docs:rpc`). */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { README, readmeBlock, rpcReference } from '../devtools/rpc-reference.js';
import { productContracts } from '../src/protocol/index.js';

it('lists every served method and event, as the contracts describe them', () => {
  const block = readmeBlock(readFileSync(README, 'utf8'));
  expect(block, 'README.md lost its rpc-reference markers').not.toBeNull();
  expect(block, 'README.md is out of date: run `npm run docs:rpc`').toBe(rpcReference());
  for (const contract of productContracts) {
    for (const name of Object.keys(contract.methods)) expect(block).toContain(`| \`${name}\` |`);
    for (const event of contract.events) expect(block).toContain(`\`${event}\``);
  }
});
