/**
 * The Actionables and Memory tabs in real Chromium against the real daemon, whose memory source
 * is a folder of notes and an email (`test/memory/fixtures/inbox`), with the scripted model
 * server answering the conscious loop's extraction and the memory world's decision agent (which
 * calls `notify_user`):
 *
 * - Actionables: grouped by priority with source labels; dismiss (the card leaves at once, Undo
 *   brings it back, a dismissed item stays dismissed when extracted again); done; a failed run's
 *   error and the next run clearing it; Run now;
 * - Memory: sources with counts and last sync; search with ranked results and <mark>ed matches
 *   (a document's HTML is text); a file dropped into the folder shows up as a change, the memory
 *   world's review notifies (seen live), and its to-do is settled from the page;
 * - the notification is also in the Bots tab's Subconscious thread (no bots needed), unread until shown;
 * - both tabs empty on a daemon without sources say how to connect one;
 * - keyboard, contrast (light and dark), 360 px; screenshots of both tabs.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actionable, MemoryNamespace, MemoryTodo } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer, type ScriptedReply } from '../support/model-server.js';
import { contrastFailures, walkFocus } from './support/a11y.js';
import { horizontalOverflow, screenshots, VIEWPORTS, type TestBrowser, type WatchedPage } from './support/browser.js';
import {
  DECISION_FIRST_LINE,
  extracted as item,
  firstRuns,
  isExtraction,
  modelEnv,
  openPage,
  openTab as openTabOf,
  startInboxDaemon,
  textOf,
  waitFor,
} from './support/memory-page.js';
import { ensurePageBuilt } from './support/page-build.js';

/** What the conscious loop's model extracts from the fixture inbox. */
const EXTRACTED = [
  item('Pay ACME invoice 2291', 'gmail', 'critical', 'Inbox', {
    description: 'Invoice 2291 (EUR 1,840) is 30 days overdue; hosting is suspended on Monday.',
    requires_confirmation: true,
  }),
  item('Send Ana the cloud costs', 'ai_insight', 'important', 'Standup notes', { has_complex_action: true }),
  item('Buy compost for the garden', 'system', 'normal', 'Garden plan'),
];

