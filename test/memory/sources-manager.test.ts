/**
 * Sources managed like accounts, over the RPC handlers (the daemon's own), on a real Radicale and
 * a folder: add validated and tested (a wrong password refused with what failed; force adds it
 * anyway, and its status says so while the folder keeps syncing), pause and resume, resync,
 * remove saying what happens to the documents, kept across a restart in memory-sources.json
 * (which holds no secret). A source from subconscious.toml cannot be removed, only paused.
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/index.js';
import { MemorySources, memorySourcesHandlers, memorySourcesSchema } from '../../src/memory/index.js';
import { radicaleAvailable, startRadicale, type Radicale } from '../support/radicale.js';
import { openMemory, type MemoryFixture } from './support.js';

const haveRadicale = radicaleAvailable();
const event = (uid: string, summary: string) =>
  [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//subconscious//test//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20260101T000000Z',
    'DTSTART:20260110T080000Z',
    'DTEND:20260110T090000Z',
    `SUMMARY:${summary}`,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');

describe.runIf(haveRadicale)('memory sources managed like accounts', () => {
  let dav: Radicale;
  let f: MemoryFixture;
  let workspace: string;
  let sources: MemorySources;
  let rpc: ReturnType<typeof memorySourcesHandlers>;
  const open = () => {
    sources = new MemorySources({
      store: f.memory,
      db: f.db,
      clock: f.clock,
      log: silentLogger,
      emit: f.emit,
      workspace,
      sources: memorySourcesSchema.parse([{ kind: 'folder', namespace: 'notes', path: 'notes', watch: false }]),
    });
    rpc = memorySourcesHandlers(sources);
  };
  const call = <K extends keyof typeof rpc>(name: K, params: Parameters<(typeof rpc)[K]>[0]) =>
    (rpc[name] as (p: typeof params) => ReturnType<(typeof rpc)[K]>)(params);
  const caldav = (password_env: string) => ({ kind: 'caldav', namespace: 'cal', url: `${dav.url}/ada/`, user: 'ada', password_env });
  const status = async (ns: string) => (await sources.status()).find((s) => s.namespace === ns)!;

  beforeAll(async () => {
    dav = await startRadicale({ users: { ada: 'secret' } });
    const cal = await dav.mkcalendar('ada', 'work');
    await dav.put('ada', cal, 'review.ics', event('review', 'Quarterly review'));
    process.env.SUBC_TEST_CALDAV_GOOD = 'secret';
    process.env.SUBC_TEST_CALDAV_BAD = 'wrong';
  }, 30_000);
  afterAll(async () => dav?.dispose());
  beforeEach(async () => {
    f = await openMemory('sqlite');
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-sources-'));
    mkdirSync(path.join(workspace, 'notes'));
    writeFileSync(path.join(workspace, 'notes', 'plan.md'), '# Garden plan\n\nPlant tomatoes in May.\n');
    open();
    await sources.start();
    await sources.ready();
  });
  afterEach(async () => {
    await sources.stop();
    await f.dispose();
  });

  it('add: tested first (a wrong password is refused with what failed); force adds it and its status says what to do while the folder syncs', async () => {
    expect(await call('memory.sources_test', { source: caldav('SUBC_TEST_CALDAV_BAD') })).toMatchObject({ ok: false, failure: { kind: 'auth' } });
    await expect(call('memory.sources_add', { source: caldav('SUBC_TEST_CALDAV_BAD') })).rejects.toMatchObject({
      code: 'source_unreachable',
      message: expect.stringContaining('failed its test connection (auth)'),
      hint: expect.stringContaining('force: true'),
    });
    await expect(call('memory.sources_add', { source: { kind: 'caldav', namespace: 'cal', url: 'x', user: 'a', password: 'p' } })).rejects.toMatchObject({
      code: 'invalid_params',
    });
    expect((await sources.status()).map((s) => s.namespace)).toEqual(['notes']);

    const forced = await call('memory.sources_add', { source: caldav('SUBC_TEST_CALDAV_BAD'), force: true });
    expect(forced.failure).toMatchObject({ kind: 'auth' });
    await sources.get('cal')!.idle();
    const bad = await status('cal');
    expect(bad).toMatchObject({ origin: 'added', failures: 1, last_sync: { failure: { kind: 'auth', hint: expect.stringContaining('password_env') } } });
    expect(bad.next_sync_at).toBe(f.clock.now() + 30_000);
    // The other source keeps syncing.
    writeFileSync(path.join(workspace, 'notes', 'more.md'), '# More\n\nWater the herbs.\n');
    expect(await call('memory.sync', { namespace: 'notes' })).toMatchObject({ started: ['notes'] });
    await sources.get('notes')!.idle();
    expect(await status('notes')).toMatchObject({ documents: 2, failures: 0, last_sync: { added: 1, error: null } });
    await call('memory.sources_remove', { namespace: 'cal' });
  });

  it('pause, resume, resync and remove (documents deleted or kept); added sources survive a restart without a secret in the file', async () => {
    expect(await call('memory.sources_add', { source: caldav('SUBC_TEST_CALDAV_GOOD') })).toMatchObject({ namespace: 'cal', failure: null });
    await sources.get('cal')!.idle();
    expect(await status('cal')).toMatchObject({ documents: 1, paused: false, last_sync: { added: 1 } });
    const file = path.join(workspace, '.subconscious', 'memory-sources.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).not.toContain('secret');

    expect(await call('memory.sources_pause', { namespace: 'cal', paused: true })).toMatchObject({ message: expect.stringContaining('its documents stay') });
    expect(await status('cal')).toMatchObject({ paused: true, next_sync_at: null, documents: 1 });
    expect(() => call('memory.sync', { namespace: 'cal' })).toThrow(/paused/);

    // A restart: the added source comes back, still paused.
    await sources.stop();
    open();
    await sources.start();
    await sources.ready();
    expect(await status('cal')).toMatchObject({ origin: 'added', paused: true });
    await call('memory.sources_pause', { namespace: 'cal', paused: false });
    await sources.get('cal')!.idle();
    expect(await status('cal')).toMatchObject({ paused: false, last_sync: { error: null } });

    await call('memory.sources_resync', { namespace: 'cal' });
    await sources.get('cal')!.idle();
    expect(await status('cal')).toMatchObject({ documents: 1, last_sync: { added: 0, removed: 0 } });

    await expect(call('memory.sources_remove', { namespace: 'notes' })).rejects.toMatchObject({
      code: 'forbidden',
      hint: expect.stringContaining('[[worlds.memory.sources]]'),
    });
    const checkpoint = await f.memory.createCheckpoint('test');
    expect(await call('memory.sources_remove', { namespace: 'cal' })).toMatchObject({
      removed_documents: 1,
      message: expect.stringContaining('removals in the memory diff'),
    });
    const diff = await f.memory.diffSinceCheckpoint(checkpoint.id);
    expect(diff.namespaces.find((n) => n.namespace === 'cal')!.entries).toMatchObject([{ change: 'removed', title: 'Quarterly review' }]);
    expect((await sources.status()).map((s) => s.namespace)).toEqual(['notes']);

    await call('memory.sources_add', { source: { ...caldav('SUBC_TEST_CALDAV_GOOD'), namespace: 'cal2' } });
    await sources.get('cal2')!.idle();
    expect(await call('memory.sources_remove', { namespace: 'cal2', keep_documents: true })).toMatchObject({ kept_documents: 1, removed_documents: 0 });
    expect((await f.memory.listDocuments({ namespace: 'cal2' })).total).toBe(1);
  });
});
