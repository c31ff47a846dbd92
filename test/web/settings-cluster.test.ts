/**
 * Issue 23's Settings, complete, in real Chromium against the real daemon:
 * - the heartbeat's settings (mode, quiet hours, budgets) are in the Settings section, saying they
 *   are kept in the database for the whole cluster, edited through the Bots tab's RPC
 *   (`bots.set_heartbeat_settings`): a refusal shows under its field and changes nothing, a saved
 *   value is in the daemon's settings and on the Bots tab's own form;
 * - a world off in subconscious.toml is switched on from Settings without a restart: the file
 *   changes, the world ticks, its card's switch and status follow; switched off again it stops;
 * - at 1280×800 and 360 px, light and dark, nothing scrolls sideways, the contrast holds and the
 *   Mode choice is as wide as its options (not the whole row).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeartbeatSnapshot, StatusResult } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, scriptedModelEnv, type ModelServer } from '../support/model-server.js';
import { contrastFailures } from './support/a11y.js';
import { horizontalOverflow, launchBrowser, SCREENSHOT_DIR, VIEWPORTS, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const CONFIG = ['# keep this', '[worlds.tasks]', 'enabled = false', '', '[worlds.steering]', 'enabled = false # off for now', ''].join('\n');

describe('Settings: the heartbeat and a world switched on live', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;

  const heartbeat = () => page.locator('[data-testid="settings-heartbeat"]');
  const hbField = (key: string) => heartbeat().locator(`[data-testid="hb-field-${key}"]`);
  const settings = async () => (await daemon.rpc<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [] })).settings;
  const steering = async () => (await daemon.rpc<StatusResult>('subconscious.status')).instances.find((i) => i.world === 'steering')!;
  const enabledField = () => page.locator('[data-testid="live-setting"][data-key="worlds.steering.enabled"]');
  const card = () => page.locator('[data-testid="world-steering"]');

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    server.handle(() => ({ status: 400, message: 'settings test: no model call expected' }));
    daemon = await startDaemon({ config: CONFIG, env: scriptedModelEnv(server) });
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

  it('shows the heartbeat settings, kept in the database for the whole cluster; a refusal changes nothing', async () => {
    await heartbeat().scrollIntoViewIfNeeded();
    expect(await page.locator('[data-testid="settings"] h3').allInnerTexts()).toEqual([
      'Kept in subconscious.toml',
      'Kept in the database, for the whole cluster',
    ]);
    expect(await heartbeat().locator('summary').innerText()).toBe('Heartbeat, for all bots');
    expect(await heartbeat().locator('[data-testid="heartbeat-settings-where"]').innerText()).toContain(
      'They are kept in the database, for the whole cluster: every worker on it uses a change at once.',
    );
    const before = await settings();
    expect(await hbField('mode').locator('select').inputValue()).toBe(before.mode);
    expect(await hbField('global_pulses_per_day').locator('input').inputValue()).toBe(String(before.global_pulses_per_day));

    await hbField('tick_seconds').locator('input').fill('5');
    await heartbeat().getByRole('button', { name: 'Save' }).click();
    const error = heartbeat().locator('[data-testid="heartbeat-settings-error"][data-field="tick_seconds"]');
    await error.waitFor();
    expect(await error.innerText()).toBe('Must be at least 15');
    expect(await hbField('tick_seconds').locator('input').getAttribute('aria-invalid')).toBe('true');
    expect(await contrastFailures(page), 'the refusal').toEqual([]);
    expect(await settings()).toEqual(before);
    await heartbeat().getByRole('button', { name: 'Discard changes' }).click();
  });

  it('saves the mode, quiet hours and a budget through the Bots tab’s RPC (bots.set_heartbeat_settings), in the database', async () => {
    await hbField('mode').locator('select').selectOption('shadow');
    await hbField('quiet_hours').getByLabel('Keep quiet hours').check();
    await hbField('quiet_hours').getByLabel('from').fill('22:30');
    await hbField('quiet_hours').getByLabel('to').fill('07:00');
    await hbField('global_pulses_per_day').locator('input').fill('40');
    await heartbeat().getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => heartbeat().locator('[data-testid="heartbeat-settings-status"]').innerText()).toMatch(/^Saved /);
    const after = await settings();
    expect(after).toMatchObject({ mode: 'shadow', quiet_hours: { enabled: true, start: '22:30', end: '07:00' }, global_pulses_per_day: 40 });
    expect(after.overridden).toEqual(expect.arrayContaining(['mode', 'quiet_hours', 'global_pulses_per_day']));
    // Stored in the database, not in the file.
    expect(readFileSync(path.join(daemon.workspace, 'subconscious.toml'), 'utf8')).toBe(CONFIG);
    // Each field now says it was changed here, with a way back to the file's value.
    // (The form reads the settings again after its save: it may still show the file's value for a moment.)
    await expect.poll(() => hbField('global_pulses_per_day').innerText()).toContain('(changed here)');
  });

  it('a world off in the file is switched on from Settings without a restart, and off again', async () => {
    expect(await steering()).toMatchObject({ enabled: false, disabled_by: '[worlds.steering] enabled = false in subconscious.toml' });
    await enabledField().scrollIntoViewIfNeeded();
    const box = enabledField().getByLabel('Steering: on');
    expect(await box.isChecked()).toBe(false);
    expect(await card().locator('[data-testid="world-disabled-by"]').innerText()).toContain('enabled = false in subconscious.toml');
    // The box shows the daemon's value: it turns on once the change is in effect.
    await box.click();
    await enabledField().locator('[data-testid="live-setting-saved"]').waitFor();
    expect(await enabledField().locator('[data-testid="live-setting-saved"]').innerText()).toBe(
      'Saved to subconscious.toml and in effect now, on every worker.',
    );
    expect(readFileSync(path.join(daemon.workspace, 'subconscious.toml'), 'utf8')).toBe(CONFIG.replace('enabled = false # off', 'enabled = true # off'));
    // It ticks now (a quiet tick: nothing to review), and its card says it is on.
    await expect.poll(async () => (await steering()).total_ticks, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(await steering()).toMatchObject({ enabled: true, disabled_by: null });
    await expect.poll(() => card().getByRole('switch', { name: 'Enable Steering' }).getAttribute('aria-checked')).toBe('true');
    expect(await card().locator('[data-testid="world-disabled-by"]').count()).toBe(0);

    await box.click();
    await expect.poll(async () => (await steering()).disabled_by).toBe('[worlds.steering] enabled = false in subconscious.toml');
    await expect.poll(() => card().getByRole('switch', { name: 'Enable Steering' }).getAttribute('aria-checked')).toBe('false');
    expect(await card().locator('[data-testid="world-run-off"]').innerText()).toContain('switch it on here');
    // The card's own switch writes the file's setting when the file had it off.
    await card().getByRole('switch', { name: 'Enable Steering' }).click();
    await expect.poll(async () => (await steering()).enabled).toBe(true);
    await expect.poll(() => box.isChecked()).toBe(true);
    expect(readFileSync(path.join(daemon.workspace, 'subconscious.toml'), 'utf8')).toContain('enabled = true # off for now');
  });

  it('at 1280×800 and 360 px, light and dark, the Settings section does not scroll sideways and keeps its contrast', async () => {
    const section = page.locator('[data-testid="settings"]');
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const size of VIEWPORTS) {
        await page.setViewportSize(size);
        await heartbeat().scrollIntoViewIfNeeded();
        expect(await horizontalOverflow(page), `${scheme}, ${size.width} px`).toBe(0);
        expect(await contrastFailures(page), `${scheme}, ${size.width} px`).toEqual([]);
        // The Mode choice is as wide as its longest option, not the whole row (it was 1,150 px at 1280).
        const mode = (await hbField('mode').locator('select').boundingBox())!;
        expect(mode.width, `${scheme}, ${size.width} px: the Mode select`).toBeLessThan(200);
        const box = (await section.boundingBox())!;
        await page.screenshot({
          path: path.join(SCREENSHOT_DIR, `settings-complete-${scheme}-${size.width}.png`),
          fullPage: true,
          clip: { x: 0, y: box.y + (await page.evaluate(() => window.scrollY)), width: size.width, height: Math.min(box.height, 2400) },
          animations: 'disabled',
        });
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(watched.errors).toEqual([]);
  });
});
