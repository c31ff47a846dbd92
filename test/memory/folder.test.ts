/**
 * The folder source on both dialects, on a real folder: create, change, delete and rename; a
 * corrupt `.eml` skipped with its reason while the rest syncs; a 500-message mbox; the cheap
 * path (stat only) when nothing changed; the racy-mtime guard; a missing folder; the watcher's
 * debounce on the fake clock; the sources manager and its config.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/core/index.js';
import { FolderSource, MemorySources, memorySourcesSchema } from '../../src/memory/index.js';
import { testDialects } from '../support/stores.js';
import { openMemory, type MemoryFixture } from './support.js';

const dialects = await testDialects();

/** A wall clock far after every file's mtime: no file counts as "just written" unless a test says so. */
const LATER = () => Date.now() + 3_600_000;

function email(subject: string, from: string, body: string, id?: string): string {
  return [`From: ${from}`, `Subject: ${subject}`, 'Date: Mon, 5 Jan 2026 09:30:00 +0000', ...(id ? [`Message-ID: <${id}>`] : []), '', body, ''].join('\r\n');
}

function mbox(n: number): string {
  const parts: string[] = [];
  for (let i = 1; i <= n; i++) {
    parts.push(
      `From sender${i}@example.com Mon Jan  5 09:30:00 2026\n${email(`Message ${i}`, `sender${i}@example.com`, `Body of message ${i}.\nFrom here on.`, `m${i}@example.com`).replace(/\r\n/g, '\n')}`,
    );
  }
  return parts.join('\n');
}

/** Give a file an mtime in the past, distinct per call, so a rewrite is always seen as a change. */
let tick = 0;
function age(file: string): void {
  const t = new Date(Date.UTC(2025, 0, 1) + ++tick * 1000);
  utimesSync(file, t, t);
}

