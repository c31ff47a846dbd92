/**
 * The Memory tab manages sources like accounts, in real Chromium against the real daemon: a
 * folder source from the TOML and two added over RPC — a calendar file, and a CalDAV account on
 * a port where nothing listens (added with force). The failing one shows what failed, what to
 * do and the next try while the folder and the calendar are fine; Test connection says what it
 * found; Pause / Resume; Remove says what happens to the documents and deletes them.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemorySourceStatus } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { freePort } from '../support/dovecot.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const utc = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

describe('Memory tab: sources managed like accounts (Chromium)', () => {
  let browser: TestBrowser;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  const row = (ns: string) => page.locator(`[data-testid="memory-source"][data-namespace="${ns}"]`);
  const statusOf = async (ns: string) => (await daemon.rpc<MemorySourceStatus[]>('memory.sources')).find((s) => s.namespace === ns);

  beforeAll(async () => {
    await ensurePageBuilt();
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-sources-page-'));
    mkdirSync(path.join(workspace, 'notes'));
    writeFileSync(path.join(workspace, 'notes', 'plan.md'), '# Garden plan\n\nPlant tomatoes in May.\n');
    const start = Date.now() + 86_400_000;
    writeFileSync(
      path.join(workspace, 'work.ics'),
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//t//EN',
        'BEGIN:VEVENT',
        'UID:board',
        `DTSTAMP:${utc(Date.now())}`,
        `DTSTART:${utc(start)}`,
        'SUMMARY:Board meeting',
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n'),
    );
    daemon = await startDaemon({
      workspace,
      config: [
        '[worlds.tasks]',
        'enabled = false',
        '[[worlds.memory.sources]]',
        'kind = "folder"',
        'path = "notes"',
        'namespace = "notes"',
        'label = "Notes"',
        'watch = false',
        '',
      ].join('\n'),
      env: { SUBC_TEST_DAV: 'secret', SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    await daemon.rpc('memory.sources_add', { source: { kind: 'ics', namespace: 'work', label: 'Work calendar', location: 'work.ics' } });
    const down = `http://127.0.0.1:${await freePort()}/ada/`;
    await daemon.rpc('memory.sources_add', {
      source: { kind: 'caldav', namespace: 'dav', label: 'Shared calendar', url: down, user: 'ada', password_env: 'SUBC_TEST_DAV' },
      force: true,
    });
    for (let i = 0; i < 200 && !(await statusOf('dav'))?.last_sync; i++) await new Promise((r) => setTimeout(r, 100));
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.getByRole('tab', { name: 'Memory' }).click();
    await row('dav').waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
  });

  it('a failing source says what failed, what to do and the next try; the others are fine; test, pause, resume and remove', async () => {
    const error = row('dav').locator('[data-testid="source-error"]');
    await error.waitFor();
    const text = await error.innerText();
    expect(text).toContain('Last sync failed (host)');
    expect(text).toContain('What to do: Check the host and port');
    expect(text).toMatch(/Next try in \d+ s|Next try in/);
    expect(await row('notes').locator('[data-testid="source-error"]').count()).toBe(0);
    expect(await row('work').locator('[data-testid="source-documents"]').innerText()).toBe('1');

    await row('work').getByRole('button', { name: 'Test the connection of Work calendar' }).click();
    await row('work').locator('[data-testid="source-tested"]', { hasText: 'Connection works.' }).waitFor();
    await row('dav').getByRole('button', { name: 'Test the connection of Shared calendar' }).click();
    await row('dav').locator('[data-testid="source-tested"]', { hasText: 'host failed: cannot reach 127.0.0.1' }).waitFor();

    await row('work').getByRole('button', { name: 'Pause Work calendar' }).click();
    await row('work').locator('[data-testid="source-paused"]').waitFor();
    expect(await statusOf('work')).toMatchObject({ paused: true });
    await row('work').getByRole('button', { name: 'Resume Work calendar' }).click();
    await row('work').locator('[data-testid="source-paused"]').waitFor({ state: 'detached' });

    // A TOML source offers no Remove; an added one says what happens to its documents.
    expect(await row('notes').getByRole('button', { name: 'Remove Notes' }).count()).toBe(0);
    await row('work').getByRole('button', { name: 'Remove Work calendar' }).click();
    const confirm = row('work').locator('[data-testid="source-remove"]');
    expect(await confirm.innerText()).toContain('Its 1 documents are deleted (the memory world sees them as removals)');
    await confirm.getByRole('button', { name: 'Remove Work calendar and delete its documents' }).click();
    for (let i = 0; i < 100 && (await statusOf('work')); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf('work')).toBeUndefined();
    expect((await daemon.rpc<{ total: number }>('memory.list_documents', { namespace: 'work' })).total).toBe(0);
    expect(watched.errors).toEqual([]);
  }, 60_000);

  it('a source is added from the page: a failed test says what failed and offers Add anyway; a good one is added and syncs', async () => {
    const form = page.locator('[data-testid="add-source"]');
    await page.locator('[data-testid="add-source-section"] summary').click();
    await form.getByLabel('Kind').selectOption('ics');
    await form.getByLabel('Namespace').fill('plans');
    await form.getByLabel('Label').fill('Team plans');
    await form.getByLabel('ICS file or URL').fill('missing.ics');
    await form.getByRole('button', { name: 'Test connection' }).click();
    const result = form.locator('[data-testid="add-source-result"]');
    await result.waitFor();
    expect(await result.innerText()).toMatch(/missing\.ics/);
    await form.getByRole('button', { name: 'Add anyway' }).waitFor();
    expect(await statusOf('plans')).toBeUndefined();

    // The right file: the test passes, Add adds it, and its event becomes a document.
    await form.getByLabel('ICS file or URL').fill('work.ics');
    await form.getByRole('button', { name: 'Test connection' }).click();
    await form.locator('[data-testid="add-source-result"]', { hasText: 'Connection works.' }).waitFor();
    await form.getByRole('button', { name: 'Add source' }).click();
    await row('plans').waitFor();
    for (let i = 0; i < 100 && (await statusOf('plans'))?.documents !== 1; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf('plans')).toMatchObject({ namespace: 'plans', documents: 1, origin: 'added' });
    await row('plans').locator('[data-testid="source-documents"]', { hasText: '1' }).waitFor();
    expect(watched.errors).toEqual([]);
  }, 60_000);
});
