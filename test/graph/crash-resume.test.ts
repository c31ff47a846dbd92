/**
 * A real crash: a child process runs a graph on a SQLite file and is killed with SIGKILL inside
 * its third node; a second process resumes the thread. The nodes that finished before the kill
 * must not run again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/index.js';
import { StoreCheckpointer } from '../../src/graph/index.js';
import { openProductStore } from '../support/stores.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const fixture = path.join(here, 'fixtures', 'crash-run.ts');

function runChild(args: string[]): { child: ChildProcess; stdout: () => string; stderr: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  return { child, stdout: () => out, stderr: () => err };
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Resolves when the child prints READY; rejects (with its stderr) if it exits first. */
function ready(run: ReturnType<typeof runChild>): Promise<void> {
  return new Promise((resolve, reject) => {
    const onData = () => {
      if (run.stdout().includes('READY\n')) {
        run.child.stdout?.off('data', onData);
        resolve();
      }
    };
    run.child.stdout?.on('data', onData);
    run.child.once('exit', (code, signal) => reject(new Error(`child exited (${code ?? signal}) before READY: ${run.stderr()}`)));
  });
}

describe('crash and resume across processes (SQLite file)', () => {
  let dir: string;
  const children: ChildProcess[] = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-graph-crash-'));
  });
  afterEach(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('a process killed with SIGKILL inside node 3 resumes in a new process without re-running nodes 1-2', async () => {
    const db = path.join(dir, 'graph.db');
    const log = path.join(dir, 'executions.log');

    const first = runChild([db, log, 'crash']);
    children.push(first.child);
    await ready(first);
    first.child.kill('SIGKILL');
    expect(await exited(first.child)).toEqual({ code: null, signal: 'SIGKILL' });

    // What the killed process left behind, seen from outside.
    const inspect = await openProductStore({ sqliteFile: db });
    try {
      const cp = new StoreCheckpointer(inspect.db, systemClock);
      expect(await cp.load('tick-1')).toMatchObject({ graph: 'crash-tick', status: 'running', next: 'reflect', seq: 2 });
      expect((await cp.checkpoints('tick-1')).map((c) => c.node)).toEqual(['plan', 'gather']);
      expect((await cp.unfinished('crash-tick')).map((t) => t.threadId)).toEqual(['tick-1']);
    } finally {
      await inspect.close();
    }

    const second = runChild([db, log, 'resume']);
    children.push(second.child);
    const exit = await exited(second.child);
    expect(exit, second.stderr()).toEqual({ code: 0, signal: null });
    const line = second
      .stdout()
      .split('\n')
      .find((l) => l.startsWith('RESULT '));
    expect(line, second.stdout()).toBeDefined();
    const result = JSON.parse((line as string).slice('RESULT '.length)) as { resumed: boolean; executed: string[]; steps: number; state: unknown };
    expect(result).toMatchObject({ resumed: true, executed: ['reflect', 'commit'], steps: 4 });
    expect(result.state).toEqual({
      window: { from: 1, to: 2 },
      plan: ['mail', 'calendar'],
      gathered: [
        { source: 'mail', items: [0, 1] },
        { source: 'calendar', items: [1, 2] },
      ],
      reflection: '2 sources reviewed',
      committed: true,
    });

    const executions = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    const pid1 = String(first.child.pid);
    const pid2 = String(second.child.pid);
    expect(executions).toEqual([
      ['plan', pid1],
      ['gather', pid1],
      ['reflect', pid1],
      ['reflect', pid2],
      ['commit', pid2],
    ]);

    const after = await openProductStore({ sqliteFile: db });
    try {
      const cp = new StoreCheckpointer(after.db, systemClock);
      expect(await cp.load('tick-1')).toMatchObject({ status: 'finished', next: null, seq: 4 });
      expect((await cp.checkpoints('tick-1')).map((c) => c.node)).toEqual(['plan', 'gather', 'reflect', 'commit']);
      expect(await cp.unfinished('crash-tick')).toEqual([]);
    } finally {
      await after.close();
    }
  });
});
