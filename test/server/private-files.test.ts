/**
 * Issue 9 §4: `.subconscious/` is 0700, the token, the database (with its -wal and -shm files)
 * and daemon.json 0600 — created so, and tightened at start when an older version or a loose
 * umask left them readable by others, with a log line for each.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceDaemon, daemonFilePath } from '../../src/cli/remote.js';
import { securePrivateFolder } from '../../src/server/private-files.js';
import { ensureToken, tokenPath } from '../../src/server/token.js';
import { defaultSqlitePath } from '../../src/store/index.js';
import { openProductStore as openStore } from '../support/stores.js';

const modeOf = (p: string) => statSync(p).mode & 0o777;

let workspace: string;
let umask: number;
beforeEach(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-private-'));
  umask = process.umask(0o022); // the common default: new files 0644, folders 0755
});
afterEach(() => {
  process.umask(umask);
  rmSync(workspace, { recursive: true, force: true });
});

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  return { log: pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }), lines };
}

describe('new files', () => {
  it('the store creates .subconscious/ 0700 and the database, -wal and -shm 0600', async () => {
    const store = await openStore({ workspace });
    try {
      await store.db.insertInto('instance_state').values({ key: 'x', value: '1', updated_at: 1 }).execute();
      const db = defaultSqlitePath(workspace);
      expect(modeOf(path.dirname(db))).toBe(0o700);
      expect(modeOf(db)).toBe(0o600);
      expect(existsSync(`${db}-wal`)).toBe(true);
      expect(modeOf(`${db}-wal`)).toBe(0o600);
      expect(modeOf(`${db}-shm`)).toBe(0o600);
    } finally {
      await store.close();
    }
  });

  it('the token is created 0600 in a 0700 folder; daemon.json is 0600', () => {
    ensureToken(workspace);
    expect(modeOf(path.join(workspace, '.subconscious'))).toBe(0o700);
    expect(modeOf(tokenPath(workspace))).toBe(0o600);
    const unannounce = announceDaemon(workspace, 'http://127.0.0.1:7777');
    expect(modeOf(daemonFilePath(workspace))).toBe(0o600);
    unannounce();
    expect(existsSync(daemonFilePath(workspace))).toBe(false);
  });

  it('an explicit database file elsewhere is 0600 too, and its folder is left as it is', async () => {
    const folder = path.join(workspace, 'data');
    mkdirSync(folder, { mode: 0o755 });
    const store = await openStore({ sqliteFile: path.join(folder, 'mine.db') });
    await store.close();
    expect(modeOf(path.join(folder, 'mine.db'))).toBe(0o600);
    expect(modeOf(folder)).toBe(0o755);
  });
});

describe('existing files are tightened at start', () => {
  function looseWorkspace(): string[] {
    const dir = path.join(workspace, '.subconscious');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const files = ['token', 'subconscious.db', 'subconscious.db-wal', 'subconscious.db-shm', 'daemon.json'].map((f) => path.join(dir, f));
    for (const f of files) {
      writeFileSync(f, f.endsWith('token') ? 'a'.repeat(40) : '');
      chmodSync(f, 0o644);
    }
    return files;
  }

  it('securePrivateFolder makes the folder 0700 and each file 0600, one log line each', () => {
    const files = looseWorkspace();
    const { log, lines } = capturingLogger();
    const done = securePrivateFolder(workspace, log);
    expect(modeOf(path.join(workspace, '.subconscious'))).toBe(0o700);
    for (const f of files) expect(modeOf(f), f).toBe(0o600);
    expect(done).toHaveLength(files.length + 1);
    expect(lines).toHaveLength(files.length + 1);
    const tokenLine = lines.find((l) => l.path === files[0]);
    expect(tokenLine).toMatchObject({ from: '0644', to: '0600' });
    expect(tokenLine?.msg).toMatch(/tightened .*token from mode 0644 to 0600: it was readable by other users/);
    // Nothing to do the second time: no more lines.
    expect(securePrivateFolder(workspace, log)).toEqual([]);
    expect(lines).toHaveLength(files.length + 1);
  });

  it('opening the store tightens the database files (one-shot commands, no daemon)', async () => {
    mkdirSync(path.join(workspace, '.subconscious'), { mode: 0o755 });
    chmodSync(path.join(workspace, '.subconscious'), 0o755);
    const first = await openStore({ sqliteFile: path.join(workspace, '.subconscious', 'subconscious.db') });
    await first.close();
    const db = defaultSqlitePath(workspace);
    chmodSync(db, 0o644);
    const store = await openStore({ workspace });
    await store.close();
    expect(modeOf(db)).toBe(0o600);
    expect(modeOf(path.dirname(db))).toBe(0o700);
  });

  it('ensureToken tightens an existing token, and daemon.json over a loose old one is 0600', () => {
    looseWorkspace();
    ensureToken(workspace);
    expect(modeOf(tokenPath(workspace))).toBe(0o600);
    announceDaemon(workspace, 'http://127.0.0.1:7777');
    expect(modeOf(daemonFilePath(workspace))).toBe(0o600);
  });
});
