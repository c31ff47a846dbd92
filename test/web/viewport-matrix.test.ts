/**
 * Issue 23's acceptance, every item at every width: ONE daemon holding something of each kind
 * that waits for a person — a bot's tool call held at the approval gate (the MCP filesystem
 * server), a heartbeat check-in, an actionable that needs confirmation, a failing world (the
 * tasks world's model answers 500) — plus a bot whose run is in progress, looked at in Chromium
 * at 1280×800 and 360×740, light and dark (a fresh browser per variant). Per variant, every tab:
 * nothing scrolls sideways, WCAG AA text contrast, no internal words; at 360 px every tab is in
 * view and clickable; "Needs you" is the first thing after the header (and the banners); the
 * badges and the title count exactly its cards; the approval card shows tool, server and
 * arguments and its four answers are visible and labelled; the check-in and the actionable offer
 * their answers; the failing world has one banner; aria-live regions for the inbox, the log and
 * the streamed reply; actionables in a grid at 1280 and one column at 360; Settings shows where
 * values came from; offline (the browser's network cut), the answers and Run all now are disabled
 * with the reason. Full-page screenshots go to /tmp/shots (or SUBCONSCIOUS_SHOTS) for a person.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Approval } from '../../src/protocol/agent.js';
import type { BotWithStatus } from '../../src/protocol/bots.js';
import type { Actionable, HeartbeatSnapshot, StatusResult } from '../../src/protocol/index.js';
import { PULSE_SYSTEM } from '../../src/worlds/heartbeat/pulse.js';
import { EVALUATION_SYSTEM } from '../../src/worlds/tasks/prompts.js';
import { filesystemServer } from '../support/mcp-servers.js';
import { OFFLINE_REASON } from '../../web/src/shell/context.js';
import { contrastFailures } from './support/a11y.js';
import { openLivePage, type LivePage, type OpenPage } from './support/live-page.js';
import { DECISION_FIRST_LINE, INBOX_SOURCE_CONFIG, extracted, isExtraction, waitFor } from './support/memory-page.js';
import { ASK_USER_PULSE, systemOf } from './support/heartbeat-page.js';

const SHOTS = process.env.SUBCONSCIOUS_SHOTS ?? '/tmp/shots';
const FIXTURES = fileURLToPath(new URL('../memory/fixtures/inbox', import.meta.url));
const PULSE_FIRST_LINE = PULSE_SYSTEM.split('\n')[0]!;
const EVALUATION_FIRST_LINE = EVALUATION_SYSTEM.split('\n')[0]!;

const VARIANTS = [
  { name: '1280-light', viewport: { width: 1280, height: 800 }, colorScheme: 'light' },
  { name: '1280-dark', viewport: { width: 1280, height: 800 }, colorScheme: 'dark' },
  { name: '360-light', viewport: { width: 360, height: 740 }, colorScheme: 'light' },
  { name: '360-dark', viewport: { width: 360, height: 740 }, colorScheme: 'dark' },
] as const;

/** Words of the code that a person should never read on the page (issue 23 §6). */
const INTERNAL_WORDS = /\b(execute_analysis|nothing_unfinished|ask_user|conscious_extract|in_progress|escalate|tasks_evaluate)\b|\(s\)/;

/** Sideways scroll of the page: what scrolls beyond the viewport's width. */
const sideways = (page: Page) => page.evaluate(() => document.scrollingElement!.scrollWidth - document.scrollingElement!.clientWidth);

/** Boxes inside the page that scroll sideways (a table cut off in its own scroller), fields aside. */
const innerScrollers = (page: Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll('body *')]
      .filter((e) => /auto|scroll/.test(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1)
      .filter((e) => !e.matches('input, textarea, select') && e.checkVisibility())
      .map(
        (e) =>
          `${e.tagName.toLowerCase()}${e.getAttribute('data-testid') ? `[${e.getAttribute('data-testid')}]` : ''}.${e.className} (${e.scrollWidth} in ${e.clientWidth})`,
      ),
  );

