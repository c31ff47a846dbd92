/**
 * Acceptance (issue 21): a daemon spawned from dist/ with an IMAP account on Dovecot, a CalDAV
 * calendar on Radicale and an MCP resource server (server-everything over stdio), plus a second
 * IMAP account with a wrong password. Their messages, events and resources are documents in
 * their namespaces; a new message appears once; an expunged one is a removal in the memory diff;
 * the wrong password shows on that source's status (with what to do and the next try) while the
 * others sync; the conscious run's prompt holds the mail's subject labelled as email and the
 * event labelled as calendar. Secrets come from the daemon's environment, never the TOML.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryDiffResult, MemorySourceStatus } from '../../src/protocol/memory.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { dovecotAvailable, startDovecot, type Dovecot } from '../support/dovecot.js';
import { scriptedModelEnv, startModelServer, type ModelServer } from '../support/model-server.js';
import { radicaleAvailable, startRadicale, type Radicale } from '../support/radicale.js';

const EVERYTHING = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
const ready = dovecotAvailable() && radicaleAvailable();

const mail = (n: number, subject: string) =>
  [
    `From: Sender ${n} <s${n}@example.com>`,
    'To: ada@example.com',
    `Subject: ${subject}`,
    'Date: Mon, 5 Jan 2026 09:30:00 +0000',
    `Message-ID: <m${n}@example.com>`,
    '',
    `Body of ${subject}.`,
    '',
  ].join('\r\n');
const utc = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < 250; i++) {
    last = await read();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
}

describe.runIf(ready)('a daemon with IMAP, CalDAV and MCP sources', () => {
  let imap: Dovecot;
  let dav: Radicale;
  let models: ModelServer;
  let daemon: TestDaemon;
  const sources = () => daemon.rpc<MemorySourceStatus[]>('memory.sources');
  const byNs = (list: MemorySourceStatus[], ns: string) => list.find((s) => s.namespace === ns)!;
  const titles = async (ns: string) =>
    (await daemon.rpc<{ documents: { title: string; source_kind: string }[] }>('memory.list_documents', { namespace: ns })).documents
      .map((d) => d.title)
      .sort();

  beforeAll(async () => {
    imap = await startDovecot({ users: { ada: 'secret', ben: 'secret' } });
    dav = await startRadicale({ users: { ada: 'secret' } });
    models = await startModelServer();
    models.handle(() => ({ json: [] }));
    await imap.append('ada', 'INBOX', mail(1, 'Invoice 2291 is overdue'));
    await imap.append('ada', 'INBOX', mail(2, 'Team lunch on Thursday'));
    const cal = await dav.mkcalendar('ada', 'work');
    const start = Date.now() + 86_400_000;
    await dav.put(
      'ada',
      cal,
      'board.ics',
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//subconscious//test//EN',
        'BEGIN:VEVENT',
        'UID:board',
        `DTSTAMP:${utc(Date.now())}`,
        `DTSTART:${utc(start)}`,
        `DTEND:${utc(start + 3_600_000)}`,
        'SUMMARY:Board meeting',
        'LOCATION:Room 4',
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n'),
    );
    const config = [
      '[worlds.tasks]',
      'enabled = false',
      '[worlds.heartbeat]',
      'enabled = false',
      '[worlds.steering]',
      'enabled = false',
      '[[worlds.memory.sources]]',
      'kind = "imap"',
      'namespace = "mail"',
      'label = "Work mail"',
      'host = "127.0.0.1"',
      `port = ${imap.port}`,
      'tls = false',
      'user = "ada"',
      'password_env = "SUBC_TEST_IMAP_PASSWORD"',
      'debounce_ms = 100',
      '[[worlds.memory.sources]]',
      'kind = "imap"',
      'namespace = "other-mail"',
      'host = "127.0.0.1"',
      `port = ${imap.port}`,
      'tls = false',
      'user = "ben"',
      'password_env = "SUBC_TEST_IMAP_WRONG"',
      'idle = false',
      '[[worlds.memory.sources]]',
      'kind = "caldav"',
      'namespace = "calendar"',
      `url = "${dav.url}/ada/"`,
      'user = "ada"',
      'password_env = "SUBC_TEST_IMAP_PASSWORD"',
      '[[worlds.memory.sources]]',
      'kind = "mcp"',
      'namespace = "docs"',
      `command = ${JSON.stringify(process.execPath)}`,
      `args = [${JSON.stringify(EVERYTHING)}, "stdio"]`,
      'include = ["demo://resource/static/document/features.md"]',
      '',
    ].join('\n');
    daemon = await startDaemon({
      config,
      env: { ...scriptedModelEnv(models), SUBC_TEST_IMAP_PASSWORD: 'secret', SUBC_TEST_IMAP_WRONG: 'wrong' },
    });
  }, 60_000);
  afterAll(async () => {
    await daemon?.dispose();
    await models?.close();
    await dav?.dispose();
    await imap?.dispose();
  });

  it('documents in their namespaces; a new message once; an expunge is a removal; a wrong password on its own status; the prompt labels email and calendar', async () => {
    const first = await until(sources, (l) => l.length === 4 && l.every((s) => s.last_sync !== null), 'every source synced');
    expect(byNs(first, 'mail')).toMatchObject({ kind: 'imap', documents: 2, last_sync: { error: null } });
    expect(byNs(first, 'calendar')).toMatchObject({ kind: 'caldav', documents: 1, last_sync: { error: null } });
    expect(byNs(first, 'docs')).toMatchObject({ kind: 'mcp', documents: 1, last_sync: { error: null } });
    const wrong = byNs(first, 'other-mail');
    expect(wrong).toMatchObject({
      documents: 0,
      failures: 1,
      last_sync: { failure: { kind: 'auth', message: expect.stringContaining('refused the login of ben') } },
    });
    expect(wrong.last_sync!.failure!.hint).toContain('password_env');
    expect(wrong.next_sync_at).toBeGreaterThan(Date.now());
    expect(await titles('mail')).toEqual(['Invoice 2291 is overdue', 'Team lunch on Thursday']);
    expect(await titles('calendar')).toEqual(['Board meeting']);
    expect(await titles('docs')).toEqual(['features.md']);

    // The memory world's baseline holds the first sync (its first tick is quiet: no model call).
    await daemon.rpc('subconscious.trigger', { world: 'memory' });
    await until(
      () => daemon.rpc<MemoryDiffResult>('memory.diff'),
      (d) => d.baseline !== null,
      'the memory baseline',
    );

    // A new message (IDLE starts the sync) appears once; an expunged one is a removal in the diff.
    await imap.append('ada', 'INBOX', mail(3, 'Contract renewal due Friday'));
    await until(
      () => titles('mail'),
      (t) => t.includes('Contract renewal due Friday'),
      'the new message',
    );
    await daemon.rpc('memory.sync', { namespace: 'mail' });
    const client = await imap.client('ada');
    const lock = await client.getMailboxLock('INBOX');
    await client.messageDelete('2', { uid: true });
    lock.release();
    await client.logout();
    await until(
      () => titles('mail'),
      (t) => !t.includes('Team lunch on Thursday'),
      'the expunge',
    );
    const mailDocs = await daemon.rpc<{ documents: { title: string }[] }>('memory.list_documents', { namespace: 'mail' });
    expect(mailDocs.documents.filter((d) => d.title === 'Contract renewal due Friday')).toHaveLength(1);
    const diff = await daemon.rpc<MemoryDiffResult>('memory.diff');
    const mailDiff = diff.sources.find((s) => s.namespace === 'mail')!;
    expect(mailDiff.entries.map((e) => `${e.change}:${e.title}`).sort()).toEqual(['added:Contract renewal due Friday', 'removed:Team lunch on Thursday']);

    // The wrong password still shows while the others synced.
    const later = await sources();
    expect(byNs(later, 'other-mail').last_sync!.failure!.kind).toBe('auth');
    expect(byNs(later, 'mail').last_sync!.error).toBeNull();

    // A conscious run: its prompt holds the mail's subject as email and the event as calendar.
    models.reset();
    models.handle(() => ({ json: [] }));
    await daemon.rpc('subconscious.trigger', { world: 'conscious' });
    const request = await until(
      () => Promise.resolve(models.chatRequests),
      (r) => r.length > 0,
      'the conscious model call',
    );
    const prompt = JSON.stringify(request[0]!.body);
    expect(prompt).toContain('Title: Invoice 2291 is overdue');
    expect(prompt).toMatch(/Title: Invoice 2291 is overdue[^"]*Kind: email/);
    expect(prompt).toMatch(/Title: Board meeting[^"]*Kind: calendar/);
  }, 120_000);
});
