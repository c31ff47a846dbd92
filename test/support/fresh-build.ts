/**
 * Vitest global setup: the CLI and daemon tests run the compiled command (`dist/`, what `npm start`
 * runs), which starts in about half the time of compiling the sources on every spawn. `npm test`
 * builds first; a run of single test files (`npx vitest run test/cli`) rebuilds here when a
 * source file is newer than the build, so no test ever runs yesterday's code.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT, CLI } from './cli.js';

const SCHEMAS_FILE = path.join(ROOT, 'dist', 'protocol', 'schemas.json');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(CLI).mtimeMs;
  } catch {
    return 0;
  }
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

export default function setup(): void {
  const sources = Math.max(newestMtime(path.join(ROOT, 'src')), statSync(path.join(ROOT, 'tsconfig.build.json')).mtimeMs);
  if (builtAt() < sources) {
    console.log('[fresh-build] dist/ is older than src/: compiling the daemon (tsc -p tsconfig.build.json)');
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  }
  // The result and event schemas behind /openapi.json: only when the protocol changed (~20 s).
  const protocol = Math.max(newestMtime(path.join(ROOT, 'src', 'protocol')), mtimeOf(path.join(ROOT, 'devtools', 'protocol-schemas.ts')));
  if (mtimeOf(SCHEMAS_FILE) < protocol) {
    console.log('[fresh-build] src/protocol/ changed: writing its JSON Schemas (devtools/protocol-schemas.ts)');
    execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'devtools', 'protocol-schemas.ts')], { cwd: ROOT, stdio: 'inherit' });
  }
}
