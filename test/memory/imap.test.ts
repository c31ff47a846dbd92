/**
 * The IMAP source against a real Dovecot started by this file (test/support/dovecot.ts), on both
 * dialects: first sync (body, text attachment, a malformed message skipped with its reason, a huge
 * body cut and said), incremental sync by UID (a new message appears once), an expunged message
 * becomes a removal in the memory diff, UIDVALIDITY renumbering, IDLE, bounded batches, a wrong
 * password and a server that is down (clear status, backoff, the other source keeps syncing), and
 * the config's secret rules.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it } from 'vitest';
import { flush, silentLogger } from '../../src/core/index.js';
import { ImapSource, MemorySources, memorySourcesSchema, RETRY_MIN_MS, type ImapSourceOptions } from '../../src/memory/index.js';
import { dovecotAvailable, freePort, startDovecot, type Dovecot } from '../support/dovecot.js';
import { testDialects } from '../support/stores.js';
import { openMemory, type MemoryFixture } from './support.js';

const dialects = await testDialects();
const haveDovecot = dovecotAvailable();

function message(n: number, extra: { subject?: string; body?: string; attachment?: string } = {}): string {
  const subject = extra.subject ?? `Message ${n}`;
  const body = extra.body ?? `Body of message ${n}.`;
  if (!extra.attachment)
    return [
      `From: Sender ${n} <s${n}@example.com>`,
      'To: ada@example.com',
      `Subject: ${subject}`,
      'Date: Mon, 5 Jan 2026 09:30:00 +0000',
      `Message-ID: <m${n}@example.com>`,
      '',
      body,
      '',
    ].join('\r\n');
  return [
    `From: Sender ${n} <s${n}@example.com>`,
    `Subject: ${subject}`,
    'Date: Mon, 5 Jan 2026 09:30:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
    '--b1',
    'Content-Type: text/csv; name="budget.csv"',
    'Content-Disposition: attachment; filename="budget.csv"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from(extra.attachment).toString('base64'),
    '--b1',
    'Content-Type: application/pdf; name="scan.pdf"',
    'Content-Disposition: attachment; filename="scan.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 binary').toString('base64'),
    '--b1--',
    '',
  ].join('\r\n');
}

describe.runIf(haveDovecot).each(dialects)('imap source on Dovecot (%s)', (dialect) => {
  let imap: Dovecot;
  let f: MemoryFixture;
  let user: string;
  let seq = 0;
  const opts = (over: Partial<ImapSourceOptions> = {}): ImapSourceOptions => ({
    namespace: 'mail',
    label: 'Work mail',
    host: imap.host,
    port: imap.port,
    tls: false,
    tlsVerify: true,
    user,
    auth: 'password',
    secret: () => 'secret',
    folders: ['INBOX'],
    debounceMs: 500,
    batchSize: 200,
    maxMessageBytes: 25 * 1024 * 1024,
    maxBodyChars: 5_000,
    ...over,
  });
  const source = (over: Partial<ImapSourceOptions> = {}) =>
    new ImapSource({ store: f.memory, db: f.db, clock: f.clock, log: silentLogger, emit: f.emit }, opts(over));
  const docs = async (ns = 'mail') => (await f.memory.listDocuments({ namespace: ns, limit: 1000 })).documents;

  beforeAll(async () => {
    const users: Record<string, string> = {};
    for (let i = 0; i < 12; i++) users[`u${dialect}${i}`] = 'secret';
    imap = await startDovecot({ users });
  }, 30_000);
  afterAll(async () => imap?.dispose());
  beforeEach(async () => {
    f = await openMemory(dialect);
    user = `u${dialect}${seq++}`;
  });
  afterEach(async () => f.dispose());

  it('first sync: body, text attachment, malformed message skipped with its reason, huge body cut and said; a second sync changes nothing', async () => {
    await imap.append(user, 'INBOX', message(1, { subject: 'Budget review', body: 'Please look at the numbers.', attachment: 'item,cost\nrent,1200\n' }));
    await imap.append(user, 'INBOX', 'this is not an email at all\r\n');
    await imap.append(user, 'INBOX', message(3, { subject: 'A long one', body: 'word '.repeat(3_000) }));
    const s = source();
    const first = await s.sync();
    expect(first.error).toBeNull();
    expect(first).toMatchObject({ files: 3, read: 3, added: 2 });
    expect(first.skipped).toEqual([{ path: 'INBOX#2', reason: expect.stringContaining('not an email') }]);
    expect(await s.skippedCount()).toBe(1);

    const budget = await f.memory.getDocument('mail', 'INBOX#1');
    expect(budget).toMatchObject({ title: 'Budget review', source_kind: 'email' });
    expect(budget!.body).toContain('From: Sender 1 <s1@example.com>');
    expect(budget!.body).toContain('Please look at the numbers.');
    expect(budget!.body).toContain('--- Attachment: budget.csv ---\nitem,cost\nrent,1200');
    expect(budget!.body).not.toContain('PDF');
    expect(budget!.metadata).toMatchObject({ folder: 'INBOX', uid: 1, attachments: ['budget.csv', 'scan.pdf'], subject: 'Budget review' });

    const long = await f.memory.getDocument('mail', 'INBOX#3');
    expect(long!.body).toMatch(/\[cut: the text was \d+ characters; cut at 5000 \(max_body_chars\)\]$/);
    expect(long!.metadata.cut).toContain('max_body_chars');

    const ns = (await f.memory.namespaces()).find((n) => n.namespace === 'mail');
    expect(ns).toMatchObject({ label: 'Work mail', kind: 'imap', documents: 2 });

    const again = await s.sync();
    expect(again).toMatchObject({ added: 0, modified: 0, removed: 0, read: 0, error: null });
  });

  it('a new message appears once; an expunged one is a removal in the memory diff', async () => {
    await imap.append(user, 'INBOX', message(1));
    await imap.append(user, 'INBOX', message(2));
    const s = source();
    await s.sync();
    const checkpoint = await f.memory.createCheckpoint('test');

    await imap.append(user, 'INBOX', message(3, { subject: 'Fresh news' }));
    expect(await s.sync()).toMatchObject({ added: 1, read: 1 });
    expect(await s.sync()).toMatchObject({ added: 0, read: 0 });

    const client = await imap.client(user);
    const lock = await client.getMailboxLock('INBOX');
    await client.messageDelete('1', { uid: true });
    lock.release();
    expect(await s.sync()).toMatchObject({ removed: 1, added: 0 });
    expect((await docs()).map((d) => d.external_id).sort()).toEqual(['INBOX#2', 'INBOX#3']);

    const diff = await f.memory.diffSinceCheckpoint(checkpoint.id);
    const mail = diff.namespaces.find((n) => n.namespace === 'mail')!;
    // Message 1 existed before the checkpoint: its expunge is the removal the memory world sees.
    expect(mail.entries.map((e) => `${e.change}:${e.title}`).sort()).toEqual(['added:Fresh news', 'removed:Message 1']);
  });

  it('a renumbered folder (new UIDVALIDITY) is read again; documents of vanished UIDs are removed', async () => {
    const client = await imap.client(user);
    await client.mailboxCreate('Work');
    await imap.append(user, 'Work', message(1, { subject: 'Old one' }));
    await imap.append(user, 'Work', message(2, { subject: 'Old two' }));
    const s = source({ folders: ['Work'] });
    expect(await s.sync()).toMatchObject({ added: 2 });

    await client.mailboxDelete('Work');
    await client.mailboxCreate('Work');
    await imap.append(user, 'Work', message(3, { subject: 'New one' }));
    const r = await s.sync();
    expect(r.error).toBeNull();
    expect((await docs()).map((d) => `${d.external_id}=${d.title}`)).toEqual(['Work#1=New one']);
    expect(r).toMatchObject({ removed: 1, modified: 1 });
  });

  it('a large folder syncs in bounded batches, recording its high-water mark after each', async () => {
    for (let i = 1; i <= 7; i++) await imap.append(user, 'INBOX', message(i));
    const s = source({ batchSize: 3 });
    const progress: unknown[] = [];
    const done = s.sync();
    // The batches show on the status as they go; the last one says 7 of 7.
    for (let i = 0; i < 200 && s.syncing; i++) {
      if (s.progress) progress.push(s.progress);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await done).toMatchObject({ added: 7, error: null });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toMatchObject({ part: 'INBOX', total: 7 });
    const state = await f.db.selectFrom('memory_source_files').selectAll().where('namespace', '=', 'mail').where('path', '=', 'INBOX').executeTakeFirst();
    expect(Number(state!.mtime_ms)).toBe(7);
    expect(s.progress).toBeNull();
    // An open page hears it too, at most once every half second: the fake clock never moved, so once.
    const said = f.events.filter((e) => e.type === 'memory.sync_progress').map((e) => e.data);
    expect(said).toEqual([{ namespace: 'mail', part: 'INBOX', done: 0, total: 7 }]);
  });

  it('IDLE: new mail starts a sync after the debounce', async () => {
    const s = source();
    await s.sync();
    s.watch();
    for (let i = 0; i < 200 && !s.watching; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.watching).toBe(true);
    // Let the IDLE command reach the server before the new mail does.
    await new Promise((r) => setTimeout(r, 200));
    const before = f.clock.pending;
    await imap.append(user, 'INBOX', message(9, { subject: 'Pushed by IDLE' }));
    for (let i = 0; i < 500 && f.clock.pending === before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(f.clock.pending).toBeGreaterThan(before);
    await f.clock.advance(500);
    await flush();
    await s.idle();
    expect((await docs()).map((d) => d.title)).toContain('Pushed by IDLE');
    s.unwatch();
  });

  it('a wrong password and a server that is down: clear statuses with backoff; the other source keeps syncing', async () => {
    await imap.append(user, 'INBOX', message(1, { subject: 'Still arrives' }));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-imap-'));
    writeFileSync(path.join(dir, 'good'), 'secret\n');
    writeFileSync(path.join(dir, 'bad'), 'wrong\n');
    const down = await freePort();
    const base = { kind: 'imap', host: imap.host, port: imap.port, tls: false, user, idle: false };
    const config = memorySourcesSchema.parse([
      { ...base, namespace: 'bad', password_file: path.join(dir, 'bad') },
      { ...base, namespace: 'down', port: down, password_file: path.join(dir, 'good') },
      { ...base, namespace: 'good', password_file: path.join(dir, 'good') },
    ]);
    const sources = new MemorySources({ store: f.memory, db: f.db, clock: f.clock, log: silentLogger, workspace: dir, sources: config });
    await sources.start();
    await sources.ready();
    await flush();
    const status = Object.fromEntries((await sources.status()).map((s) => [s.namespace, s]));
    expect(status.good!.last_sync).toMatchObject({ added: 1, error: null, failure: null });
    expect(status.bad!.last_sync!.failure).toMatchObject({ kind: 'auth', message: expect.stringContaining(`refused the login of ${user}`) });
    expect(status.bad!.last_sync!.failure!.hint).toContain('password_file');
    expect(status.down!.last_sync!.failure).toMatchObject({ kind: 'host', message: expect.stringContaining(`cannot reach 127.0.0.1:${down}`) });
    expect(status.down!.failures).toBe(1);
    expect(status.down!.next_sync_at).toBe(f.clock.now() + RETRY_MIN_MS);
    expect(status.good!.next_sync_at).toBe(f.clock.now() + 15 * 60_000);
    expect((await docs('good')).map((d) => d.title)).toEqual(['Still arrives']);
    expect((await f.memory.namespaces()).find((n) => n.namespace === 'bad')!.last_error).toContain('refused the login');

    // The retry after 30 s fails again: the next waits twice as long.
    await f.clock.advance(RETRY_MIN_MS);
    for (let i = 0; i < 500 && (await sources.status()).find((s) => s.namespace === 'down')!.failures < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const later = (await sources.status()).find((s) => s.namespace === 'down')!;
    expect(later.failures).toBe(2);
    expect(later.next_sync_at).toBe(f.clock.now() + 2 * RETRY_MIN_MS);
    await sources.stop();
  });

  it('test connection says which step failed: authentication, host, folder', async () => {
    expect(await source().testConnection()).toBeNull();
    expect(await source({ secret: () => 'nope' }).testConnection()).toMatchObject({ kind: 'auth' });
    expect(await source({ port: await freePort() }).testConnection()).toMatchObject({ kind: 'host' });
    expect(await source({ folders: ['INBOX', 'Nowhere'] }).testConnection()).toMatchObject({ kind: 'folder', message: expect.stringContaining('"Nowhere"') });
  });
});

describe('imap source config', () => {
  const base = { kind: 'imap', namespace: 'gmail', host: 'imap.gmail.com', user: 'ada@gmail.com' };
  it('takes the secret from an env var or a file, never from the TOML', () => {
    expect(memorySourcesSchema.parse([{ ...base, password_env: 'GMAIL_PASSWORD' }])[0]).toMatchObject({
      tls: true,
      folders: ['INBOX'],
      idle: true,
      batch_size: 200,
    });
    const plain = memorySourcesSchema.safeParse([{ ...base, password: 'hunter2' }]);
    expect(plain.success).toBe(false);
    expect(JSON.stringify(plain.error!.issues)).toContain('never written in subconscious.toml');
    const none = memorySourcesSchema.safeParse([base]);
    expect(JSON.stringify(none.error!.issues)).toContain('exactly one of password_env or password_file');
    const both = memorySourcesSchema.safeParse([{ ...base, password_env: 'A', password_file: '/x' }]);
    expect(both.success).toBe(false);
  });
});
