/**
 * Issue 18 §6 in real Chromium against the real daemon: an external runtime registered over
 * `/rpc` with its bot, a status reported (a run running) and then a run's outcome with a
 * `BLOCKED:` line — the bot shows on the Bots tab with its runtime's name, its status, its last
 * report and whether the runtime is reachable, read-only with a sentence saying so; the check-in
 * the BLOCKED: line made is under "Needs you", named after the bot and its runtime, without a
 * "Try again" or "Respond" the engine cannot carry out (it says only the runtime can unblock it).
 * Beside the runtime's bots, the list does not say "Bots 0 · No bots yet".
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, scriptedModelEnv, type ModelServer } from '../support/model-server.js';
import { launchBrowser, screenshots, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

describe('an external runtime’s bot on the Bots tab and in Needs you', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    server.handle(() => ({ status: 400, message: 'external bots test: no model call expected' }));
    daemon = await startDaemon({ config: ['[worlds.tasks]', 'enabled = false', ''].join('\n'), env: scriptedModelEnv(server) });
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('shows the bot with its runtime, status, last report and reachability, and the BLOCKED: check-in', async () => {
    await daemon.rpc('runtime.register', {
      runtime_id: 'acme',
      name: 'Acme agents',
      instance_id: 'p1',
      delivery: { kind: 'poll' },
      bots: [{ id: 'writer', name: 'writer', label: 'Writer' }],
    });
    await daemon.rpc('runtime.report', {
      runtime_id: 'acme',
      tasks: [{ id: 'billing-1', bot_id: 'writer', title: 'Connect the billing API', status: 'working' }],
      runs: [{ id: 'run-1', bot_id: 'writer', task_id: 'billing-1', status: 'running' }],
    });

    await page.getByRole('tab', { name: 'Bots' }).click();
    const item = page.locator('[data-testid="external-bot-item"][data-bot-name="writer"]');
    await item.waitFor({ timeout: 30_000 });
    expect(await item.locator('[data-testid="external-bot-runtime"]').innerText()).toBe('@writer · in Acme agents');
    await expect.poll(() => item.getAttribute('data-status'), { timeout: 15_000 }).toBe('working');
    expect(await item.locator('[data-testid="external-bot-status"]').innerText()).toContain('working on “Connect the billing API”');
    expect(await item.locator('[data-testid="external-bot-reported"]').innerText()).toMatch(/^last report /);
    expect(await item.locator('[data-testid="external-bot-reachable"]').innerText()).toBe('Acme agents is reachable');
    expect(await page.locator('[data-testid="external-bots-note"]').innerText()).toMatch(/cannot talk to them or change them/);
    // With no bot of the page's own, the intro says where the runtime's bots are (not "No bots yet").
    expect(await page.locator('[data-testid="bots-external-only"] h2').innerText()).toBe('Your runtime’s bots are on the left');
    expect(await page.locator('[data-testid="bots-empty"]').count()).toBe(0);
    // The page's own (none) are not announced as "Bots 0 · No bots yet" beside them.
    expect(await page.locator('[data-testid="own-bots-heading"]').innerText()).toBe('This page’s bots');
    expect(await page.locator('[data-testid="own-bots-empty"]').innerText()).toBe('None made on this page yet; your runtimes’ bots are listed below.');
    expect(await page.locator('.bot-nav').innerText()).not.toMatch(/No bots yet|Bots\s*0/);
    // Read-only: nothing to press on the runtime's bot.
    expect(await item.locator('button').count()).toBe(0);

    // The run ends blocked: the heartbeat asks the person.
    await daemon.rpc('runtime.report', {
      runtime_id: 'acme',
      tasks: [{ id: 'billing-1', bot_id: 'writer', status: 'failed', error_kind: 'unknown', error: 'no API key' }],
      runs: [{ id: 'run-1', bot_id: 'writer', task_id: 'billing-1', status: 'failed', outcome: 'BLOCKED: waiting for the billing API key' }],
    });
    await expect.poll(() => item.getAttribute('data-status'), { timeout: 15_000 }).toBe('idle');
    const card = page.locator('[data-testid="inbox-card"][data-kind="checkin"]').filter({ hasText: 'waiting for the billing API key' });
    await card.waitFor({ timeout: 30_000 });
    expect(await card.innerText()).toContain('Writer (in Acme agents)');
    // Only the runtime can give a blocked bot what it waits for: no Try again, no Respond (this page cannot write to its thread).
    expect(await card.getByRole('button', { name: /^Try again/ }).count()).toBe(0);
    expect(await card.getByRole('button', { name: /^Respond/ }).count()).toBe(0);
    expect(await card.locator('[data-testid="inbox-runtime-note"]').innerText()).toMatch(
      /^Only Acme agents can unblock it: give the bot what it needs there\./,
    );
    expect(await card.getByRole('button', { name: /^Ignore/ }).count()).toBe(1);
    await screenshots(page, 'external-bots');
    expect(watched.errors).toEqual([]);
  });
});