describe.each(dialects)('folder source (%s)', (dialect) => {
  let f: MemoryFixture;
  let dir: string;
  let source: FolderSource;
  const write = (rel: string, text: string | Buffer) => {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, text);
    age(p);
  };
  const titles = async () => (await f.memory.listDocuments({ namespace: 'files', limit: 1000 })).documents.map((d) => `${d.external_id}=${d.title}`).sort();

  beforeEach(async () => {
    f = await openMemory(dialect);
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-folder-'));
    source = new FolderSource(
      { store: f.memory, db: f.db, clock: f.clock, log: silentLogger, emit: f.emit, fsNow: LATER },
      { namespace: 'files', root: dir, label: 'My files' },
    );
  });
  afterEach(async () => {
    source.unwatch();
    rmSync(dir, { recursive: true, force: true });
    await f.dispose();
  });

  it('follows new, changed, deleted and renamed files', async () => {
    write('plan.md', '# Garden plan\nPlant tomatoes.');
    write('todo.txt', 'buy milk');
    write('mail/invoice.eml', email('Invoice 2291 overdue', 'ACME Billing <billing@acme.test>', 'Please pay invoice 2291.', 'inv@acme.test'));
    write('.hidden/secret.md', '# hidden');
    write('image.png', 'not a document');
    const first = await source.sync();
    expect(first).toMatchObject({ files: 3, read: 3, parsed: 3, added: 3, modified: 0, removed: 0, renamed: 0, skipped: [], error: null });
    expect(await titles()).toEqual(['mail/invoice.eml=Invoice 2291 overdue', 'plan.md=Garden plan', 'todo.txt=todo']);
    const invoice = await f.memory.getDocument('files', 'mail/invoice.eml');
    expect(invoice).toMatchObject({
      source_kind: 'email',
      metadata: {
        path: 'mail/invoice.eml',
        format: 'eml',
        from: 'ACME Billing <billing@acme.test>',
        from_address: 'billing@acme.test',
        date: '2026-01-05T09:30:00.000Z',
      },
    });
    expect((await f.memory.namespaces())[0]).toMatchObject({ namespace: 'files', label: 'My files', kind: 'folder', documents: 3 });
    expect((await f.memory.namespaces())[0]!.last_sync_at).toBe(f.clock.now());
    const plan = (await f.memory.getDocument('files', 'plan.md'))!;

    // Changed content; a touched but identical file is read and hashed, not parsed.
    write('plan.md', '# Garden plan\nPlant tomatoes and basil.');
    write('todo.txt', 'buy milk');
    const second = await source.sync();
    expect(second).toMatchObject({ read: 2, parsed: 1, added: 0, modified: 1, removed: 0 });
    expect((await f.memory.getDocument('files', 'plan.md'))!.body).toContain('basil');

    // Deleted.
    unlinkSync(path.join(dir, 'todo.txt'));
    expect(await source.sync()).toMatchObject({ read: 0, removed: 1 });
    expect(await titles()).toEqual(['mail/invoice.eml=Invoice 2291 overdue', 'plan.md=Garden plan']);

    // Renamed (into another folder): the same document, with its new path.
    mkdirSync(path.join(dir, 'garden'));
    renameSync(path.join(dir, 'plan.md'), path.join(dir, 'garden', 'plan-2026.md'));
    const renamed = await source.sync();
    expect(renamed).toMatchObject({ renamed: 1, added: 0, modified: 1, removed: 0 });
    const moved = (await f.memory.getDocument('files', 'garden/plan-2026.md'))!;
    expect(moved.id).toBe(plan.id);
    expect(moved.metadata).toMatchObject({ path: 'garden/plan-2026.md' });
    expect(await titles()).toEqual(['garden/plan-2026.md=Garden plan', 'mail/invoice.eml=Invoice 2291 overdue']);
    expect(f.events.filter((e) => e.type === 'memory.synced')).toHaveLength(4);
  });

  it('is cheap when nothing changed: stat only, no read, no write, no change', async () => {
    for (let i = 0; i < 20; i++) write(`n${i}.md`, `# Note ${i}\nbody ${i}`);
    await source.sync();
    const head = await f.memory.head();
    const again = await source.sync();
    expect(again).toMatchObject({ files: 20, read: 0, parsed: 0, added: 0, modified: 0, removed: 0, unchanged: 0 });
    expect(await f.memory.head()).toBe(head);
  });

  it('hashes a just-written file again at the next sync, so a same-size rewrite in the same tick is not missed', async () => {
    const racy = new FolderSource({ store: f.memory, db: f.db, clock: f.clock, log: silentLogger }, { namespace: 'files', root: dir });
    const p = path.join(dir, 'fast.txt');
    writeFileSync(p, 'AAAA');
    const { mtime } = statSync(p);
    await racy.sync();
    writeFileSync(p, 'BBBB'); // same size; give it the very same mtime
    utimesSync(p, mtime, mtime);
    expect(await racy.sync()).toMatchObject({ read: 1, parsed: 1, modified: 1 });
    expect((await f.memory.getDocument('files', 'fast.txt'))!.body).toBe('BBBB');
  });

  it('skips a corrupt .eml with its reason, and the rest of the folder still syncs', async () => {
    write('good.eml', email('Fine', 'a@example.com', 'ok'));
    write('broken.eml', 'this is not an email at all\nno headers here\n');
    write('bad-b64.eml', 'From: a@example.com\r\nSubject: b\r\nContent-Transfer-Encoding: base64\r\n\r\n@@@@\r\n');
    write('note.md', '# Still here');
    const warn = vi.fn();
    const logged = new FolderSource(
      { store: f.memory, db: f.db, clock: f.clock, log: { ...silentLogger, warn } as unknown as typeof silentLogger, fsNow: LATER },
      { namespace: 'files', root: dir },
    );
    const result = await logged.sync();
    expect(result.skipped).toEqual([
      { path: 'bad-b64.eml', reason: expect.stringMatching(/invalid base64/) },
      { path: 'broken.eml', reason: expect.stringMatching(/line 1 of the header block is not a "Name: value" header/) },
    ]);
    expect(result).toMatchObject({ files: 4, parsed: 2, added: 2, error: null });
    expect(await titles()).toEqual(['good.eml=Fine', 'note.md=Still here']);
    expect(warn).toHaveBeenCalledWith(expect.objectContaining({ path: 'broken.eml', reason: expect.any(String) }), 'memory source skipped a file');
    expect(await logged.skippedFiles()).toEqual(result.skipped);
    // Unchanged, it is not read again; fixed, it syncs.
    expect((await logged.sync()).skipped).toEqual([]);
    write('broken.eml', email('Repaired', 'b@example.com', 'now fine'));
    expect(await logged.sync()).toMatchObject({ added: 1, skipped: [] });
    expect(await logged.skippedFiles()).toEqual([{ path: 'bad-b64.eml', reason: expect.any(String) }]);
  });

  it('imports an mbox of 500 messages as 500 documents, and follows a message removed from it', async () => {
    write('archive.mbox', mbox(500));
    const result = await source.sync();
    expect(result).toMatchObject({ added: 500, skipped: [] });
    const list = await f.memory.listDocuments({ namespace: 'files', limit: 1000 });
    expect(list.total).toBe(500);
    expect(list.documents).toHaveLength(500);
    expect(new Set(list.documents.map((d) => d.external_id)).size).toBe(500);
    expect(await f.memory.getDocument('files', 'archive.mbox#m42@example.com')).toMatchObject({ title: 'Message 42', metadata: { format: 'mbox' } });
    expect((await f.memory.getDocument('files', 'archive.mbox#m42@example.com'))!.body).toContain('Body of message 42.\nFrom here on.');

    write('archive.mbox', mbox(500).replace(/From sender42@[\s\S]*?(?=From sender43@)/, ''));
    expect(await source.sync()).toMatchObject({ added: 0, modified: 0, removed: 1, unchanged: 499 });
    expect(await f.memory.getDocument('files', 'archive.mbox#m42@example.com')).toMatchObject({ deleted_at: expect.any(Number) });
  });

  it('a missing folder is an error for the sync and deletes nothing', async () => {
    write('a.md', '# A');
    await source.sync();
    rmSync(dir, { recursive: true, force: true });
    const result = await source.sync();
    expect(result.error).toMatch(/cannot read the folder/);
    expect(result.removed).toBe(0);
    expect(await titles()).toEqual(['a.md=A']);
    expect((await f.memory.namespaces())[0]!.last_error).toMatch(/cannot read the folder/);
  });

  it('watches the folder and syncs once after the debounce, on the injected clock', async () => {
    await source.sync();
    const stop = source.watch();
    writeFileSync(path.join(dir, 'watched.md'), '# Watched');
    await vi.waitFor(() => expect(source.pending).toBe(true), { timeout: 5_000, interval: 20 });
    await f.clock.advance(1_000);
    expect(await titles()).toEqual([]); // still debouncing
    await f.clock.advance(1_500);
    await vi.waitFor(async () => expect(await titles()).toEqual(['watched.md=Watched']), { timeout: 5_000, interval: 20 });
    expect(source.pending).toBe(false);
    stop();
  });

  it('concurrent sync calls share one more sync instead of overlapping', async () => {
    write('a.md', '# A');
    const [a, b, c] = await Promise.all([source.sync(), source.sync(), source.sync()]);
    expect(a.added).toBe(1);
    expect(b).toBe(c);
    expect(b.added).toBe(0);
  });

  it('MemorySources: config defaults, namespaces registered at start, periodic syncs on the clock', async () => {
    const config = memorySourcesSchema.parse([{ kind: 'folder', path: dir, namespace: 'files', label: 'Files', watch: false }]);
    expect(config[0]).toMatchObject({ recursive: true, debounce_ms: 2000, sync_interval_minutes: 15, max_file_mb: 256 });
    const sources = new MemorySources({ store: f.memory, db: f.db, clock: f.clock, log: silentLogger, workspace: os.tmpdir(), sources: config, fsNow: LATER });
    write('one.md', '# One');
    await sources.start();
    await vi.waitFor(async () => expect(await titles()).toEqual(['one.md=One']), { timeout: 5_000, interval: 20 });
    write('two.md', '# Two');
    await f.clock.advance(15 * 60_000);
    await vi.waitFor(async () => expect(await titles()).toEqual(['one.md=One', 'two.md=Two']), { timeout: 5_000, interval: 20 });
    await sources.stop();
  });
});

describe('memory sources config', () => {
  it('names the key and the reason', () => {
    const bad = memorySourcesSchema.safeParse([
      { kind: 'folder', path: '', namespace: 'bad ns' },
      { kind: 'dropbox', path: '/c', namespace: 'y' },
      { kind: 'folder', path: '/d', namespace: 'z', debounce: 5 },
    ]);
    expect(bad.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      '0.path: must name a folder',
      expect.stringMatching(/^0\.namespace: must be 1–64 letters/),
      '1.kind: kind must be "folder", "imap", "ics", "caldav" or "mcp"',
      '2: Unrecognized key: "debounce"',
    ]);
    const twice = memorySourcesSchema.safeParse([
      { kind: 'folder', path: '/a', namespace: 'x' },
      { kind: 'folder', path: '/b', namespace: 'x' },
    ]);
    expect(twice.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      '1.namespace: "x" is used by another source: one namespace per source',
    ]);
  });
});
