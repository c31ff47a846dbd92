/**
 * The built page still works under the daemon's Content-Security-Policy (self only, no inline
 * script or style): real Chromium against the real daemon, every tab opened with data in it
 * (a tick ran, so the activity log and the Usage chart — whose swatches get their colour from a
 * React `style` prop — have something to draw), and not one CSP violation reported.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../../src/server/headers.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { scriptPageModels } from '../web/support/models.js';
import { ensurePageBuilt } from '../web/support/page-build.js';

let browser: TestBrowser;
let models: ModelServer;
let daemon: TestDaemon;

beforeAll(async () => {
  await ensurePageBuilt();
  models = await startModelServer();
  scriptPageModels(models);
  daemon = await startDaemon({
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
  });
  // One evaluated tick: log rows and ledger rows for the tabs to show.
  for (let i = 0; i < 200; i++) {
    const rows = await daemon.rpc<{ decision: string }[]>('subconscious.log_list');
    if (rows.length && rows.every((r) => r.decision !== 'in_progress')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await daemon?.dispose();
  await models?.close();
});

describe('the page under the Content-Security-Policy', () => {
  it('loads with the policy and the frame headers, and no tab trips a violation', async () => {
    const { page, errors } = await browser.newPage();
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { __csp: string[] }).__csp = seen;
      document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
    });
    const response = await page.goto(daemon.pageUrl);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['referrer-policy']).toBe('no-referrer');
    await page.locator('[data-testid="status-bar"]').waitFor();
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();

    const tabs = page.getByRole('tab');
    const names = await tabs.allInnerTexts();
    expect(names.length).toBeGreaterThanOrEqual(3);
    for (const name of names) {
      await page.getByRole('tab', { name }).click();
      await page.locator(`[role="tabpanel"]`).first().waitFor();
      await page.waitForTimeout(300); // let the tab fetch and draw
    }
    // The Usage chart drew its swatches: inline style *properties* set by React are allowed.
    await page.getByRole('tab', { name: /usage/i }).click();
    await page.locator('.swatch').first().waitFor();
    expect(
      await page
        .locator('.swatch')
        .first()
        .evaluate((el) => getComputedStyle(el).backgroundColor),
    ).not.toBe('rgba(0, 0, 0, 0)');

    expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('cannot be framed by another page', async () => {
    const { page } = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (m) => violations.push(m.text()));
    await page.setContent(`<iframe id="f" src="${daemon.url}/"></iframe>`);
    await page.waitForTimeout(500);
    const framed = page.frames().find((f) => f.url().startsWith(daemon.url));
    // Chromium blocks the frame: no page document from the daemon is rendered in it.
    const rendered = framed
      ? await framed
          .locator('#root')
          .count()
          .catch(() => 0)
      : 0;
    expect(rendered).toBe(0);
    await page.close();
  });
});
