/**
 * The Bots tab in real Chromium against the real daemon, the scripted model server (behind a
 * proxy that streams its replies piece by piece and can hold one mid-stream) and a real MCP
 * server (filesystem): a bot created from the page (its refusal shown by the field), a reply
 * watched as it streams in, an approval answered inline (the tool ran, its arguments shown as
 * text), a group where an @mention picked from the completion list decides who answers, a run
 * stopped for good, routines added and removed; screenshots at 1280×800 and 360×740, keyboard
 * focus, contrast (light and dark), the 360 px layout, and not one CSP violation.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bot, BotWithStatus, Routine, Task, ThreadSummary, ThreadView } from '../../src/protocol/bots.js';
import { filesystemServer } from '../support/mcp-servers.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { contrastFailures, walkFocus } from './support/a11y.js';
import { scriptBots, startPacedProxy, type BotModels, type PacedProxy } from './support/bots-models.js';
import { horizontalOverflow, launchBrowser, screenshots, VIEWPORTS, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const REPLY =
  'Three experiments ran this week. The pricing page test converts at 4.1%, the onboarding email at 2.7%, ' +
  'and the referral banner did not reach significance. I suggest we keep the pricing variant.';

describe('Bots tab in Chromium', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let proxy: PacedProxy;
  let models: BotModels;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  let dir: string;

  const bots = () => daemon.rpc<BotWithStatus[]>('bots.list');
  const botNamed = async (name: string) => (await bots()).find((b) => b.name === name)!;
  const directThread = async (botId: string) => (await daemon.rpc<ThreadSummary[]>('bots.threads_list', { bot_id: botId })).find((t) => t.kind === 'direct')!;
  const thread = (id: string) => daemon.rpc<ThreadView>('bots.thread', { thread_id: id });
  const lastBotMessage = () => page.locator('[data-testid="message"][data-role="bot"]').last();
  const composer = () => page.getByTestId('composer-input');
  const send = async (text: string) => {
    await composer().fill(text);
    await composer().press('Enter');
  };

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    models = scriptBots(server);
    proxy = await startPacedProxy(server, { paceMs: 60 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bots-page-'));
    const fs = filesystemServer(dir);
    daemon = await startDaemon({
      // Only the bots call the model here: the task loop stays off.
      config: [
        '[worlds.tasks]',
        'enabled = false',
        '',
        '[[mcp.servers]]',
        'name = "fs"',
        `command = ${JSON.stringify(fs.command)}`,
        `args = ${JSON.stringify(fs.args)}`,
        '',
        '[[mcp.servers]]',
        'name = "files"',
        'command = "definitely-not-a-command"',
        '',
      ].join('\n'),
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: proxy.baseUrl,
        SUBCONSCIOUS_AGENT_BASE_URL: proxy.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    // The daemon's Content-Security-Policy must hold with threads, approvals and forms on screen too.
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { __csp: string[] }).__csp = seen;
      document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
    });
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    await page.getByRole('tab', { name: 'Bots' }).click();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await proxy?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('explains what a bot is, then creates one from the form; a refused name is shown under its field', async () => {
    const empty = page.getByTestId('bots-empty');
    await empty.waitFor();
    expect(await empty.innerText()).toContain('A bot is an AI teammate');
    await screenshots(page, 'bots-empty');
    expect(await contrastFailures(page), 'the empty state').toEqual([]);

    await page.getByRole('button', { name: 'Create a bot' }).click();
    const form = page.getByTestId('bot-form');
    await form.getByLabel('Name').fill('Scout Bot');
    await form.getByLabel('Label').fill('Scout');
    await form.getByLabel('Description').fill('Runs growth experiments and reports on them.');
    await form.getByLabel('Persona').fill('Report results with numbers. Ask before writing anything.');
    await form.getByRole('checkbox', { name: 'fs' }).check();
    // The model is picked from the configured roles and their models, not typed (issue 23).
    const model = form.getByLabel('Model', { exact: true });
    expect(await model.evaluate((el) => el.tagName)).toBe('SELECT');
    expect(await model.inputValue()).toBe('agent');
    expect(await model.locator('option').allInnerTexts()).toEqual([
      'Agent (full effort) — scripted-model (the default)',
      'Local (cheap) — scripted-model',
      'Another model on one of these endpoints…',
    ]);
    await model.selectOption('__other');
    await form.getByTestId('bot-model-other').getByLabel('On endpoint').selectOption('agent');
    await form.getByTestId('bot-model-other').getByLabel('Which model').fill('scripted-model');
    await form.getByRole('button', { name: 'Create bot' }).click();
    const nameError = page.getByTestId('bot-form-error-name');
    await nameError.waitFor();
    expect(await nameError.innerText()).toMatch(/^Must be 1-32 lower-case letters, digits, - or _, starting with a letter/);
    expect(await form.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('Name').getAttribute('aria-describedby')).toContain(await nameError.getAttribute('id'));
    expect(await bots()).toEqual([]);

    await form.getByLabel('Name').fill('scout');
    await form.getByRole('button', { name: 'Create bot' }).click();
    await page.getByTestId('thread-empty').waitFor();
    const scout = await botNamed('scout');
    expect(scout).toMatchObject({
      label: 'Scout',
      tools: ['fs'],
      description: 'Runs growth experiments and reports on them.',
      model_role: 'agent',
      model: 'scripted-model',
    });
    expect(await page.getByTestId('thread').getByRole('heading', { level: 2 }).innerText()).toBe('Scout');
    expect(await page.getByTestId('bot-tools').innerText()).toBe('fs');
    expect(await page.locator('[data-testid="bot-item"][data-bot-name="scout"]').getAttribute('aria-current')).toBe('page');
  });

  it('a message’s reply streams in: part of it shows while the run works, then all of it, done', async () => {
    models.answer('scout', { text: REPLY });
    const held = proxy.hold(3);
    await send('How did the experiments do?');
    await page.locator('[data-testid="message"][data-role="user"]', { hasText: 'How did the experiments do?' }).waitFor();
    await held.reached;

    // Mid-stream: some text, not all, in a message marked streaming; its task is working.
    const reply = lastBotMessage();
    await page.locator('[data-testid="message"][data-role="bot"][data-status="streaming"] [data-testid="message-text"]').waitFor();
    const partial = await reply.getByTestId('message-text').innerText();
    expect(partial.length).toBeGreaterThan(0);
    expect(REPLY.startsWith(partial.trim())).toBe(true);
    expect(partial.trim().length).toBeLessThan(REPLY.length);
    expect(await reply.getByTestId('task-chip').getAttribute('data-status')).toBe('working');
    expect(await page.locator('[data-testid="bot-item"][data-bot-name="scout"]').getAttribute('data-status')).toBe('working');
    await screenshots(page, 'bots-streaming');

    held.release();
    // Piece by piece: the text grows before the message is finished.
    await page.waitForFunction((n) => {
      const el = [...document.querySelectorAll('[data-testid="message"][data-role="bot"]')].at(-1);
      return el?.getAttribute('data-status') === 'streaming' && (el.querySelector('[data-testid="message-text"]')?.textContent?.length ?? 0) > n;
    }, partial.trim().length);
    await page.locator('[data-testid="message"][data-role="bot"][data-status="done"]').waitFor();
    expect((await reply.getByTestId('message-text').innerText()).trim()).toBe(REPLY);
    await reply.locator('[data-testid="task-chip"][data-status="done"]').waitFor();
    await page.locator('[data-testid="bot-item"][data-bot-name="scout"][data-status="idle"]').waitFor();

    // The thread is on screen, so it was marked read: nothing unread is counted.
    const scout = await botNamed('scout');
    await expect.poll(async () => (await directThread(scout.id)).unread).toBe(0);
    expect(await page.locator('[data-testid="bot-item"][data-bot-name="scout"] [data-testid="unread"]').count()).toBe(0);
    expect(models.calls.at(-1)).toMatchObject({ bot: 'scout', lastUser: 'How did the experiments do?' });
  });

  it('an approval is answered inline: the tool and its arguments (as text) are shown, Approve runs it, the reply goes on', async () => {
    const target = path.join(dir, 'plan.txt');
    const content = '<b>Ship</b> the pricing variant on Friday';
    models.answer('scout', { toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content } }] }, { text: 'Saved the plan to plan.txt.' });
    await send('Write the plan down in plan.txt');
    const card = page.getByTestId('bot-approval');
    await card.waitFor();
    expect(await card.innerText()).toContain('Approval needed: write_file on fs');
    const args = card.getByTestId('approval-args');
    expect(await args.innerText()).toContain(JSON.stringify(content));
    expect(await args.innerText()).toContain(JSON.stringify(target));
    // Shown as text, never as markup.
    expect(await args.locator('b').count()).toBe(0);
    // The bot and its thread say that something needs the person.
    await page.locator('[data-testid="bot-item"][data-bot-name="scout"] [data-testid="needs-attention"]').waitFor();
    expect(await page.locator('[data-testid="bot-item"][data-bot-name="scout"] [data-testid="needs-attention"]').innerText()).toBe('1 needs you');
    expect(existsSync(target)).toBe(false);
    expect(await lastBotMessage().getByTestId('message-waiting').innerText()).toBe('Waiting for your approval…');
    await screenshots(page, 'bots-approval');
    expect(await contrastFailures(page), 'an inline approval').toEqual([]);

    // The answer after the tool ran is held mid-stream: the reply shows the tool it used, done.
    const held = proxy.hold(1);
    await card.getByRole('button', { name: 'Approve' }).click();
    await page.locator('[data-testid="approval-record"][data-state="approved"]').waitFor();
    await held.reached;
    await lastBotMessage().locator('[data-testid="tool-steps"] li[data-outcome="ok"]', { hasText: 'write_file' }).waitFor();
    held.release();
    await page.locator('[data-testid="message"][data-role="bot"][data-status="done"]', { hasText: 'Saved the plan to plan.txt.' }).waitFor();
    expect(readFileSync(target, 'utf8')).toBe(content);
    await page.locator('[data-testid="bot-item"][data-bot-name="scout"] [data-testid="needs-attention"]').waitFor({ state: 'detached' });
    const [after] = (await thread((await directThread((await botNamed('scout')).id)).id)).approvals;
    expect(after).toMatchObject({ tool: 'write_file', server: 'fs', state: 'approved' });
  });

  it('a group: a message without a mention is refused with the reason; @ completion picks the bot that answers', async () => {
    const quill = await daemon.rpc<Bot>('bots.create', { name: 'quill', label: 'Quill', description: 'Writes announcements.' });
    await page.locator('[data-testid="bot-item"][data-bot-name="quill"]').waitFor();
    await page.getByRole('button', { name: 'New group' }).click();
    const form = page.getByTestId('group-form');
    await form.getByLabel('Name').fill('Launch crew');
    await form.getByRole('checkbox', { name: /Scout/ }).check();
    await form.getByRole('button', { name: 'Create group' }).click();
    expect(await page.getByTestId('group-form-error').innerText()).toContain('Choose at least two bots');
    await form.getByRole('checkbox', { name: /Quill/ }).check();
    await form.getByRole('button', { name: 'Create group' }).click();
    const groupThread = page.locator('[data-testid="thread"][data-kind="group"]');
    await groupThread.waitFor();
    expect(await groupThread.getByRole('heading', { level: 2 }).innerText()).toBe('Launch crew');
    expect(await page.getByTestId('thread-empty').innerText()).toContain('@name says who answers');

    await send('Can someone draft the launch note?');
    const refusal = page.getByTestId('composer-error');
    await refusal.waitFor();
    expect(await refusal.innerText()).toBe('Mention who should answer: @scout, @quill.');
    expect(await composer().getAttribute('aria-invalid')).toBe('true');
    // The daemon's own refusal (a name not in the group) shows there too, and the text stays.
    await send('@nobody can you draft it?');
    await page.locator('[data-testid="composer-error"]', { hasText: '@nobody is not in this group' }).waitFor();
    expect(await composer().inputValue()).toBe('@nobody can you draft it?');

    models.answer('quill', { text: 'Draft: the pricing variant ships on Friday. Questions to #launch.' });
    const calls = models.calls.length;
    await composer().fill('');
    await composer().pressSequentially('@qu');
    const options = page.getByTestId('mention-options');
    await options.getByRole('option', { name: /@quill/ }).waitFor();
    expect(await composer().getAttribute('aria-expanded')).toBe('true');
    await composer().press('Enter');
    expect(await composer().inputValue()).toBe('@quill ');
    await composer().pressSequentially('please draft the launch note');
    expect(await page.locator('.composer-hint').innerText()).toContain('Goes to @quill.');
    await composer().press('Enter');
    await groupThread
      .locator('[data-testid="message"][data-role="bot"][data-status="done"]', { hasText: 'Draft: the pricing variant ships on Friday.' })
      .waitFor();
    expect(models.calls.slice(calls).map((c) => c.bot)).toEqual(['quill']);
    expect(await groupThread.locator('[data-testid="message"][data-role="bot"]').count()).toBe(1);
    expect(await groupThread.locator('[data-testid="message"][data-role="bot"] .message-author').innerText()).toBe('Quill (@quill)');
    const group = (await daemon.rpc<ThreadSummary[]>('bots.threads_list')).find((t) => t.kind === 'group')!;
    expect(group.bot_ids.sort()).toEqual([quill.id, (await botNamed('scout')).id].sort());
    await screenshots(page, 'bots-group');
  });

  it('Stop cancels a running reply for good: the message stops, its task is cancelled, the bot is idle', async () => {
    await page.locator('[data-testid="bot-item"][data-bot-name="scout"]').click();
    await page.locator('[data-testid="thread"][data-kind="direct"]').waitFor();
    models.answer('scout', { text: `${REPLY} ${REPLY}` });
    proxy.hold(2); // never released: the run is mid-stream until it is stopped
    await send('Write the full quarterly report');
    await page.locator('[data-testid="message"][data-role="bot"][data-status="streaming"] [data-testid="message-text"]').waitFor();
    const stop = page.getByTestId('stop-bot');
    await stop.click();
    const stopped = page.locator('[data-testid="message"][data-role="bot"][data-status="stopped"]');
    await stopped.waitFor();
    await stopped.locator('[data-testid="task-chip"][data-status="cancelled"]').waitFor();
    expect(await stopped.getByTestId('message-error').innerText()).toBe('Stopped by the user.');
    await page.locator('[data-testid="bot-item"][data-bot-name="scout"][data-status="idle"]').waitFor();
    await stop.waitFor({ state: 'detached' });
    const scout = await botNamed('scout');
    const view = await thread((await directThread(scout.id)).id);
    const task = view.tasks.find((t: Task) => t.title === 'Write the full quarterly report')!;
    expect(task).toMatchObject({ status: 'cancelled', error_kind: 'cancelled', interrupted: false });
    expect(scout.status).toBe('idle');
  });

  it('routines per bot: a bad cron is refused under its field; one is added, switched off and removed; the bot is edited', async () => {
    const scout = await botNamed('scout');
    const panel = page.getByTestId('bot-panel');
    const routines = () => daemon.rpc<Routine[]>('bots.routines_list', { bot_id: scout.id });
    await panel.getByLabel('Cron').fill('61 * * * *');
    await panel.getByLabel('Prompt').fill('Summarise yesterday’s experiments');
    await panel.getByRole('button', { name: 'Add routine' }).click();
    const error = panel.getByTestId('routine-error');
    await error.waitFor();
    expect(await error.getAttribute('data-field')).toBe('schedule');
    expect(await error.innerText()).toContain('"61 * * * *" is not a valid cron expression');
    expect(await panel.getByLabel('Cron').getAttribute('aria-invalid')).toBe('true');
    expect(await routines()).toEqual([]);

    await panel.getByLabel('Cron').fill('0 9 * * 1-5');
    await panel.getByRole('button', { name: 'Add routine' }).click();
    const row = panel.getByTestId('routine-row');
    await row.waitFor();
    expect(await row.innerText()).toContain('Summarise yesterday’s experiments');
    expect(await row.innerText()).toContain('0 9 * * 1-5');
    const [added] = await routines();
    expect(added).toMatchObject({ schedule: '0 9 * * 1-5', enabled: true });
    await row.getByRole('switch').click();
    await expect.poll(async () => (await routines())[0]?.enabled).toBe(false);
    await row.locator('[role="switch"][aria-checked="false"]').waitFor();
    await screenshots(page, 'bots-thread');
    await row.getByRole('button', { name: /^Remove the routine/ }).click();
    await row.waitFor({ state: 'detached' });
    expect(await routines()).toEqual([]);

    await panel.getByRole('button', { name: 'Edit' }).click();
    const form = page.getByTestId('bot-form');
    await form.getByLabel('Label').fill('Scout (growth)');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-testid="thread"] h2', { hasText: 'Scout (growth)' }).waitFor();
    expect((await botNamed('scout')).label).toBe('Scout (growth)');
  });

  it('a bot whose tool server cannot start has that tool marked unavailable in its panel, with the reason', async () => {
    await daemon.rpc<Bot>('bots.create', { name: 'growth', tools: ['files'] });
    await daemon.rpc('mcp.servers', { check: true });
    await page.locator('[data-testid="bot-item"][data-bot-name="growth"]').click();
    const warning = page.getByTestId('bot-tool-unavailable');
    await warning.waitFor();
    expect(await warning.innerText()).toMatch(/^files: unavailable — could not start: .*ENOENT.*\. The bot runs without it\.$/s);
  });

  it('is keyboard reachable with visible focus, keeps contrast in light and dark, fits 360 px, and logged no console error', async () => {
    await page.locator('[data-testid="thread"][data-kind="direct"]').waitFor();
    const stops = await walkFocus(page, 120);
    const names = stops.map((s) => s.what);
    expect(stops.filter((s) => s.problem !== null)).toEqual([]);
    for (const expected of ['New bot', 'New group', 'Edit', 'Send', 'Add routine'])
      expect(
        names.some((n) => n.includes(expected)),
        expected,
      ).toBe(true);
    expect(await contrastFailures(page), 'thread (light)').toEqual([]);
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('[role="tabpanel"] :is(button, input, select, textarea, [role="switch"])')]
        .filter((el) => {
          const label = el.getAttribute('aria-label') || (el as HTMLInputElement).labels?.[0]?.textContent || el.textContent;
          return !label || !label.trim();
        })
        .map((el) => el.outerHTML.slice(0, 120)),
    );
    expect(unnamed).toEqual([]);

    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await contrastFailures(page), 'thread (dark)').toEqual([]);
    await screenshots(page, 'bots-thread-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    // A phone: the thread alone with a way back; then the list alone. Nothing scrolls sideways.
    await page.setViewportSize(VIEWPORTS[1]);
    expect(await page.locator('.bots-side').isVisible()).toBe(false);
    expect(await horizontalOverflow(page), 'thread at 360 px').toBeLessThanOrEqual(0);
    await page.getByRole('button', { name: '← All bots and groups' }).click();
    await page.getByTestId('bot-list').waitFor();
    expect(await page.getByTestId('thread').count()).toBe(0);
    expect(await horizontalOverflow(page), 'list at 360 px').toBeLessThanOrEqual(0);
    await screenshots(page, 'bots-list');
    await page.locator('[data-testid="bot-item"][data-bot-name="scout"]').click();
    await page.getByTestId('thread').waitFor();
    expect(await horizontalOverflow(page), 'thread again at 360 px').toBeLessThanOrEqual(0);
    expect(await contrastFailures(page), 'thread at 360 px').toEqual([]);
    await page.setViewportSize(VIEWPORTS[0]);
    expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([]);
    expect(watched.errors).toEqual([]);
  });
});
