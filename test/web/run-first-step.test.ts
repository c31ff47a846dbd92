/**
 * Issue 23 §3 in real Chromium against the real daemon: a run's steps come from its own events,
 * and a run says nothing until its first model call answers. A row whose run began while the page
 * watched says its first step at once — "step 1: asking the model" — while that first call is
 * still held by the scripted model server (no event of the run has been sent yet).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVALUATION_SYSTEM } from '../../src/worlds/tasks/prompts.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ChatMessage, type ModelServer } from '../support/model-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const TITLE = 'Summarise the open pull requests';
const first = (s: string) => s.split('\n')[0]!;
const text = (m: ChatMessage): string => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));

describe('a run’s first step on its log row', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  let reached = () => {};
  const held = new Promise<void>((r) => (reached = r));
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  let runCalls = 0;

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    server.handle(async (req) => {
      const messages = req.body?.messages ?? [];
      const system = messages
        .filter((m) => m.role === 'system')
        .map(text)
        .join('\n');
      const user = messages
        .filter((m) => m.role === 'user')
        .map(text)
        .join('\n');
      if (system.includes(first(EVALUATION_SYSTEM))) {
        const decisions = user
          .split('- task_id: ')
          .slice(1)
          .map((chunk) => {
            const id = chunk.split('\n')[0]!.trim();
            const ours = chunk.includes(TITLE);
            return { task_id: id, decision: ours ? 'escalate' : 'noop', reason: ours ? 'Two pull requests are waiting.' : 'Nothing changed.' };
          });
        return { json: { decisions } };
      }
      if (user.includes(TITLE)) {
        // The run's first model call: held until the test has looked at the row.
        runCalls++;
        reached();
        await gate;
        return { text: 'Two pull requests are open; neither needs you today.' };
      }
      return { status: 400, message: `first-step test: unscripted request (${first(system).slice(0, 60)})` };
    });
    daemon = await startDaemon({
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    for (const t of await daemon.rpc<{ id: string }[]>('subconscious.tasks_list'))
      await daemon.rpc('subconscious.tasks_update', { task_id: t.id, enabled: false });
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  }, 180_000);

  afterAll(async () => {
    release();
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('says step 1, asking the model, while the first model call of the run is still out', async () => {
    // Added while the page watches: the task is evaluated at once and its run starts.
    await daemon.rpc('subconscious.tasks_add', { title: TITLE, needs_tools: true });
    await daemon.rpc('subconscious.trigger', { world: 'tasks' });
    await held;
    const task = (await daemon.rpc<{ id: string; title: string }[]>('subconscious.tasks_list')).find((t) => t.title === TITLE)!;
    const row = page.locator(`[data-testid="log-row"][data-task-id="${task.id}"][data-decision="in_progress"]`).first();
    const step = row.locator('[data-testid="log-step"]');
    await step.waitFor({ timeout: 20_000 }).catch(async (err: unknown) => {
      const log = await daemon.rpc('subconscious.log_list', { limit: 5 }).catch((e: unknown) => String(e));
      throw new Error(`${String(err)}\nthe log: ${await page.locator('[data-testid="log-group"]').first().innerHTML()}\n${JSON.stringify(log)}`);
    });
    // Still the first call: the model has not answered, so the run has sent no step event.
    expect(runCalls).toBe(1);
    expect(await step.getAttribute('data-kind')).toBe('model');
    expect(await step.innerText()).toMatch(/^step 1: asking the model · for \d+ seconds?$/);
    expect(await row.locator('[data-testid="log-stage"]').innerText()).toMatch(/^carrying out · for \d+ seconds?/);

    release();
    await page.locator(`[data-testid="log-row"][data-task-id="${task.id}"]:not([data-decision="in_progress"])`).first().waitFor({ timeout: 20_000 });
    expect(await page.locator(`[data-testid="log-row"][data-task-id="${task.id}"] [data-testid="log-step"]`).count()).toBe(0);
    expect(watched.errors).toEqual([]);
  });
});
