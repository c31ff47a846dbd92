/**
 * The daemon serves web/dist. Before the browser tests run, build it when it is missing or older
 * than the page's sources, exactly as `npm run build` does (vite with web/vite.config.ts).
 * Test files run in parallel workers, so one build at a time: a lock folder (mkdir is atomic)
 * makes the others wait for it and then find the page fresh.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const WEB = path.join(ROOT, 'web');
const BUILT = path.join(WEB, 'dist', 'index.html');
const LOCK = path.join(ROOT, 'test-output', '.page-build-lock');
const LOCK_STALE_MS = 120_000;

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p));
    else newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

function isFresh(): boolean {
  const sources = Math.max(
    newestSource(path.join(WEB, 'src')),
    statSync(path.join(WEB, 'index.html')).mtimeMs,
    statSync(path.join(WEB, 'vite.config.ts')).mtimeMs,
  );
  return existsSync(BUILT) && statSync(BUILT).mtimeMs >= sources;
}

function tryLock(): boolean {
  mkdirSync(path.dirname(LOCK), { recursive: true });
  try {
    mkdirSync(LOCK);
    return true;
  } catch {
    const held = statSync(LOCK, { throwIfNoEntry: false });
    if (!held) return tryLock(); // released in between
    // Held by another worker — unless that worker died mid-build long ago.
    if (Date.now() - held.mtimeMs > LOCK_STALE_MS) {
      rmSync(LOCK, { recursive: true, force: true });
      return tryLock();
    }
    return false;
  }
}

export async function ensurePageBuilt(): Promise<void> {
  for (;;) {
    if (isFresh()) return;
    if (tryLock()) {
      try {
        // Loaded only to build: most runs find the page fresh (`npm test` builds first) and skip vite's import.
        if (!isFresh()) await (await import('vite')).build({ configFile: path.join(WEB, 'vite.config.ts'), logLevel: 'warn' });
      } finally {
        rmSync(LOCK, { recursive: true, force: true });
      }
      return;
    }
    // Another worker is building: look again shortly (a build takes about a second).
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
