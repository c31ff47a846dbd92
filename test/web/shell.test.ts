/**
 * The page's shell in real Chromium against the real daemon: the token leaves the address bar
 * and stays for the tab, the page explains how to get a token, and the "unreachable" banner
 * shows when the daemon stops and clears when it is back.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StatusResult } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, unreachableBaseUrl, type ModelServer } from '../support/model-server.js';
import { contrastFailures } from './support/a11y.js';
import { launchBrowser, screenshots, type TestBrowser } from './support/browser.js';
import { scriptPageModels } from './support/models.js';
import { ensurePageBuilt } from './support/page-build.js';

/** Browser noise that is the expected result of what a test did (not a bug of the page). */
const NETWORK_DOWN =
  /ERR_CONNECTION_(REFUSED|RESET|CLOSED|ABORTED)|ERR_SOCKET_NOT_CONNECTED|ERR_EMPTY_RESPONSE|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_NETWORK_CHANGED/;
const REFUSED_TOKEN = /status of 401/;

describe('page shell in Chromium', () => {
  let browser: TestBrowser;
  let models: ModelServer;
  let daemon: TestDaemon;

  beforeAll(async () => {
    await ensurePageBuilt();
    models = await startModelServer();
    scriptPageModels(models);
    daemon = await startDaemon({
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: `${models.baseUrl}`,
        SUBCONSCIOUS_AGENT_BASE_URL: `${models.baseUrl}`,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await models?.close();
  });

  it('takes the token out of the address bar, keeps it for the tab, and works after a reload', async () => {
    const { page, errors } = await browser.newPage();
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="status-bar"]').waitFor();
    expect(page.url()).not.toContain('token=');
    expect(new URL(page.url()).pathname).toBe('/');
    expect(await page.evaluate(() => sessionStorage.getItem('subconscious.token'))).toBe(daemon.token);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();

    await page.reload();
    await page.locator('[data-testid="status-bar"]').waitFor();
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    expect(await page.locator('[data-testid="token-help"]').count()).toBe(0);
    expect(page.url()).not.toContain('token=');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('without a token says where to get one, refuses a wrong one, and accepts a pasted one', async () => {
    const { page, errors } = await browser.newPage();
    await page.goto(`${daemon.url}/`);
    const help = page.locator('[data-testid="token-help"]');
    await help.waitFor();
    const text = await help.innerText();
    expect(text).toContain('.subconscious/token');
    expect(text).toContain('subconscious start');
    await screenshots(page, 'token-help');
    expect(await contrastFailures(page)).toEqual([]);
    expect(errors).toEqual([]); // no token: the page did not even try the daemon

    // One call made with the wrong token is held in flight until a good token has been pasted: its
    // late refusal must not take the new token away (a CI flake: the page fell back to this help).
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let heldAnswered!: () => void;
    const answered = new Promise<void>((r) => (heldAnswered = r));
    let held = 0;
    await page.route('**/rpc', async (route) => {
      if (route.request().headers()['authorization'] !== 'Bearer not-the-token' || held++ > 0) return route.continue();
      await released;
      await route.fulfill({ response: await route.fetch() });
      heldAnswered();
    });
    await page.goto(`${daemon.url}/?token=not-the-token`);
    await help.getByText('This token was not accepted').waitFor();
    expect(page.url()).not.toContain('token=');
    expect(await page.evaluate(() => sessionStorage.getItem('subconscious.token'))).toBeNull();

    await page.getByLabel('Access token').fill(daemon.token);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('[data-testid="status-bar"]').waitFor();
    release();
    await answered;
    await page.evaluate(() => new Promise((r) => setTimeout(r, 0))); // the page has handled the late 401
    expect(held).toBeGreaterThan(1); // more than the held call was refused, so the help showed for the others
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    expect(await help.count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.getItem('subconscious.token'))).toBe(daemon.token);
    // The only console errors are the browser's own reports of the refused (401) requests.
    expect(errors.filter((e) => !REFUSED_TOKEN.test(e))).toEqual([]);
    await page.close();
  });

  it('shows the unreachable banner while the daemon is stopped and clears it when it is back', async () => {
    const { page, errors } = await browser.newPage();
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    // The page has read the worlds before the daemon goes (it makes several reads at load).
    await page.locator('[data-testid="world-tasks"]').waitFor();
    const banner = page.locator('[data-testid="banner-unreachable"]');
    expect(await banner.count()).toBe(0);

    await daemon.stop();
    await banner.waitFor();
    expect(await banner.innerText()).toContain('subconscious start');
    await page.locator('[data-testid="live-state"][data-state="down"]').waitFor();
    await screenshots(page, 'daemon-unreachable');
    expect(await contrastFailures(page)).toEqual([]);

    // While the daemon is away its actions are disabled, with the reason (issue 23): nothing looks usable that is not.
    const toggle = page.locator('[data-testid="world-tasks"]').getByRole('switch', { name: 'Enable Tasks' });
    expect(await toggle.getAttribute('aria-checked')).toBe('true');
    expect(await toggle.isDisabled()).toBe(true);
    const runAll = page.getByRole('button', { name: 'Run all now' });
    expect(await runAll.isDisabled()).toBe(true);
    expect(await runAll.getAttribute('title')).toContain('The daemon does not answer');
    const runNow = page.getByRole('button', { name: 'Run Tasks now' });
    expect(await runNow.isDisabled()).toBe(true);

    await daemon.restart();
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor({ timeout: 30_000 });
    await banner.waitFor({ state: 'detached' });
    await page.locator('[data-testid="status-bar"]').waitFor();
    // While the daemon was down the browser reported the refused connections; nothing else.
    expect(errors.filter((e) => !NETWORK_DOWN.test(e))).toEqual([]);
    await page.close();
  }, 90_000);

  /** Open the page on `d`, press Run now for Tasks, and wait for the banner `testid`. */
  async function runTasksUntilBanner(d: TestDaemon, testid: string) {
    const { page, errors } = await browser.newPage();
    await page.goto(d.pageUrl);
    await page.locator('[data-testid="world-tasks"]').waitFor();
    await page.getByRole('button', { name: 'Run Tasks now' }).click();
    const banner = page.locator(`[data-testid="${testid}"]`);
    await banner.waitFor();
    return { page, errors, banner };
  }

  const tasksStatus = async (d: TestDaemon) => (await d.rpc<StatusResult>('subconscious.status')).instances.find((i) => i.world === 'tasks')!;

  it("says when a world's model is unavailable, with the reason from status and what to do", async () => {
    const nowhere = await unreachableBaseUrl();
    const offline = await startDaemon({ env: { SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: nowhere } });
    try {
      const { page, errors, banner } = await runTasksUntilBanner(offline, 'banner-model-tasks');
      const tasks = await tasksStatus(offline);
      expect(tasks.provider_available).toBe(false);
      const text = await banner.innerText();
      expect(text).toContain(tasks.provider_unavailable_reason!);
      expect(text).toContain('subconscious.toml');
      await page.locator('[data-testid="world-tasks"][data-state="Model unavailable"]').waitFor();
      // The failed try counts: the card says the world backs off, why, and when it tries again.
      const waiting = page.locator('[data-testid="world-tasks"] [data-testid="world-backoff"]');
      await waiting.waitFor();
      const backoff = (await tasksStatus(offline)).backoff!;
      expect(backoff.failures).toBeGreaterThan(0);
      expect(await waiting.innerText()).toMatch(/^Waiting: failed (once|\d+ times in a row): .+; next try at \d\d:\d\d/);
      await screenshots(page, 'model-unavailable');
      expect(await contrastFailures(page)).toEqual([]);
      // The harness (mode "auto", the default) answers from its stand-ins while no model answers; its tab says why.
      await page.getByRole('tab', { name: 'Steering' }).click();
      expect(await page.locator('[data-testid="harness-line"]').innerText()).toContain('Harness in offline mode');
      expect(await page.locator('[data-testid="harness-mode-reason"]').innerText()).toMatch(/Why offline: auto: the local model does not answer/);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await offline.dispose();
    }
  }, 90_000);

  it('says when the agent model alone is unavailable: ticks run, and the banner names the work that fails', async () => {
    const local = await startModelServer();
    local.handle(() => ({ json: { decisions: [] } })); // every task: "no decision" (noop)
    const agentAway = await startDaemon({
      env: { SUBCONSCIOUS_LOCAL_BASE_URL: local.baseUrl, SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model', SUBCONSCIOUS_AGENT_BASE_URL: await unreachableBaseUrl() },
    });
    try {
      const { page, errors, banner } = await runTasksUntilBanner(agentAway, 'banner-optional-tasks-agent');
      const tasks = await tasksStatus(agentAway);
      expect(tasks.provider_available).toBe(true);
      expect(tasks.optional_models_unavailable.map((m) => m.role)).toEqual(['agent']);
      const text = await banner.innerText();
      expect(text).toContain(tasks.optional_models_unavailable[0]!.reason);
      expect(text).toContain('tasks that use tools');
      expect(text).toContain('[models.agent]');
      expect(await page.locator('[data-testid="banner-model-tasks"]').count()).toBe(0);
      expect(await contrastFailures(page)).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await agentAway.dispose();
      await local.close();
    }
  }, 90_000);

  it("says when a world is halted by its model's size limit, on the card and in a banner, with the reason", async () => {
    // Every chat request is larger than this model will ever take (413): a permanent rate cap.
    // The provider's message marks its settings with backticks, as many do: the page shows them as code.
    const tooSmall = await startModelServer();
    tooSmall.handle(() => ({
      status: 413,
      message: 'Request too large for this model: 40000 tokens requested, the limit is 8192. Lower `max_tokens` or pick a larger `context_length`.',
    }));
    const capped = await startDaemon({
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: tooSmall.baseUrl,
        SUBCONSCIOUS_AGENT_BASE_URL: tooSmall.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    try {
      const { page, errors } = await browser.newPage();
      await page.goto(capped.pageUrl);
      const card = page.locator('[data-testid="world-tasks"]');
      await card.waitFor();
      // The start-up tick may already have hit the cap; if not, Run now does.
      if ((await card.getAttribute('data-state')) !== 'Halted') {
        await page.locator('[data-testid="world-tasks"]:not([data-state="Running"])').waitFor();
        if ((await card.getAttribute('data-state')) !== 'Halted') await page.getByRole('button', { name: 'Run Tasks now' }).click();
      }
      await page.locator('[data-testid="world-tasks"][data-state="Halted"]').waitFor();
      const banner = page.locator('[data-testid="banner-halted-tasks"]');
      await banner.waitFor();
      const status = await capped.rpc<{ instances: { world: string; halted: boolean; halt_reason: string | null }[] }>('subconscious.status');
      const tasks = status.instances.find((i) => i.world === 'tasks')!;
      expect(tasks.halted).toBe(true);
      expect(tasks.halt_reason).toContain('413');
      expect(tasks.halt_reason).toContain('`max_tokens`');
      // Shown as text with the backticked spans as <code> (the backticks themselves gone).
      const shown = tasks.halt_reason!.replaceAll('`', '');
      expect(await banner.innerText()).toContain(shown);
      expect(await banner.innerText()).toContain('subconscious.toml');
      expect(await banner.locator('code', { hasText: 'max_tokens' }).count()).toBe(1);
      // What to change is the world's own words, carried by the daemon's reason; the banner adds
      // no config key of its own (it serves every world).
      expect(tasks.halt_reason).toContain('context_budget_tokens');
      expect(await banner.locator('.banner-todo').innerText()).not.toContain('context_budget_tokens');
      expect((await banner.innerText()).split('context_budget_tokens')).toHaveLength(2);
      const haltNote = card.locator('[data-testid="world-halt-reason"]');
      expect(await haltNote.innerText()).toContain(shown);
      expect(await haltNote.locator('code').allInnerTexts()).toEqual(['max_tokens', 'context_length']);
      expect(await card.locator('[data-testid="world-failures"]').getAttribute('class')).toContain('coral');
      await screenshots(page, 'world-halted');
      expect(await contrastFailures(page)).toEqual([]);

      // The person made the requests fit (here: the model now takes them) and presses Try again:
      // the halt lifts, a tick runs at once and commits, and the banner goes.
      tooSmall.handle(() => ({ json: { decisions: [] } }));
      await card.getByRole('button', { name: 'Try Tasks again' }).click();
      await banner.waitFor({ state: 'detached' });
      await vi.waitFor(
        async () => {
          const after = (
            await capped.rpc<{ instances: { world: string; halted: boolean; last_outcome: string | null }[] }>('subconscious.status')
          ).instances.find((i) => i.world === 'tasks')!;
          expect(after).toMatchObject({ halted: false, last_outcome: 'committed' });
        },
        { timeout: 15_000, interval: 100 },
      );
      await expect(capped.rpc('subconscious.clear_halt', { world: 'tasks' })).resolves.toEqual({ world: 'tasks', cleared: false });
      await expect(capped.rpc('subconscious.clear_halt', { world: 'nope' })).rejects.toThrow(/nope/);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await capped.dispose();
      await tooSmall.close();
    }
  }, 90_000);
});
