/**
 * The README's RPC and event reference, generated from the contracts the daemon serves (the
 * app's own, then one per module in `src/app/modules.ts`), so the README cannot drift from them.
 * `npm run docs:rpc` rewrites the block between the markers (test/readme.test.ts checks it) and
 * writes docs/openapi.json (not committed: generated, like dist/openapi.json).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { appContracts } from '../src/app/contracts.js';
import { productModules } from '../src/app/modules.js';
import type { Contract } from '../src/protocol/index.js';
import { productOpenApi, protocolSchemas } from './protocol-schemas.js';

export const README = path.resolve(fileURLToPath(new URL('../README.md', import.meta.url)));
export const START = '<!-- rpc-reference:start (generated from the contracts by `npm run docs:rpc`; test/readme.test.ts checks it) -->';
export const END = '<!-- rpc-reference:end -->';

/** Who serves each contract, in the daemon's order. */
function served(): Array<{ by: string; contract: Contract }> {
  const own = ['engine', 'usage', 'agent'] as const;
  return [...appContracts.map((contract, i) => ({ by: own[i]!, contract })), ...productModules.map((m) => ({ by: m.kind, contract: m.contract }))];
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

export function rpcReference(): string {
  const lines = ['| method | served by | description |', '|---|---|---|'];
  for (const { by, contract } of served()) {
    for (const [name, spec] of Object.entries(contract.methods)) lines.push(`| \`${name}\` | ${by} | ${cell(spec.description)} |`);
  }
  lines.push('', 'Events on `/events`, by who sends them:', '');
  for (const { by, contract } of served()) {
    if (contract.events.length) lines.push(`- ${by}: ${contract.events.map((e) => `\`${e}\``).join(', ')}`);
  }
  return [START, ...lines, END].join('\n');
}

/** The README's current block, or null when its markers are missing. */
export function readmeBlock(text: string): string | null {
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  return from < 0 || to < from ? null : text.slice(from, to + END.length);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = readFileSync(README, 'utf8');
  const block = readmeBlock(text);
  if (block === null) throw new Error(`README.md has no ${START} … ${END} block`);
  writeFileSync(README, text.replace(block, rpcReference()));
  console.log('README.md: RPC reference updated');
  // The OpenAPI 3.1 document the daemon serves at /openapi.json, for people without a daemon at hand.
  const openapi = path.resolve(fileURLToPath(new URL('../docs/openapi.json', import.meta.url)));
  writeFileSync(openapi, JSON.stringify(productOpenApi(protocolSchemas()), null, 2) + '\n');
  console.log(`${path.relative(process.cwd(), openapi)}: OpenAPI 3.1 written`);
}