describe('Actionables and Memory tabs in Chromium', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let workspace: string;
  let watched: WatchedPage;
  let page: Page;
  /** Replies queued for the next extractions (else EXTRACTED). */
  const extractionReplies: ScriptedReply[] = [];
  const seen: string[] = [];

  const actionables = () => daemon.rpc<Actionable[]>('conscious.list');
  const card = (title: string) => page.locator('[data-testid="actionable"]', { hasText: title });
  const openTab = (name: string) => openTabOf(page, name);

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer({ models: ['scripted-model'] });
    server.handle((req) => {
      if (isExtraction(req)) {
        seen.push('extract');
        return extractionReplies.shift() ?? { json: EXTRACTED };
      }
      if (textOf(req, 'system').includes(DECISION_FIRST_LINE)) {
        seen.push('review');
        if ((req.body?.messages ?? []).some((m) => m.role === 'tool')) return { text: 'Told the user about the renewal and added a to-do.' };
        return {
          toolCalls: [
            { name: 'notify_user', arguments: { message: 'The Initech contract renews on Monday unless you cancel by Friday.', priority: 'important' } },
            { name: 'update_task', arguments: { title: 'Decide on the Initech renewal', note: 'before Friday' } },
          ],
        };
      }
      seen.push('unknown');
      return { status: 400, message: `memory page test: unscripted request (${textOf(req, 'system').split('\n')[0]!.slice(0, 80)})` };
    });
    ({ daemon, workspace } = await startInboxDaemon(server, 'subc-memory-page-'));
    // The first sync, the memory world's baseline and the conscious loop's first run.
    await firstRuns(daemon, 3);
    ({ browser, watched, page } = await openPage(daemon));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('groups the actionables by priority with their source labels, and shows the last run', async () => {
    await openTab('Actionables');
    const critical = page.locator('[data-testid="actionables-critical"]');
    await critical.locator('[data-testid="actionable"]').first().waitFor();
    expect(await critical.locator('h2').innerText()).toMatch(/^Critical\s*1$/);
    expect(await card('Pay ACME invoice 2291').getAttribute('data-priority')).toBe('critical');
    expect(await card('Pay ACME invoice 2291').locator('[data-testid="source-label"]').innerText()).toBe('Inbox');
    expect(await card('Pay ACME invoice 2291').innerText()).toContain('needs your confirmation');
    expect(await page.locator('[data-testid="actionables-important"] [data-testid="actionable"]').innerText()).toContain('Send Ana the cloud costs');
    expect(await page.locator('[data-testid="actionables-normal"] [data-testid="actionable"]').innerText()).toContain('Garden plan');
    // Most urgent first, top to bottom.
    const order = await page.locator('[data-testid="actionable"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-priority')));
    expect(order).toEqual(['critical', 'important', 'normal']);
    expect(await page.locator('[data-testid="last-run"]').innerText()).toMatch(/last run .+: 3 items \(3 new\) from \d+ documents/);
    // Issue 23: at 1280 px the priorities stand side by side (the width is used), at 360 px one under the other.
    const boxes = async () =>
      Promise.all(['critical', 'important', 'normal'].map(async (p) => (await page.locator(`[data-testid="actionables-${p}"]`).boundingBox())!));
    const wide = await boxes();
    expect(new Set(wide.map((b) => Math.round(b.y))).size).toBe(1);
    expect(wide[0]!.x + wide[0]!.width).toBeLessThanOrEqual(wide[1]!.x);
    expect(wide[1]!.x + wide[1]!.width).toBeLessThanOrEqual(wide[2]!.x);
    await page.setViewportSize(VIEWPORTS[1]);
    const narrow = await boxes();
    expect(narrow[0]!.y + narrow[0]!.height).toBeLessThanOrEqual(narrow[1]!.y);
    expect(narrow[1]!.y + narrow[1]!.height).toBeLessThanOrEqual(narrow[2]!.y);
    expect(await horizontalOverflow(page)).toBe(0);
    await page.setViewportSize(VIEWPORTS[0]);
    // Only the item that needs the person's confirmation offers Confirm, besides Done and Dismiss.
    // (The links to its memory documents come first; the actions follow.)
    expect((await card('Pay ACME invoice 2291').getByRole('button').allInnerTexts()).slice(-3)).toEqual(['Confirm', 'Done', 'Dismiss']);
    expect((await card('Buy compost for the garden').getByRole('button').allInnerTexts()).filter((t) => ['Confirm', 'Done', 'Dismiss'].includes(t))).toEqual([
      'Done',
      'Dismiss',
    ]);
    await screenshots(page, 'actionables');
  });

  it('dismiss takes the card away at once, Undo brings it back, and a dismissed item stays dismissed when extracted again', async () => {
    await openTab('Actionables');
    const compost = card('Buy compost for the garden');
    await compost.getByRole('button', { name: 'Dismiss: Buy compost for the garden' }).click();
    await compost.waitFor({ state: 'detached' });
    const undo = page.locator('[data-testid="undo-bar"]');
    expect(await undo.innerText()).toContain('Dismissed: “Buy compost for the garden”');
    // The keyboard lands on Undo (the card it was on is gone).
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Undo');
    await waitFor('the dismissal', async () => (await actionables()).find((a) => a.title === 'Buy compost for the garden')!.state === 'dismissed');
    expect(await page.locator('[data-testid="actionables-normal"]').count()).toBe(0);

    await page.keyboard.press('Enter'); // on Undo
    await compost.waitFor();
    await undo.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Done: Buy compost for the garden');
    expect((await actionables()).find((a) => a.title === 'Buy compost for the garden')!.state).toBe('new');

    // Dismiss it for good, then Run now: the loop extracts it again, and it stays dismissed.
    await compost.getByRole('button', { name: 'Dismiss: Buy compost for the garden' }).click();
    await compost.waitFor({ state: 'detached' });
    await waitFor('the dismissal', async () => (await actionables()).find((a) => a.title === 'Buy compost for the garden')!.state === 'dismissed');
    const runs = seen.filter((s) => s === 'extract').length;
    await page.getByRole('button', { name: 'Run now' }).click();
    await waitFor('the forced run', async () => seen.filter((s) => s === 'extract').length === runs + 1);
    await page.locator('[data-testid="conscious-state"]', { hasText: 'Watching memory' }).waitFor();
    await page.locator('[data-testid="last-run"]', { hasText: '3 items (0 new)' }).waitFor();
    expect(await compost.count()).toBe(0);
    expect((await actionables()).find((a) => a.title === 'Buy compost for the garden')!.state).toBe('dismissed');
    const settled = page.locator('[data-testid="settled-actionables"]');
    await settled.locator('summary').click();
    expect(await settled.locator('[data-testid="settled-actionable"][data-state="dismissed"]').innerText()).toContain('Buy compost for the garden');

    // Done: the same, and it is listed as done.
    await card('Send Ana the cloud costs').getByRole('button', { name: 'Done: Send Ana the cloud costs' }).click();
    await card('Send Ana the cloud costs').waitFor({ state: 'detached' });
    await settled.locator('[data-testid="settled-actionable"][data-state="done"]').waitFor();
    await waitFor('done', async () => (await actionables()).find((a) => a.title === 'Send Ana the cloud costs')!.state === 'done');
  });

  it('a failed run says why, and the next run clears it', async () => {
    await openTab('Actionables');
    // Cut off twice: the reply and its one repair retry (issue 19).
    extractionReplies.push({ text: 'Sure! Here are the items: [{"title": "Pay' });
    extractionReplies.push({ text: 'Sure! Here are the items: [{"title": "Pay' });
    await page.getByRole('button', { name: 'Run now' }).click();
    const error = page.locator('[data-testid="run-error"]');
    await error.waitFor();
    expect(await error.innerText()).toMatch(/failed \(malformed\): .+ It tries the same memory again at its next run\./);
    expect(await page.locator('[data-testid="conscious-state"]').innerText()).toContain('Last run failed');
    // Nothing was lost: the items from before are all still there.
    expect(await card('Pay ACME invoice 2291').count()).toBe(1);
    await page.locator('[data-testid="conscious-state"]', { hasText: 'Last run failed' }).waitFor();
    await page.getByRole('button', { name: 'Run now' }).click();
    await error.waitFor({ state: 'detached' });
    await page.locator('[data-testid="conscious-state"]', { hasText: 'Watching memory' }).waitFor();
  });

  it('Confirm hands an item that needs confirmation to the agent as a one-off read-only task (its changes ask first); Undo brings the item back', async () => {
    await openTab('Actionables');
    const acme = card('Pay ACME invoice 2291');
    await acme.getByRole('button', { name: 'Confirm: Pay ACME invoice 2291' }).click();
    await acme.waitFor({ state: 'detached' });
    await page.locator('[data-testid="undo-bar"]', { hasText: 'Marked done: “Pay ACME invoice 2291”' }).waitFor();
    const tasks = await daemon.rpc<{ title: string; recurrence: string; needs_tools: boolean; source: string }[]>('subconscious.tasks_list');
    const made = tasks.filter((t) => t.title.startsWith('Pay ACME invoice 2291'));
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({
      title: 'Pay ACME invoice 2291: Invoice 2291 (EUR 1,840) is 30 days overdue; hosting is suspended on Monday.',
      recurrence: 'once',
      needs_tools: false,
      source: 'user',
    });
    await waitFor('done', async () => (await actionables()).find((a) => a.title === 'Pay ACME invoice 2291')!.state === 'done');
    await page.locator('[data-testid="undo-bar"]').getByRole('button', { name: 'Undo' }).click();
    await acme.waitFor();
    expect((await actionables()).find((a) => a.title === 'Pay ACME invoice 2291')!.state).toBe('new');
  });

  it('Memory: sources with counts and last sync; search ranks and marks matches, and a document’s HTML stays text', async () => {
    await openTab('Memory');
    const source = page.locator('[data-testid="memory-source"][data-namespace="inbox"]');
    await source.waitFor();
    expect(await source.locator('[data-testid="source-documents"]').innerText()).toBe('4');
    expect(await source.innerText()).toMatch(/Last sync\s+(just now|\d+ s ago)/);
    await source.locator('.source-path', { hasText: path.join(workspace, 'inbox') }).waitFor(); // from memory.sources

    // A host pushes a document whose text looks like HTML and Markdown.
    await daemon.rpc('memory.store_document', {
      namespace: 'crm',
      external_id: 'note-1',
      title: 'Vendor note',
      body: 'The <img src=x onerror="window.__pwned=1"> vendor **portal** needs a new invoice address before the audit.',
      namespace_label: 'CRM',
    });
    await page.locator('[data-testid="memory-source"][data-namespace="crm"]').waitFor(); // live, from memory.changed

    const search = page.getByRole('search', { name: 'Search memory' });
    await search.getByRole('searchbox').fill('invoice overdue');
    await search.getByRole('button', { name: 'Search' }).click();
    const hits = page.locator('[data-testid="search-hit"]');
    await hits.first().waitFor();
    expect(await hits.first().getAttribute('data-external-id')).toBe('invoice-2291.eml');
    expect(await hits.first().innerText()).toContain('Invoice 2291 is 30 days overdue');
    const marked = await hits.first().locator('mark').allInnerTexts();
    expect(marked.map((m) => m.toLowerCase())).toEqual(expect.arrayContaining(['overdue']));

    await search.getByRole('searchbox').fill('vendor portal');
    await search.getByRole('combobox', { name: 'Source' }).selectOption({ label: 'CRM' });
    await search.getByRole('button', { name: 'Search' }).click();
    // The earlier answer lists note-1 too (it says "invoice"): wait for this query's list.
    const results = page.getByRole('list', { name: 'Results for vendor portal' });
    await results.locator('[data-testid="search-hit"][data-external-id="note-1"]').waitFor();
    const snippet = results.locator('[data-testid="search-hit"][data-external-id="note-1"] [data-testid="hit-snippet"]');
    expect(await snippet.innerText()).toContain('<img src=x onerror="window.__pwned=1">');
    expect(await snippet.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The document's own ** is text; only the engine's matches are marked.
    expect(await snippet.innerText()).toContain('**portal**');
    expect((await snippet.locator('mark').allInnerTexts()).map((m) => m.toLowerCase()).sort()).toEqual(['portal', 'vendor']);

    await search.getByRole('searchbox').fill('zeppelin');
    await search.getByRole('combobox', { name: 'Source' }).selectOption({ label: 'All sources' });
    await search.getByRole('button', { name: 'Search' }).click();
    expect(await page.locator('[data-testid="search-empty"]').innerText()).toBe('Nothing in memory matches “zeppelin”.');
  });

  it('a file dropped into the folder shows as a change; the review notifies (live) and its to-do is settled from the page', async () => {
    await openTab('Memory');
    writeFileSync(
      path.join(workspace, 'inbox', 'initech-renewal.md'),
      '# Initech contract renewal\n\nThe Initech contract renews automatically on Monday unless cancelled by Friday.\n',
    );
    // The watcher syncs it; the page hears memory.synced / memory.changed.
    const source = page.locator('[data-testid="memory-source"][data-namespace="inbox"]');
    await source.locator('[data-testid="source-documents"]', { hasText: '5' }).waitFor();
    const change = page.locator('[data-testid="change-source"][data-namespace="inbox"]');
    await change.waitFor();
    expect(await change.innerText()).toMatch(/added\s+Initech contract renewal/);
    const search = page.getByRole('search', { name: 'Search memory' });
    await search.getByRole('searchbox').fill('Initech renewal');
    await search.getByRole('combobox', { name: 'Source' }).selectOption({ label: 'All sources' });
    await search.getByRole('button', { name: 'Search' }).click();
    await page
      .getByRole('list', { name: 'Results for Initech renewal' })
      .locator('[data-testid="search-hit"][data-external-id="initech-renewal.md"]')
      .waitFor();
    await screenshots(page, 'memory');

    expect(await page.locator('[data-testid="memory-notification"]').count()).toBe(0);
    await page.getByRole('button', { name: 'Review now' }).click();
    const note = page.locator('[data-testid="memory-notification"]');
    await note.waitFor();
    expect(await note.innerText()).toContain('The Initech contract renews on Monday unless you cancel by Friday.');
    expect(await note.getAttribute('data-priority')).toBe('important');
    // The review moved the baseline: nothing left to review.
    await page.locator('[data-testid="changes-totals"]', { hasText: 'nothing changed' }).waitFor();

    const todo = page.locator('[data-testid="memory-todo"][data-status="open"]', { hasText: 'Decide on the Initech renewal' });
    await todo.waitFor();
    expect(await todo.innerText()).toContain('before Friday');
    await screenshots(page, 'memory-reviewed');
    await todo.getByRole('button', { name: 'Done: Decide on the Initech renewal' }).click();
    await todo.waitFor({ state: 'detached' });
    await waitFor('the to-do done', async () => (await daemon.rpc<MemoryTodo[]>('memory.todos_list', { status: 'done' })).length === 1);
    expect(seen.filter((s) => s === 'review')).toHaveLength(2); // the tool step and the closing text
  });

  it('the review’s notification is in the Subconscious thread of the Bots tab too (with no bots): unread, then read on opening; read-only', async () => {
    await openTab('Bots');
    const item = page.getByTestId('subconscious-item');
    await item.waitFor();
    expect(await item.getByTestId('unread').innerText()).toBe('1 new');
    expect(await page.getByTestId('bots-empty').count()).toBe(1); // no bots, and nothing broke
    await item.click();
    const message = page.locator('[data-testid="thread"][data-kind="system"] [data-testid="message"][data-role="system"]');
    await message.waitFor();
    expect(await message.innerText()).toContain('Subconscious');
    expect(await message.getByTestId('message-text').innerText()).toBe('Important: The Initech contract renews on Monday unless you cancel by Friday.');
    expect(await page.getByTestId('composer-input').count()).toBe(0);
    expect(await page.getByTestId('thread-read-only').innerText()).toContain('written by the memory world only');
    // Shown means read.
    await item.getByTestId('unread').waitFor({ state: 'detached' });
    expect(await item.getAttribute('aria-current')).toBe('page');
  });

  it('both tabs are keyboard reachable, keep contrast in light and dark, fit 360 px, and logged no console error', async () => {
    const loaded: Record<string, string> = { Actionables: '[data-testid="actionable"]', Memory: '[data-testid="memory-source"]' };
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const tab of ['Actionables', 'Memory']) {
        await openTab(tab);
        await page.locator(loaded[tab]!).first().waitFor();
        // Open the folded parts, so their text is checked too.
        await page.locator('details:not([open]) > summary').evaluateAll((els) => els.forEach((e) => (e as HTMLElement).click()));
        if (scheme === 'light') {
          const stops = await walkFocus(page);
          expect(stops.length, `${tab}: focus stops`).toBeGreaterThanOrEqual(6);
          expect(
            stops.filter((s) => s.problem !== null),
            tab,
          ).toEqual([]);
          const unnamed = await page.evaluate(() =>
            [...document.querySelectorAll('button, input, select, summary')]
              .filter((el) => {
                const label = el.getAttribute('aria-label') || (el as HTMLInputElement).labels?.[0]?.textContent || el.textContent;
                return !label || !label.trim();
              })
              .map((el) => el.outerHTML.slice(0, 120)),
          );
          expect(unnamed, tab).toEqual([]);
          await page.setViewportSize(VIEWPORTS[1]);
          expect(await horizontalOverflow(page), `${tab} at 360 px`).toBeLessThanOrEqual(0);
          await page.setViewportSize(VIEWPORTS[0]);
        }
        expect(await contrastFailures(page), `${tab} (${scheme}): text contrast`).toEqual([]);
        if (scheme === 'dark') await screenshots(page, `${tab.toLowerCase()}-dark`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(watched.errors).toEqual([]);
  });

  it('without a source, both tabs say what feeds them and how to connect a folder or push documents', async () => {
    const bare = await startDaemon({ config: '[worlds.tasks]\nenabled = false\n', env: modelEnv(server) });
    try {
      const { page: empty, errors } = await browser.newPage();
      await empty.goto(bare.pageUrl);
      await empty.getByRole('tab', { name: 'Actionables' }).click();
      const hint = empty.locator('[data-testid="actionables-empty"][data-sources="0"]');
      await hint.waitFor();
      expect(await hint.innerText()).toContain('Nothing to act on yet.');
      expect(await hint.innerText()).toContain('[[worlds.memory.sources]]');
      await screenshots(empty, 'actionables-empty');
      await hint.getByRole('button', { name: 'Open the Memory tab' }).click();
      const memoryHint = empty.locator('[data-testid="memory-empty"]');
      await memoryHint.waitFor();
      expect(await memoryHint.innerText()).toContain('[[worlds.memory.sources]]');
      expect(await memoryHint.innerText()).toContain('memory.store_document');
      await screenshots(empty, 'memory-empty');
      // A source with documents but no finished run: the list is empty because nothing was read, not because all is well.
      await bare.rpc('memory.store_document', { namespace: 'notes', external_id: 'n1', title: 'Renewal', body: 'The domain renews on Friday.' });
      await empty.getByRole('tab', { name: 'Actionables' }).click();
      const unread = empty.locator('[data-testid="actionables-empty"][data-sources="1"][data-read="false"]');
      await unread.waitFor();
      expect(await unread.innerText()).toContain('No run has read your memory yet');
      expect(await unread.innerText()).not.toContain('Nothing needs your attention');
      expect(await contrastFailures(empty)).toEqual([]);
      expect(errors).toEqual([]);
      // Only the namespace of the document this test pushed: the page itself created nothing.
      expect((await bare.rpc<MemoryNamespace[]>('memory.namespaces')).map((n) => n.namespace)).toEqual(['notes']);
    } finally {
      await bare.dispose();
    }
  }, 60_000);
});
