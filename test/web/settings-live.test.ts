/**
 * Issue 23 §8 in real Chromium against the real daemon: a world's interval is changed from the
 * Settings section; a bad value is refused under its field and nothing changes; the new value is
 * in effect at once (the world's next tick moves to its last tick plus the new interval, on the
 * page and in status), written to subconscious.toml with the file's comments kept, and still in
 * effect after the daemon restarts. A value set by the environment says so and offers no field.
 * At 360 px the Settings section does not scroll sideways, in light and dark.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusResult } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { horizontalOverflow, launchBrowser, SCREENSHOT_DIR, type TestBrowser, type WatchedPage } from './support/browser.js';
import { contrastFailures } from './support/a11y.js';
import { ensurePageBuilt } from './support/page-build.js';

const CONFIG = ['# my daemon: keep this line', '[worlds.steering]', '# how often the steering world looks', 'interval_minutes = 30 # half an hour', ''].join(
  '\n',
);
const KEY = 'worlds.steering.interval_minutes';

describe('Settings changed on the page, live', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;

  const steering = async () => (await daemon.rpc<StatusResult>('subconscious.status')).instances.find((i) => i.world === 'steering')!;
  const field = () => page.locator(`[data-testid="live-setting"][data-key="${KEY}"]`);
  const nextTickAt = async () => Number(await field().locator('[data-testid="next-tick"]').getAttribute('data-at'));

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    daemon = await startDaemon({
      config: CONFIG,
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    // The steering world ticks at start (a quiet tick: nothing to review); its end is event-driven, so wait on the status.
    for (let i = 0; (await steering()).last_tick_at === null; i++) {
      if (i > 300) throw new Error('the steering world never ticked');
      await new Promise((r) => setTimeout(r, 100));
    }
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('refuses a bad interval under its field and changes nothing', async () => {
    const before = await steering();
    await field().scrollIntoViewIfNeeded();
    const input = field().getByLabel('Steering: minutes between looks');
    expect(await input.inputValue()).toBe('30');
    await input.fill('0');
    await field().getByRole('button', { name: 'Save' }).click();
    const error = field().locator('[data-testid="live-setting-error"]');
    await error.waitFor();
    expect(await error.innerText()).toContain(`${KEY}: at least 1 (got 0); nothing was changed.`);
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    expect(await contrastFailures(page), 'the refusal').toEqual([]);
    expect(readFileSync(path.join(daemon.workspace, 'subconscious.toml'), 'utf8')).toBe(CONFIG);
    expect((await steering()).interval_minutes).toBe(30);
    expect((await steering()).next_tick_at).toBe(before.next_tick_at);
  });

  it('a new interval moves the next tick at once, is written keeping the comments, and survives a restart', async () => {
    const before = await steering();
    expect(await nextTickAt()).toBe(before.next_tick_at);
    const input = field().getByLabel('Steering: minutes between looks');
    await input.fill('45');
    await field().getByRole('button', { name: 'Save' }).click();
    await field().locator('[data-testid="live-setting-saved"]').waitFor();
    expect(await contrastFailures(page), 'the saved line').toEqual([]);
    // In effect now: the next tick is the last one plus 45 minutes, in status and on the page.
    const after = await steering();
    expect(after.interval_minutes).toBe(45);
    expect(after.next_tick_at).toBe(before.last_tick_at! + 45 * 60_000);
    await expect.poll(nextTickAt).toBe(after.next_tick_at);
    expect(await field().locator('.live-setting-hint').innerText()).toContain('Set in subconscious.toml');
    // One line of the file changed; its comments stayed.
    expect(readFileSync(path.join(daemon.workspace, 'subconscious.toml'), 'utf8')).toBe(CONFIG.replace('interval_minutes = 30 #', 'interval_minutes = 45 #'));
    // The world card says the new cadence too.
    await expect.poll(() => page.locator('[data-testid="world-steering"]').innerText()).toContain('every 45 minutes');

    await daemon.restart();
    await page.reload();
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    expect(await field().getByLabel('Steering: minutes between looks').inputValue()).toBe('45');
    expect((await steering()).interval_minutes).toBe(45);
    expect((await daemon.rpc<{ values: Array<{ key: string; source: string }> }>('subconscious.config')).values.find((v) => v.key === KEY)!.source).toBe(
      'file',
    );
  });

  it('a value set by the environment says so and offers no field', async () => {
    expect(await page.locator('[data-testid="live-setting"][data-key="models.local.model"]').count()).toBe(0);
    const details = page.locator('[data-testid="settings-details"]');
    await details.locator('summary').click();
    const row = details.locator('[data-testid="setting"][data-key="models.local.model"]');
    expect(await row.locator('td').nth(2).innerText()).toContain('set by an environment variable, which wins over subconscious.toml');
    expect(await details.locator(`[data-testid="setting"][data-key="${KEY}"] td`).nth(2).innerText()).toBe('above, on this page');
  });

  it('a hand edit of subconscious.toml shows on the page at once; a broken one is shown until it is fixed', async () => {
    const file = path.join(daemon.workspace, 'subconscious.toml');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, good.replace('interval_minutes = 45', 'interval_minutes = 50'));
    await expect.poll(() => field().getByLabel('Steering: minutes between looks').inputValue(), { timeout: 10_000 }).toBe('50');
    expect((await steering()).interval_minutes).toBe(50);

    writeFileSync(file, '[worlds.steering\n');
    const error = page.locator('[data-testid="config-file-error"]');
    await error.waitFor({ timeout: 10_000 });
    expect(await error.innerText()).toContain('subconscious.toml has an error:');
    expect(await error.innerText()).toContain('still using the last good settings');
    // The status bar says it too, whatever part of the page is in view.
    expect(await page.locator('[data-testid="status-config-error"]').innerText()).toContain('subconscious.toml has an error');
    expect(await contrastFailures(page), 'the file error').toEqual([]);
    expect((await steering()).interval_minutes).toBe(50);

    writeFileSync(file, good);
    await error.waitFor({ state: 'detached', timeout: 10_000 });
    await page.locator('[data-testid="status-config-error"]').waitFor({ state: 'detached', timeout: 10_000 });
    await expect.poll(() => field().getByLabel('Steering: minutes between looks').inputValue(), { timeout: 10_000 }).toBe('45');
  });

  it('at 360 px, light and dark, the Settings section does not scroll sideways', async () => {
    const section = page.locator('[data-testid="settings"]');
    const details = page.locator('[data-testid="settings-details"]');
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const open of [false, true]) {
        if ((await details.getAttribute('open')) !== (open ? '' : null)) await details.locator('summary').click();
        for (const width of [1280, 360]) {
          await page.setViewportSize({ width, height: width === 360 ? 740 : 800 });
          await field().scrollIntoViewIfNeeded();
          expect(await horizontalOverflow(page)).toBe(0);
          expect(await contrastFailures(page), `${scheme}, ${width} px${open ? ', the table open' : ''}`).toEqual([]);
          const box = (await section.boundingBox())!;
          // The open table is long: its first 1,400 px are enough to look at.
          await page.screenshot({
            path: path.join(SCREENSHOT_DIR, `settings-section-${scheme}-${width}${open ? '-table' : ''}.png`),
            fullPage: true,
            clip: { x: 0, y: box.y + (await page.evaluate(() => window.scrollY)), width, height: Math.min(box.height, 1400) },
            animations: 'disabled',
          });
        }
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    await page.emulateMedia({ colorScheme: 'light' });
    // The restart above cut the page's connections to the daemon for a moment: those failed loads are expected, nothing else.
    expect(watched.errors.filter((e) => !/^console: Failed to load resource: net::ERR_[A-Z_]+ @ http:\/\/127\.0\.0\.1:\d+\/(rpc|events)\b/.test(e))).toEqual(
      [],
    );
  });
});
