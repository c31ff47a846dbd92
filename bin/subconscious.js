#!/usr/bin/env node
// The published entry: runs the compiled CLI (`npm run build` makes dist/).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  console.error('subconscious: dist/ is missing. Run `npm run build` (npm start does it for you).');
  process.exit(1);
}
await import(main.href);
