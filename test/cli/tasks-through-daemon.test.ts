/**
 * `tasks …` prints the same thing whether a daemon answers or the command opens the store itself:
 * a rejected parameter is "title: must not be empty" (no RPC method name, no transport code), and
 * a task id may be given by its first characters. `start` says "stopped." once it has closed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';

// No model answers here: these commands need none, and ticks are skipped.
const noModel = { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' };

let workspace: string;
let daemon: TestDaemon;
const cli = (...args: string[]) => runCli(args, workspace, noModel);
/** Only the daemon can answer this: a command that opened the store itself would fail on this database. */
const throughDaemon = (...args: string[]) => runCli(args, workspace, { ...noModel, SUBCONSCIOUS_DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });

beforeAll(async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-through-'));
  daemon = await startDaemon({ workspace, env: noModel });
});
afterAll(async () => {
  await daemon.dispose();
  rmSync(workspace, { recursive: true, force: true });
});

describe('tasks commands with and without a running daemon', () => {
  it('print the same line for an empty title: the field and the reason', async () => {
    const through = await throughDaemon('tasks', 'add', '');
    expect(through.code).toBe(1);
    expect(through.err).toBe('subconscious: title: must not be empty [invalid_params]\n');

    const stopped = await daemon.stop();
    expect(stopped).toBe(0);
    const local = await cli('tasks', 'add', '');
    expect(local).toEqual(through);
    await daemon.restart();
  });

  it('accept a unique start of a task id through the daemon and without one; an ambiguous start lists the matches', async () => {
    const added = JSON.parse((await throughDaemon('tasks', 'add', 'Check the build status', '--json')).out) as { id: string };
    const start = added.id.slice(0, 8);
    const disabled = await throughDaemon('tasks', 'disable', start);
    expect(disabled.err).toBe('');
    expect(disabled.out).toBe(`disabled ${added.id}: Check the build status\n`);
    // Every id starts with "system:" for the system tasks: too many to pick one.
    const ambiguous = await throughDaemon('tasks', 'disable', 'system:');
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.err).toMatch(
      /^subconscious: "system:" starts 3 task ids: system:[a-z-]+ \(.+\), system:[a-z-]+ \(.+\), system:[a-z-]+ \(.+\) — type more of the id \[invalid_params\]\n$/,
    );
    const missing = await throughDaemon('tasks', 'remove', 'ffffffff');
    expect(missing.err).toMatch(/^subconscious: No task with id "ffffffff"\. .*\[not_found\]\n$/);

    expect(await daemon.stop()).toBe(0);
    const removed = await cli('tasks', 'remove', start);
    expect(removed.err).toBe('');
    expect(removed.out).toBe(`removed ${added.id}: Check the build status (undo: subconscious tasks restore ${added.id})\n`);
    expect(await cli('tasks', 'remove', 'ffffffff')).toEqual(missing);
    // A removal is undone by its full id, without a daemon too.
    expect((await cli('tasks', 'restore', added.id)).out).toBe(`restored ${added.id}: Check the build status\n`);
    await daemon.restart();
  });
});

describe('start', () => {
  it('says "stopped." after "stopping" once the daemon has closed, and exits 0', async () => {
    expect(await daemon.stop()).toBe(0);
    const output = daemon.output();
    const stopping = output.lastIndexOf('SIGTERM: stopping');
    expect(stopping).toBeGreaterThan(-1);
    expect(output.slice(stopping)).toMatch(/\nstopped\.\n$/); // the last thing it printed
  });
});

describe('--version', () => {
  it('prints the version from package.json', async () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const res = await cli('--version');
    expect(res).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });
});
