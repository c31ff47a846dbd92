/**
 * The Memory tab shows a source's import progress while a large sync runs, in real Chromium
 * against the real daemon: a 10,000-message INBOX on a real Dovecot (delivered straight into the
 * maildir), an IMAP source in the TOML whose first sync starts with the daemon; the page opens
 * while it runs (a source added over RPC elsewhere only reaches an open page with its first
 * `memory.synced`, after that sync). Its row shows "INBOX: n of
 * 10,000" (`source-progress`) as the sync runs, never going back, and once the sync is done the
 * progress is gone and the row counts the documents. The count advances with `memory.sync_progress`
 * (at most one every half second), and the page also reads the sources every 2 s while one syncs.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemorySourceStatus } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { dovecotAvailable, startDovecot, type Dovecot } from '../support/dovecot.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const MESSAGES = 10_000;

function message(n: number): string {
  return [
    `From: Sender ${n % 300} <s${n % 300}@example.com>`,
    'To: ada@example.com',
    `Subject: Update ${n} on project ${n % 97}`,
    `Date: ${new Date(Date.UTC(2026, 0, 1) + n * 60_000).toUTCString()}`,
    `Message-ID: <progress-${n}@example.com>`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `The numbers for project ${n % 97} are due on Friday.`,
    '',
  ].join('\r\n');
}

describe.runIf(dovecotAvailable())('Memory tab: a large sync shows its progress (Chromium)', () => {
  let imap: Dovecot;
  let browser: TestBrowser;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  const row = () => page.locator('[data-testid="memory-source"][data-namespace="mail"]');
  const statusOf = async () => (await daemon.rpc<MemorySourceStatus[]>('memory.sources')).find((s) => s.namespace === 'mail');

  beforeAll(async () => {
    await ensurePageBuilt();
    imap = await startDovecot({ users: { ada: 'secret' } });
    imap.deliver(
      'ada',
      Array.from({ length: MESSAGES }, (_, i) => message(i + 1)),
    );
    // The browser first: the sync starts with the daemon, and the page should open while it runs.
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    daemon = await startDaemon({
      config: [
        '[worlds.tasks]',
        'enabled = false',
        '[[worlds.memory.sources]]',
        'kind = "imap"',
        'namespace = "mail"',
        'label = "Big mailbox"',
        'host = "127.0.0.1"',
        `port = ${imap.port}`,
        'tls = false',
        'user = "ada"',
        'password_env = "SUBC_TEST_IMAP"',
        'idle = false',
        '',
      ].join('\n'),
      env: { SUBC_TEST_IMAP: 'secret', SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    await page.goto(daemon.pageUrl);
    await page.getByRole('tab', { name: 'Memory' }).click();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await imap?.dispose();
  });

  it('the row shows "INBOX: n of 10,000" while the sync runs, then the documents', async () => {
    const progress = row().locator('[data-testid="source-progress"]');
    await progress.waitFor({ timeout: 30_000 });
    const seen: number[] = [];
    // Read it while it shows: the count of messages done, of the whole INBOX.
    for (let i = 0; i < 600; i++) {
      const text = await progress.innerText({ timeout: 1000 }).catch(() => null);
      // A miss is a re-render or the end: only the daemon saying the sync is over ends the watch.
      if (text === null) {
        if ((await statusOf())?.progress == null) break;
        continue;
      }
      const m = /^INBOX: ([\d,]+) of 10,000$/.exec(text.trim());
      expect(m, text).not.toBeNull();
      const done = Number(m![1]!.replace(/,/g, ''));
      if (seen.at(-1) !== done) seen.push(done);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen.length, 'the count advances on the page as the sync runs').toBeGreaterThan(1);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect(seen.at(-1)).toBeLessThanOrEqual(MESSAGES);

    // Done: the progress is gone and the row counts every message.
    await progress.waitFor({ state: 'detached', timeout: 120_000 });
    await row().locator('[data-testid="source-documents"]', { hasText: '10,000' }).waitFor({ timeout: 30_000 });
    expect(await statusOf()).toMatchObject({ progress: null, documents: MESSAGES });
    expect(watched.errors).toEqual([]);
  }, 240_000);
});
