/**
 * Issue 17 §5 "take-over is visible": a task whose job another worker took over says so on the
 * Bots tab ("taken over from <worker>"), read from the store through `bots.thread` like any task.
 * The row is written as the take-over writes it (its column), with the daemon stopped.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bot, SendResult, ThreadView } from '../../src/protocol/bots.js';
import { SQLite } from '../../src/store/sqlite-driver.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { launchBrowser, screenshots, type TestBrowser } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const WORKER = 'vm-2:4242:3f9a1c2e';

describe('a taken-over task on the Bots tab', () => {
  let server: ModelServer;
  let daemon: TestDaemon;
  let browser: TestBrowser;
  let page: Page;

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    server.handle(() => ({ text: 'The weekly report is ready.' }));
    daemon = await startDaemon({
      config: '[worlds.tasks]\nenabled = false\n',
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    browser = await launchBrowser();
    page = (await browser.newPage()).page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('says “taken over from” and which worker; a task that was not taken over says nothing of it', async () => {
    const bot = await daemon.rpc<Bot>('bots.create', { name: 'reporter', tools: [] });
    const first = await daemon.rpc<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Write the weekly report' });
    await daemon.rpc<SendResult>('bots.send_message', { bot_id: bot.id, text: 'And the monthly one' });
    const statuses = async () => (await daemon.rpc<ThreadView>('bots.thread', { thread_id: first.thread_id })).tasks.map((t) => t.status);
    await expect.poll(statuses, { timeout: 20_000 }).toEqual(['done', 'done']);

    await daemon.stop();
    const db = new SQLite(path.join(daemon.workspace, '.subconscious', 'subconscious.db'));
    db.prepare('UPDATE bots_tasks SET taken_over_from = ? WHERE id = ?').run(WORKER, first.dispatched[0]!.task_id);
    db.close();
    await daemon.restart();

    await page.goto(daemon.pageUrl);
    await page.getByRole('tab', { name: 'Bots' }).click();
    await page.locator('[data-testid="bot-item"][data-bot-name="reporter"]').click();
    const chips = page.getByTestId('task-taken-over');
    await chips.first().waitFor();
    expect(await chips.allInnerTexts()).toEqual([`taken over from ${WORKER}`]);
    await screenshots(page, 'bots-taken-over');
  });
});
