/**
 * The daemon serves web/dist. Before the browser tests run, build it when it is missing or older
 * than the page's sources, exactly as `npm run build` does (vite with web/vite.config.ts).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const ROOT = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const WEB = path.join(ROOT, 'web');
const BUILT = path.join(WEB, 'dist', 'index.html');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p));
    else newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

export async function ensurePageBuilt(): Promise<void> {
  const sources = Math.max(newestSource(path.join(WEB, 'src')), statSync(path.join(WEB, 'index.html')).mtimeMs, statSync(path.join(WEB, 'vite.config.ts')).mtimeMs);
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= sources) return;
  await build({ configFile: path.join(WEB, 'vite.config.ts'), logLevel: 'warn' });
}
