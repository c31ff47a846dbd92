/**
 * Invariant 4: a process killed with SIGKILL between reflect and commit resumes on its next start
 * from its checkpoint, without calling the model again for the finished stage.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { InstanceState } from '../../src/engine/index.js';
import { openProductStore } from '../support/stores.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { addInboxItems } from './support/inbox-world.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/tick-process.ts', import.meta.url));
let dir: string;
let server: ModelServer;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'subc-crash-'));
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function run(file: string, hang: boolean, onLine: (line: string, kill: () => void) => void): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, file, server.baseUrl, hang ? 'yes' : 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    let buf = '';
    child.stdout.on('data', (c: Buffer) => {
      buf += c.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        onLine(line, () => child.kill('SIGKILL'));
      }
    });
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => (signal === 'SIGKILL' || code === 0 ? resolve(code) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

it('a tick killed between reflect and commit resumes without calling the model again', async () => {
  const file = path.join(dir, 'subconscious.db');
  const store = await openProductStore({ sqliteFile: file });
  const state = new InstanceState(store.db, Date.now);
  await addInboxItems({ get: (k) => state.get('inbox', k), set: (k, v) => state.set('inbox', k, v) }, ['deploy failed', 'retry at 5']);
  await store.close();
  server.enqueue({ json: { summary: 'deploy needs a retry', important: [1] } });

  let sawCommit = false;
  await run(file, true, (line, kill) => {
    if (line === 'COMMITTING') {
      sawCommit = true;
      kill();
    }
  });
  expect(sawCommit).toBe(true);
  expect(server.chatRequests).toHaveLength(1);

  let outcome: { kind: string; resumed: boolean; commits: unknown[] } | undefined;
  await run(file, false, (line) => {
    if (line.startsWith('OUTCOME ')) outcome = JSON.parse(line.slice(8));
  });
  expect(outcome).toMatchObject({ kind: 'committed', resumed: true, commits: [{ summary: 'deploy needs a retry', important: [1] }] });
  // The finished reflect stage was not run again: still exactly one model request and one ledger row.
  expect(server.chatRequests).toHaveLength(1);
  const reopened = await openProductStore({ sqliteFile: file });
  try {
    const calls = await reopened.db.selectFrom('model_calls').selectAll().execute();
    expect(calls).toHaveLength(1);
    const after = new InstanceState(reopened.db, Date.now);
    expect(await after.get('inbox', 'baseline')).toBe(2);
    expect(await after.get('inbox', 'open_tick')).toBeNull();
    expect(await after.get('inbox', 'total_ticks')).toBe(1);
    // Retention: the finished tick's checkpoint rows are pruned.
    const threads = await reopened.db.selectFrom('graph_threads').selectAll().execute();
    expect(threads).toHaveLength(0);
  } finally {
    await reopened.close();
  }
});
