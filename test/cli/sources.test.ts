/**
 * Issue 21 item 2 in the CLI: `subconscious sources …` against a running daemon (from dist/),
 * each command one RPC call — add (tested first; a source that cannot be reached is refused
 * with the step that failed), list, pause, resume, sync, remove (saying what happens to the
 * documents), and test connection of a new source. A folder source keeps it on this machine.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemorySourceStatus } from '../../src/protocol/memory.js';
import { runCli } from '../support/cli.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';

const NO_MODEL = { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' };

describe('subconscious sources … through the daemon', () => {
  let daemon: TestDaemon;
  const cli = (...args: string[]) => runCli(['sources', ...args], daemon.workspace, NO_MODEL);
  const notes = () => daemon.rpc<MemorySourceStatus[]>('memory.sources').then((l) => l.find((s) => s.namespace === 'notes'));

  beforeAll(async () => {
    daemon = await startDaemon({ config: '[worlds.tasks]\nenabled = false\n[worlds.conscious]\nenabled = false\n', env: NO_MODEL });
    mkdirSync(path.join(daemon.workspace, 'notes'));
    writeFileSync(path.join(daemon.workspace, 'notes', 'renewal.md'), '# Initech renewal\n\nDecide by Friday.\n');
    writeFileSync(path.join(daemon.workspace, 'notes', 'garden.md'), '# Garden\n\nBuy compost.\n');
  }, 60_000);
  afterAll(async () => {
    await daemon?.dispose();
  });

  it('add, list, pause, resume, sync and remove a source; a source that cannot be reached is refused with what failed', { timeout: 120_000 }, async () => {
    const empty = await cli('list');
    expect(empty.code).toBe(0);
    expect(empty.out).toContain('No memory sources.');

    const refused = await cli('add', 'imap', 'work', 'host=127.0.0.1', 'port=9', 'tls=false', 'user=ada', 'password_env=SUBC_NO_SUCH_SECRET');
    expect(refused.code).not.toBe(0);
    expect(refused.out + refused.err).toMatch(/host|password_env|SUBC_NO_SUCH_SECRET/);
    expect(await daemon.rpc<MemorySourceStatus[]>('memory.sources')).toEqual([]);

    const tested = await cli('test', 'folder', 'notes', 'path=notes');
    expect(tested.out).toContain('ok: connection works');

    const added = await cli('add', 'folder', 'notes', 'path=notes', 'label=Team notes');
    expect(added.code, added.err).toBe(0);
    for (let i = 0; i < 100 && (await notes())?.documents !== 2; i++) await cli('sync', 'notes');
    expect(await notes()).toMatchObject({ kind: 'folder', documents: 2, paused: false });
    const listed = await cli('list');
    expect(listed.out).toMatch(/^notes \(folder, added\) ok: .*notes\n {2}documents: 2/m);

    expect((await cli('pause', 'notes')).code).toBe(0);
    expect(await notes()).toMatchObject({ paused: true });
    expect((await cli('list')).out).toMatch(/^notes \(folder, added\) paused/m);
    expect((await cli('resume', 'notes')).code).toBe(0);
    expect(await notes()).toMatchObject({ paused: false });

    const json = JSON.parse((await cli('list', '--json')).out) as MemorySourceStatus[];
    expect(json.map((s) => s.namespace)).toEqual(['notes']);

    const removed = await cli('remove', 'notes');
    expect(removed.code, removed.err).toBe(0);
    expect(removed.out).toMatch(/document/);
    expect(await notes()).toBeUndefined();
    expect((await daemon.rpc<{ documents: unknown[] }>('memory.list_documents', { namespace: 'notes' })).documents).toEqual([]);
  });
});
