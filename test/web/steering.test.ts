/**
 * The Steering tab in real Chromium against the real daemon (offline harness, the steering world
 * on the scripted model server): empty states that say what will appear; a channel message sent
 * from the page whose cycle appears live with its path and the gate's decision; a critical one
 * that the gate forwards, after which the steering world's directive shows with its remaining
 * cycles; the next cycles steered by it; its expiry, after which the default line is back and the
 * history says "expired". Keyboard focus, contrast (light and dark), 360 px, screenshots.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CycleRow, SteeringCurrent } from '../../src/protocol/index.js';
import { DEFAULT_STEERING_LINE } from '../../src/protocol/steering.js';
import { STEERING_SYSTEM } from '../../src/worlds/steering/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.js';
import { contrastFailures, walkFocus } from './support/a11y.js';
import { horizontalOverflow, launchBrowser, screenshots, VIEWPORTS, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const DIRECTIVE = 'Stabilise the billing deploy before taking on new Acme requests.';
const text = (r: RecordedRequest, role: string) => String((r.body?.messages ?? []).find((m) => m.role === role)?.content ?? '');

describe('Steering tab in Chromium', () => {
  let browser: TestBrowser;
  let models: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;

  beforeAll(async () => {
    await ensurePageBuilt();
    models = await startModelServer();
    // Only the steering world calls a model here (the harness runs offline; tasks are off). Its
    // first review steers for two cycles; any later one finds nothing to steer.
    models.handle((req) => {
      if (!text(req, 'system').startsWith(STEERING_SYSTEM.split('\n')[0]!)) return { status: 400, message: 'steering page test: unscripted request' };
      return { text: text(req, 'user').includes('Reviewed before: up to cycle 0.') ? `STEERING_DIRECTIVE: ${DIRECTIVE}\nexpires_after_cycles: 2` : 'NONE' };
    });
    daemon = await startDaemon({
      config: '[worlds.tasks]\nenabled = false\n\n[worlds.orchestration]\nmode = "offline"\n',
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
        SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    await page.getByRole('tab', { name: 'Steering' }).click();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await models?.close();
  });

  const cycle = (seq: number) => page.locator(`[data-testid="cycle-row"][data-seq="${seq}"]`);
  const send = async (channel: string, message: string) => {
    await page.getByRole('textbox', { name: 'Channel', exact: true }).fill(channel);
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill(message);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  /** The daemon's own answer (what the page must agree with). */
  const current = () => daemon.rpc<SteeringCurrent>('steering.current');

  it('says plainly what is empty and what the words mean', async () => {
    await page.locator('[data-testid="cycles-empty"]').waitFor();
    expect(await page.locator('[data-testid="cycles-empty"]').innerText()).toContain('No cycles yet. Send a channel message above');
    expect(await page.locator('[data-testid="history-empty"]').innerText()).toContain('No directive yet.');
    const none = page.locator('[data-testid="directive-none"]');
    expect(await none.innerText()).toContain('No directive is in force.');
    expect(await none.innerText()).toContain(DEFAULT_STEERING_LINE);
    expect(await page.locator('[data-testid="last-review"]').innerText()).toMatch(/^No review yet: .* every 30 minutes/);
    expect(await page.locator('[data-testid="harness-line"]').innerText()).toContain('Harness in offline mode');
    // Offline mode is said at the top of the tab in a banner, not only in small grey text (issue 23).
    const offline = page.locator('[data-testid="steering-offline"]');
    expect(await offline.innerText()).toMatch(/^Offline mode: no model answers here\. .*not replies\..*mode = "live"/s);
    expect((await offline.boundingBox())!.y).toBeLessThan((await page.locator('[data-testid="harness-line"]').boundingBox())!.y);
    const terms = await page.locator('.steering-terms').innerText();
    for (const word of ['Cycle', 'Gate', 'Directive']) expect(terms).toContain(word);

    await screenshots(page, 'steering-empty');
    expect(await contrastFailures(page)).toEqual([]);
    // An empty message is refused on the page, next to its field.
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('   ');
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await page.locator('[data-testid="send-error"]').innerText()).toBe('Write the message first.');
    expect(await page.getByRole('textbox', { name: 'Message', exact: true }).getAttribute('aria-invalid')).toBe('true');
    // A channel the daemon refuses: its reason, on the channel field.
    await send('two words', 'Hello');
    await page.locator('[data-testid="send-error"]', { hasText: 'channel' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Channel', exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await daemon.rpc<CycleRow[]>('orchestration.cycles')).toEqual([]);
  });

  it('a message sent from the page runs a cycle that appears live, with its path and the gate holding', async () => {
    await send('slack', 'Acme asks why invoice 1042 was charged twice.');
    const row = cycle(1);
    await row.waitFor();
    await page.locator('[data-testid="cycle-row"][data-seq="1"][data-status="done"]').waitFor();
    expect(await page.locator('[data-testid="send-error"]').count()).toBe(0);
    expect(await page.getByRole('textbox', { name: 'Message', exact: true }).inputValue()).toBe(''); // cleared for the next one
    expect(await row.locator('[data-testid="cycle-path"] li').allInnerTexts()).toEqual([
      'message in',
      'quick tier',
      'reasoning tier',
      'gate',
      'quick tier',
      'context manager',
      'end',
    ]);
    const gate = row.locator('[data-testid="cycle-gate"]');
    expect(await gate.getAttribute('data-forwarded')).toBe('false');
    expect(await gate.innerText()).toBe('Held 1 change (it forwards at 3).');
    expect(await row.locator('[data-testid="cycle-directive"]').innerText()).toBe('no directive (the default line)');
    expect(await row.locator('[data-testid="cycle-diff"]').innerText()).toMatch(/^acme: request handled .* Δ 0\.\d+$/);
    expect(await row.innerText()).toContain('Acme asks why invoice 1042 was charged twice.');
    // The offline answer is marked as a stand-in, so it does not read like a real reply.
    expect(await row.locator('[data-testid="cycle-response"] [data-testid="cycle-stand-in"]').innerText()).toBe('offline stand-in, not a model’s reply');
    expect(await row.locator('dt', { hasText: 'Stand-in answer' }).count()).toBe(1);
  });

  it('a critical message is forwarded by the gate; the steering world’s directive appears with its remaining cycles', async () => {
    await send('telegram', 'Critical outage: the billing deploy health check is failing.');
    const row = page.locator('[data-testid="cycle-row"][data-seq="2"][data-status="done"]');
    await row.waitFor();
    expect(await row.locator('[data-testid="cycle-gate"]').getAttribute('data-forwarded')).toBe('true');
    expect(await row.locator('[data-testid="cycle-gate"]').innerText()).toMatch(
      /^Forwarded 2 changes for review: the reasoning tier flagged something critical\.\nFlagged: critical anomaly terms/,
    );
    expect((await row.locator('[data-testid="cycle-path"] li').allInnerTexts()).slice(-2)).toEqual(['subconscious', 'end']);
    expect(await row.locator('[data-testid="cycle-diff"]').innerText()).toContain('critical');

    // The gate woke the steering world; its review wrote the directive, and the page shows it live.
    const shown = page.locator('[data-testid="directive-current"]');
    await shown.waitFor({ timeout: 15_000 });
    expect(await shown.locator('.directive-text').innerText()).toBe(DIRECTIVE);
    expect(await shown.getAttribute('data-remaining')).toBe('2');
    expect(await shown.locator('[data-testid="directive-remaining"]').innerText()).toBe('2 cycles left');
    expect(await shown.innerText()).toContain('steers cycles 3–4 · made after cycle 2 from a review of cycles 1–2');
    await page.locator('[data-testid="last-review"]', { hasText: 'Last review: wrote a directive after reading 2 cycles' }).waitFor();
    expect(await page.locator('[data-testid="directive-row"][data-status="active"]').innerText()).toContain(DIRECTIVE);
    expect(await current()).toMatchObject({ directive: { text: DIRECTIVE }, remaining_cycles: 2 });
    await screenshots(page, 'steering-directive');
  });

  it('the next cycles are steered by it, and it expires after two: the default line is back', async () => {
    await send('slack', 'Acme confirms the refund for invoice 1042 arrived.');
    await page.locator('[data-testid="cycle-row"][data-seq="3"][data-status="done"]').waitFor();
    expect(await cycle(3).locator('[data-testid="cycle-directive"]').innerText()).toBe(DIRECTIVE);
    await page.locator('[data-testid="directive-current"][data-remaining="1"]').waitFor();
    expect(await page.locator('[data-testid="directive-remaining"]').innerText()).toBe('1 cycle left');

    await send('email', 'Draft the weekly billing summary for Acme.');
    await page.locator('[data-testid="cycle-row"][data-seq="4"][data-status="done"]').waitFor();
    expect(await cycle(4).locator('[data-testid="cycle-directive"]').innerText()).toBe(DIRECTIVE);
    // Expired: said plainly, the default line shown, the history row marked.
    const none = page.locator('[data-testid="directive-none"]');
    await none.waitFor();
    expect(await none.innerText()).toContain(DEFAULT_STEERING_LINE);
    const past = page.locator('[data-testid="directive-row"][data-status="expired"]');
    await past.waitFor();
    expect(await past.innerText()).toContain('expired');
    expect(await past.innerText()).toContain(DIRECTIVE);
    expect(await current()).toMatchObject({ directive: null, injected: DEFAULT_STEERING_LINE, current_cycle: 4 });
    expect(await page.locator('[data-testid="cycle-row"]').count()).toBe(4);

    // The event log and the compressed history are one click away.
    await cycle(2).locator('summary').click();
    expect(await cycle(2).locator('.event-log').innerText()).toContain('subconscious_eval: forwarded to the steering world (escalation)');
    expect(await cycle(2).locator('.cycle-details').innerText()).toMatch(/Compressed for the steering world: \d+ → \d+ tokens/);
    await screenshots(page, 'steering-expired');
  });

  it('keeps keyboard focus visible, text readable in light and dark, and fits 360 px', async () => {
    const stops = await walkFocus(page);
    // Tabs, channel, message, Send, the event-log toggles…
    expect(stops.length).toBeGreaterThanOrEqual(8);
    expect(stops.filter((s) => s.problem !== null)).toEqual([]);
    expect(await contrastFailures(page)).toEqual([]);
    await page.setViewportSize(VIEWPORTS[1]);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.setViewportSize(VIEWPORTS[0]);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await contrastFailures(page)).toEqual([]);
    await screenshots(page, 'steering-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    // Every control has a name a screen reader can say.
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('[role="tabpanel"] button, [role="tabpanel"] input, [role="tabpanel"] textarea, [role="tabpanel"] summary')]
        .filter((el) => {
          const label = el.getAttribute('aria-label') || (el as HTMLInputElement).labels?.[0]?.textContent || el.textContent;
          return !label || !label.trim();
        })
        .map((el) => el.outerHTML.slice(0, 120)),
    );
    expect(unnamed).toEqual([]);
    expect(watched.errors).toEqual([]);
  });
});

describe('Steering tab with the steering world off in the config', () => {
  it('says how to switch it on: the switch on the Subconscious tab writes the config, live', async () => {
    const off = await startDaemon({
      config: '[worlds.tasks]\nenabled = false\n[worlds.steering]\nenabled = false\n',
      env: { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    await ensurePageBuilt();
    const browser = await launchBrowser();
    try {
      const { page, errors } = await browser.newPage();
      await page.goto(off.pageUrl);
      await page.getByRole('tab', { name: 'Steering' }).click();
      const note = page.locator('[data-testid="steering-off"]');
      await note.waitFor();
      expect(await note.innerText()).toContain(
        'Switch it on in the Subconscious tab: that sets enabled = true under [worlds.steering] in subconscious.toml, and it applies at once.',
      );
      expect(await note.innerText()).not.toContain('restart');
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      await off.dispose();
    }
  }, 60_000);
});