describe('every item of issue 23 at 1280 and 360 px, light and dark', () => {
  let live: LivePage;
  let workspace: string;
  let releaseRunner = () => {};
  const runnerHeld = new Promise<void>((r) => (releaseRunner = r));

  beforeAll(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-matrix-'));
    cpSync(FIXTURES, path.join(workspace, 'inbox'), { recursive: true });
    mkdirSync(path.join(workspace, 'files'));
    mkdirSync(SHOTS, { recursive: true });
    const fs = filesystemServer(path.join(workspace, 'files'));
    live = await openLivePage({
      workspace,
      handle: async (req) => {
        const system = systemOf(req);
        if (system.startsWith(PULSE_FIRST_LINE)) return ASK_USER_PULSE;
        if (/^You are .* \(@scout\)/.test(system)) {
          if ((req.body?.messages ?? []).some((m) => m.role === 'tool')) return { text: 'Saved it.' };
          return { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(workspace, 'files', 'launch.md'), content: 'Ship on Friday.' } }] };
        }
        if (/^You are .* \(@herald\)/.test(system)) return { status: 400, message: 'the provider refused the request' };
        if (/^You are .* \(@runner\)/.test(system)) {
          await runnerHeld;
          return { text: 'Done.' };
        }
        if (isExtraction(req))
          return {
            json: [
              extracted('Pay ACME invoice 2291', 'gmail', 'critical', 'Inbox', {
                description: 'Invoice 2291 (EUR 1,840) is 30 days overdue; hosting is suspended on Monday.',
                requires_confirmation: true,
              }),
              extracted('Send Ana the cloud costs', 'ai_insight', 'important', 'Standup notes'),
              extracted('Buy compost for the garden', 'system', 'normal', 'Garden plan'),
            ],
          };
        if (system.includes(DECISION_FIRST_LINE)) return { text: 'Nothing needs the person.' };
        if (system.includes(EVALUATION_FIRST_LINE)) return { status: 500, message: 'upstream down' };
        return { status: 400, message: `viewport matrix: an unexpected call (${system.slice(0, 60)})` };
      },
      config: [
        '[worlds.heartbeat]',
        'tick_seconds = 120',
        ...INBOX_SOURCE_CONFIG,
        '[[mcp.servers]]',
        'name = "fs"',
        `command = ${JSON.stringify(fs.command)}`,
        `args = ${JSON.stringify(fs.args)}`,
      ],
      variant: VARIANTS[0],
      before: async (daemon) => {
        const bot = (name: string, tools: string[] = []) =>
          daemon.rpc<BotWithStatus>('bots.create', { name, label: name[0]!.toUpperCase() + name.slice(1), description: `The ${name}.`, tools });
        const [scout, herald, runner] = [await bot('scout', ['fs']), await bot('herald'), await bot('runner')];
        await daemon.rpc('bots.send_message', { bot_id: scout.id, text: 'Please save the launch plan.' });
        await daemon.rpc('bots.send_message', { bot_id: herald.id, text: 'Draft the launch plan.' });
        await daemon.rpc('bots.send_message', { bot_id: runner.id, text: 'Sum up the week.' });
        await daemon.rpc('subconscious.trigger', { world: 'tasks' });
        const bots = () => daemon.rpc<BotWithStatus[]>('bots.list');
        await waitFor('herald idle after its failed run', async () => (await bots()).find((b) => b.id === herald.id)!.status === 'idle');
        await daemon.rpc('bots.heartbeat_now', { bot_id: herald.id });
        await waitFor('the approval', async () =>
          (await daemon.rpc<{ approvals: Approval[] }>('approvals.list', {})).approvals.some((a) => a.state === 'pending' && a.tool === 'write_file'),
        );
        await waitFor('the check-in', async () =>
          (await daemon.rpc<HeartbeatSnapshot>('bots.heartbeat_snapshot', {})).checkins.some((c) => c.state === 'pending'),
        );
        await waitFor('the actionable to confirm', async () =>
          (await daemon.rpc<Actionable[]>('conscious.list')).some((a) => a.requires_confirmation && a.state === 'new'),
        );
        await waitFor('the failing tasks world', async () => {
          const tasks = (await daemon.rpc<StatusResult>('subconscious.status')).instances.find((i) => i.world === 'tasks')!;
          return tasks.halted || tasks.consecutive_failures > 0;
        });
        await waitFor('the runner at work', async () => (await bots()).find((b) => b.id === runner.id)!.status === 'working');
      },
    });
  }, 300_000);

  afterAll(async () => {
    releaseRunner();
    await live?.dispose();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  for (const variant of VARIANTS) {
    it(`${variant.name}: every tab and every item`, async () => {
      const opened: OpenPage = variant === VARIANTS[0] ? live : await live.openOn(variant);
      const { page } = opened;
      const narrow = variant.viewport.width === 360;
      const problems: string[] = [];
      try {
        expect(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches)).toBe(variant.colorScheme === 'dark');
        const cards = page.locator('[data-testid="inbox-card"]');
        for (const kind of ['approval', 'checkin', 'actionable', 'failing'])
          await cards
            .and(page.locator(`[data-kind="${kind}"]`))
            .first()
            .waitFor();

        // 1. Needs you first: right after the header (and the banners), above the tab's own content.
        const order = await page.evaluate(() => {
          const inbox = document.querySelector('[data-testid="inbox"]')!;
          const before: string[] = [];
          for (let e = inbox.previousElementSibling; e; e = e.previousElementSibling) before.push(e.tagName === 'HEADER' ? 'header' : e.className);
          return { before, top: inbox.getBoundingClientRect().top, main: document.querySelector('main[role="tabpanel"]')!.getBoundingClientRect().top };
        });
        expect(order.before).toEqual(['banners', 'header']);
        expect(order.top).toBeLessThan(order.main);
        expect(order.top, 'Needs you starts on the first screen').toBeLessThan(variant.viewport.height);
        // The badges and the title count exactly what the inbox holds.
        const counts = async () => ({
          cards: await cards.count(),
          count: Number(await page.getByTestId('inbox-count').textContent()),
          badges: (await page.getByTestId('tab-badge').allTextContents()).reduce((n, b) => n + Number(b), 0),
          title: await page.title(),
        });
        // (Cards show as their sources answer; the count waits for all of them, so it may still say "…".)
        await expect
          .poll(async () => {
            const c = await counts();
            return c.cards >= 4 && c.count === c.cards && c.badges === c.cards && c.title === `(${c.cards}) subconscious` ? 'agree' : JSON.stringify(c);
          })
          .toBe('agree');

        // 2. The approval shows the tool, its server and the arguments; its four answers are visible and labelled.
        const approval = cards.and(page.locator('[data-kind="approval"]')).first();
        expect(await approval.getByTestId('inbox-tool').innerText()).toBe('write_file');
        expect(await approval.getByTestId('inbox-server').innerText()).toBe('fs');
        expect(await approval.locator('[data-arg="content"] pre').innerText()).toBe('Ship on Friday.');
        expect(await approval.locator('[data-arg="path"] pre').isVisible()).toBe(true);
        // Its cost before the asking call is metered says so, not "0 tokens in 0 finished model calls".
        expect(await approval.getByTestId('inbox-cost').innerText()).toMatch(
          /^Nothing counted yet \(the model call that asked for this is counted when it closes\); about [\d,]+ tokens to finish after this call \(an estimate\)$/,
        );
        for (const name of ['Accept', 'Edit the arguments', 'Respond', 'Ignore']) {
          const button = approval.getByRole('button', { name: new RegExp(`^${name}`) });
          expect(await button.count(), name).toBe(1);
          const box = (await button.boundingBox())!;
          expect(box.x, `${name} is inside the screen`).toBeGreaterThanOrEqual(0);
          expect(box.x + box.width, `${name} is inside the screen`).toBeLessThanOrEqual(variant.viewport.width);
          expect(box.height, `${name} can be hit`).toBeGreaterThanOrEqual(24);
        }
        // The same card serves the heartbeat's check-in (nothing to edit) and the actionable to confirm.
        const checkin = cards.and(page.locator('[data-kind="checkin"]')).first();
        for (const name of ['Try again', 'Respond', 'Ignore'])
          expect(await checkin.getByRole('button', { name: new RegExp(`^${name}`) }).isVisible()).toBe(true);
        expect(await cards.and(page.locator('[data-kind="actionable"]')).first().innerText()).toContain('Pay ACME invoice 2291');
        // 4. One voice for the failing world: one banner, not one per place.
        expect(await page.locator('.banners .banner').count()).toBeLessThanOrEqual(1);
        // 5. Screen readers hear the inbox.
        expect(await page.getByTestId('inbox-live').getAttribute('aria-live')).toBe('polite');

        // Every tab: in view and clickable at 360 px; no sideways scroll, contrast, plain words; a screenshot.
        const tabs = await page.getByRole('tab').all();
        expect(tabs.length).toBeGreaterThanOrEqual(7);
        for (const tab of tabs) {
          const label = (await tab.getAttribute('id'))!.replace(/^tab-/, '');
          await tab.scrollIntoViewIfNeeded();
          const box = (await tab.boundingBox())!;
          expect(box.x, `tab ${label} in view`).toBeGreaterThanOrEqual(0);
          expect(box.x + box.width, `tab ${label} in view`).toBeLessThanOrEqual(variant.viewport.width);
          // Nothing covers it: the point at its middle is the tab.
          const hit = await page.evaluate(
            ([x, y]) => document.elementFromPoint(x!, y!)?.closest('[role="tab"]')?.id ?? null,
            [box.x + box.width / 2, box.y + box.height / 2],
          );
          expect(hit, `tab ${label} is not covered`).toBe(`tab-${label}`);
          await tab.click();
          await page.locator(`[role="tab"][aria-selected="true"]#tab-${label}`).waitFor();
          await page.locator(`main#panel-${label}`).waitFor();
          await tabContent(page, label, narrow);
          await page.evaluate(() => document.fonts.ready);
          await page.waitForTimeout(150);
          const over = await sideways(page);
          if (over > 0) problems.push(`${label}: scrolls ${over} px sideways`);
          // At 1280 px nothing needs its own sideways scroller; on a phone a wide table may have one.
          if (!narrow) for (const box of await innerScrollers(page)) problems.push(`${label}: ${box} scrolls sideways`);
          for (const f of await contrastFailures(page))
            problems.push(`${label}: contrast ${f.ratio} < ${f.needed} for "${f.text}" (${f.color} on ${f.background})`);
          const body = await page.locator('body').innerText();
          const words = INTERNAL_WORDS.exec(body);
          if (words) problems.push(`${label}: internal word "${words[0]}" in "${body.slice(Math.max(0, words.index - 60), words.index + 30)}"`);
          await page.screenshot({ path: path.join(SHOTS, `${variant.name}-${label}.png`), fullPage: true, animations: 'disabled' });
        }
        expect(problems).toEqual([]);
        expect(await opened.cspViolations()).toEqual([]);
        expect(opened.errors).toEqual([]);

        // 9. Disconnected means disabled, with the reason: the browser goes offline (the daemon keeps running).
        await page.getByRole('tab', { name: 'Subconscious' }).click();
        await opened.browser.context.setOffline(true);
        try {
          // Opening a tab asks the daemon at once (else the next status poll notices, up to 10 s later).
          await page.getByRole('tab', { name: 'Bots' }).click();
          await page.getByRole('tab', { name: 'Subconscious' }).click();
          await page.getByTestId('banner-unreachable').waitFor({ timeout: 20_000 });
          const accept = approval.getByRole('button', { name: /^Accept/ });
          await expect.poll(() => accept.isDisabled()).toBe(true);
          expect(await accept.getAttribute('title')).toBe(OFFLINE_REASON);
          // The header agrees with the banner.
          expect(await page.getByTestId('live-state').innerText()).toBe('Offline');
          expect(await page.getByRole('button', { name: 'Run all now' }).isDisabled()).toBe(true);
          expect(await page.getByRole('switch', { name: 'Enable Tasks' }).isDisabled()).toBe(true);
          expect(await sideways(page), 'offline').toBeLessThanOrEqual(0);
          await page.screenshot({ path: path.join(SHOTS, `${variant.name}-offline.png`), animations: 'disabled' });
        } finally {
          await opened.browser.context.setOffline(false);
        }
        await page.getByRole('tab', { name: 'Bots' }).click();
        await page.getByRole('tab', { name: 'Subconscious' }).click();
        await page.getByTestId('banner-unreachable').waitFor({ state: 'detached', timeout: 20_000 });
      } finally {
        if (opened !== live) await opened.close();
      }
    }, 60_000);
  }

  /** What each tab shows of the items (waited for, so the screenshot has it). */
  async function tabContent(page: Page, tab: string, narrow: boolean): Promise<void> {
    if (tab === 'subconscious') {
      // 5. The log's live region; 8. Settings on the page, each value with where it came from.
      expect(await page.getByTestId('log-live').getAttribute('aria-live')).toBe('polite');
      await page.locator('[data-testid="world-tasks"]').waitFor();
      // The failing tasks world wrote no log row: the empty log says why, not "Nothing yet" alone.
      await page.getByTestId('log-empty').filter({ hasText: 'failed before deciding anything' }).waitFor({ timeout: 10_000 });
      const details = page.getByTestId('settings-details');
      if (!(await details.evaluate((d) => (d as HTMLDetailsElement).open))) await details.locator('summary').click();
      expect(await details.locator('[data-testid="setting"][data-key="models.local.model"]').getAttribute('data-source')).toBe('environment');
    }
    if (tab === 'bots') {
      // 3. A run in progress says so; its reply is a live region before any text arrives (one added with its text is not read out).
      await page.locator('[data-testid="bot-item"][data-bot-name="runner"]').click();
      const reply = page.locator('[data-testid="message"][data-role="bot"]').last();
      expect(await reply.getByTestId('message-waiting').innerText()).toBe('Thinking…');
      expect(await reply.getByTestId('message-live').getAttribute('aria-live')).toBe('polite');
      expect(await page.getByTestId('thread-status').getAttribute('data-status')).toBe('working');
    }
    if (tab === 'actionables') {
      // 7. A grid at 1280 (cards side by side), one column at 360; the one to confirm offers its action.
      const items = page.getByTestId('actionable');
      await items.nth(2).waitFor();
      const xs = new Set(await items.evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().left))));
      if (narrow) expect(xs.size, 'one column at 360 px').toBe(1);
      else expect(xs.size, 'side by side at 1280 px').toBeGreaterThan(1);
      expect(await page.getByTestId('actionable-confirm').isVisible()).toBe(true);
      expect(await page.getByTestId('memory-document-link').first().isVisible()).toBe(true);
    }
  }
});
