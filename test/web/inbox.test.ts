/**
 * Issue 23 in real Chromium against the real daemon, the scripted model server and the MCP
 * filesystem server from npm: a write task's run wants a write its words do not name, so it is
 * held; "Needs you" at the top of the page shows exactly what will run (tool, server, arguments
 * by the tool's schema, model, cost, what the run read); Edit changes an argument and the
 * written file carries the edited value; Respond sends text to the run; the tab badges and the
 * title count what the inbox holds; at 360 px every tab is in view and nothing scrolls sideways;
 * light and dark screenshots are written for a person to look at. While the digest's run is
 * carried out, its log row says the step it is at (a model call after list_directory on fs) and
 * for how long; Settings shows the effective configuration with where each value came from.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_APPROVED_SYSTEM, AGENT_WRITE_SYSTEM, EVALUATION_SYSTEM } from '../../src/worlds/tasks/prompts.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ChatMessage, type ModelServer, type RecordedRequest, type ScriptedReply } from '../support/model-server.js';
import { horizontalOverflow, launchBrowser, screenshots, SCREENSHOT_DIR, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const require = createRequire(import.meta.url);
function packageBin(pkg: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = require(manifestPath) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!;
  return path.join(path.dirname(manifestPath), bin);
}

const first = (s: string) => s.split('\n')[0]!;
const text = (m: ChatMessage): string =>
  typeof m.content === 'string'
    ? m.content
    : Array.isArray(m.content)
      ? m.content.map((p) => (p && typeof p === 'object' && 'text' in p ? String(p.text) : '')).join('')
      : '';

const DIGEST = 'Write the weekly digest to notes.md';
const RELEASE = 'Write the release summary to summary.md';

describe('Needs you: one inbox that shows exactly what will run', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  let ws: string;
  const approvedRequests: RecordedRequest[] = [];
  let releaseSecond = () => {};
  let secondReached: Promise<void> = Promise.resolve();
  let secondCall: { reached: () => void; gate: Promise<void> } | null = null;

  beforeAll(async () => {
    await ensurePageBuilt();
    // Before the tasks exist: adding one may start a tick at once.
    {
      let reached = () => {};
      secondReached = new Promise<void>((r) => (reached = r));
      const gate = new Promise<void>((r) => (releaseSecond = r));
      secondCall = { reached, gate };
    }
    ws = mkdtempSync(path.join(os.tmpdir(), 'subc-inbox-'));
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
            const write = chunk.includes(DIGEST) || chunk.includes(RELEASE);
            return { task_id: id, decision: write ? 'escalate' : 'noop', reason: write ? 'New notes arrived.' : 'Nothing changed.' };
          });
        return { json: { decisions } };
      }
      if (system.includes(first(AGENT_WRITE_SYSTEM))) {
        const toolResults = messages.filter((m) => m.role === 'tool').length;
        // A file the task's words do not name: the write gate holds it for the person.
        const file = user.includes(DIGEST) ? 'draft-digest.md' : 'draft-summary.md';
        const write: ScriptedReply = { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, file), content: 'draft' } }] };
        if (user.includes(DIGEST)) {
          // The digest first reads the folder; its second model call waits until the test has seen the run's step on its row.
          if (toolResults === 0) return { toolCalls: [{ name: 'fs__list_directory', arguments: { path: ws } }] };
          if (toolResults === 1) {
            secondCall?.reached();
            await secondCall?.gate;
            return write;
          }
          return { text: 'I held the write for you.' };
        }
        return toolResults > 0 ? { text: 'I held the write for you.' } : write;
      }
      if (system.includes(first(AGENT_APPROVED_SYSTEM))) {
        approvedRequests.push(req);
        return { text: 'Done: carried out your answer.' };
      }
      return { status: 400, message: `inbox test: unscripted request (${first(system).slice(0, 60)})` };
    });
    daemon = await startDaemon({
      workspace: ws,
      config: [
        '[[mcp.servers]]',
        'name = "fs"',
        `command = ${JSON.stringify(process.execPath)}`,
        `args = [${JSON.stringify(packageBin('@modelcontextprotocol/server-filesystem'))}, ${JSON.stringify(ws)}]`,
        // Reading the folder is a read, whatever the server's hints say: it runs without asking.
        'tools = { list_directory = { access = "read" } }',
        '',
      ].join('\n'),
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    for (const t of await daemon.rpc<{ id: string }[]>('subconscious.tasks_list'))
      await daemon.rpc('subconscious.tasks_update', { task_id: t.id, enabled: false });
    await daemon.rpc('subconscious.tasks_add', { title: DIGEST, needs_tools: true });
    await daemon.rpc('subconscious.tasks_add', { title: RELEASE, needs_tools: true });
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    await daemon.rpc('subconscious.trigger', { world: 'tasks' });
  }, 180_000);

  afterAll(async () => {
    releaseSecond();
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  const card = (title: string) => page.locator('[data-testid="inbox-card"]', { has: page.getByRole('heading', { name: title }) });

  it('while a task is carried out, its row says the step it is at (a model call after list_directory on fs) and for how long', async () => {
    await secondReached;
    const digest = (await daemon.rpc<{ id: string; title: string }[]>('subconscious.tasks_list')).find((t) => t.title === DIGEST)!;
    const row = page.locator(`[data-testid="log-row"][data-task-id="${digest.id}"][data-decision="in_progress"]`).first();
    const step = row.locator('[data-testid="log-step"]');
    await step.waitFor({ timeout: 20_000 }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\nthe log: ${await page.locator('[data-testid="log-group"]').first().innerText()}`);
    });
    expect(await step.getAttribute('data-kind')).toBe('model');
    expect(await step.innerText()).toMatch(/^step 2: asking the model \(after list_directory on fs\) · for \d+ seconds?$/);
    expect(await row.locator('[data-testid="log-stage"]').innerText()).toMatch(/^carrying out · for \d+ seconds?/);
    expect(await row.locator('[data-testid="log-text"]').innerText()).toBe('Carrying out the task...');
    await screenshots(page, 'inbox-run-step');
    releaseSecond();
    await page.locator('[data-testid="inbox-card"][data-kind="escalation"]').nth(1).waitFor({ timeout: 60_000 });
    await step.waitFor({ state: 'detached' });
  }, 90_000);

  it('shows the held call: tool, server, arguments by the schema, the model, the cost and what the run read', async () => {
    const c = card(DIGEST);
    await expect(c.locator('[data-testid="inbox-tool"]').textContent()).resolves.toBe('write_file');
    await expect(c.locator('[data-testid="inbox-server"]').textContent()).resolves.toBe('fs');
    await expect(c.locator('[data-arg="path"] pre').textContent()).resolves.toBe(path.join(ws, 'draft-digest.md'));
    await expect(c.locator('[data-arg="content"] pre').textContent()).resolves.toBe('draft');
    await expect(c.locator('[data-testid="inbox-model"]').textContent()).resolves.toBe('scripted-model');
    // The folder read's model call is finished; the step that asked is still open (its ledger row is
    // written when it ends), and the estimate counts the prompt it was sent.
    const cost = (await c.locator('[data-testid="inbox-cost"]').textContent())!;
    expect(cost).toMatch(/^[1-9][\d,]* tokens in 1 finished model call; about [\d,]+ more to finish/);
    expect(Number(/about ([\d,]+)/.exec(cost)![1]!.replace(/,/g, ''))).toBeGreaterThan(500);
    expect(await c.locator('[data-testid="inbox-read"]').textContent()).toContain('situation report');
    for (const name of ['Accept', 'Edit the arguments', 'Respond', 'Ignore'])
      expect(await c.getByRole('button', { name: new RegExp(`^${name}`) }).count()).toBe(1);
    // What waits is the first thing on the page: above the tab's own content.
    const inboxTop = (await page.locator('[data-testid="inbox"]').boundingBox())!.y;
    const panelTop = (await page.locator('main[role="tabpanel"]').boundingBox())!.y;
    expect(inboxTop).toBeLessThan(panelTop);
  });

  it('the badges on the tabs and the title count exactly what the inbox holds', async () => {
    const cards = await page.locator('[data-testid="inbox-card"]').count();
    expect(cards).toBe(2);
    await expect(page.locator('[data-testid="inbox-count"]').textContent()).resolves.toBe(String(cards));
    const badges = await page.locator('[data-testid="tab-badge"]').allTextContents();
    expect(badges.reduce((n, b) => n + Number(b), 0)).toBe(cards);
    expect(await page.locator('[data-testid="tab-badge"][data-tab="subconscious"]').textContent()).toBe('2');
    expect(await page.title()).toBe(`(${cards}) subconscious`);
    // Filters: by world and by priority.
    await page.locator('[data-testid="inbox-filter-priority"]').selectOption('critical');
    expect(await page.locator('[data-testid="inbox-card"]').count()).toBe(0);
    await page.locator('[data-testid="inbox-filter-priority"]').selectOption('all');
    await page.locator('[data-testid="inbox-filter-world"]').selectOption('tasks');
    expect(await page.locator('[data-testid="inbox-card"]').count()).toBe(2);
    await page.locator('[data-testid="inbox-filter-world"]').selectOption('all');
    // Keyboard: ArrowDown moves from one card to the next.
    await page.locator('.inbox-item').first().focus();
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate(() => document.activeElement === document.querySelectorAll('.inbox-item')[1])).toBe(true);
  });

  it('light and dark, 1280 and 360 px: screenshots; at 360 px every tab is in view and nothing scrolls sideways', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await screenshots(page, `inbox-${scheme}`);
      await page.setViewportSize({ width: 360, height: 740 });
      // The first screen of a phone, as a person sees it (the full-page shots are very tall).
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, `inbox-${scheme}-360-first-screen.png`), animations: 'disabled' });
      expect(await horizontalOverflow(page)).toBe(0);
      for (const tab of await page.getByRole('tab').all()) {
        const box = (await tab.boundingBox())!;
        expect(box.x).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width).toBeLessThanOrEqual(360);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('Edit: a wrong value is refused naming the field; the edited call runs and the file carries the edited value', async () => {
    const c = card(DIGEST);
    await c.getByRole('button', { name: /^Edit the arguments/ }).click();
    const form = c.locator('[data-testid="inbox-edit"]');
    await form.getByLabel(/^content/).fill('edited value');
    await screenshots(page, 'inbox-edit');
    await form.getByRole('button', { name: 'Run with these arguments' }).click();
    await expect
      .poll(() => (existsSync(path.join(ws, 'draft-digest.md')) ? readFileSync(path.join(ws, 'draft-digest.md'), 'utf8') : null), { timeout: 30_000 })
      .toBe('edited value');
    await card(DIGEST).waitFor({ state: 'detached' });
    const answered = (
      await daemon.rpc<{ id: string; title: string; answer: { kind: string; by: string; via: string; arguments: unknown } | null }[]>(
        'subconscious.escalations_list',
        { status: 'approved' },
      )
    )[0]!;
    expect(answered.answer).toMatchObject({
      kind: 'edit',
      by: 'you',
      via: 'page',
      arguments: { path: path.join(ws, 'draft-digest.md'), content: 'edited value' },
    });
    await expect.poll(() => page.title()).toBe('(1) subconscious');
    expect(await page.locator('[data-testid="tab-badge"][data-tab="subconscious"]').textContent()).toBe('1');
  });

  it('Settings: the effective configuration with where each value came from; secrets are not shown', async () => {
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    const details = page.locator('[data-testid="settings-details"]');
    await details.locator('summary').click();
    expect(await details.locator('summary').innerText()).toMatch(/^\d+ values, \d+ of them set by you \(from .*subconscious\.toml\)$/);
    const row = (key: string) => details.locator(`[data-testid="setting"][data-key="${key}"]`);
    expect(await row('models.local.model').locator('td').allInnerTexts()).toEqual([
      'scripted-model',
      'environment variable',
      'set by an environment variable, which wins over subconscious.toml: change it where the daemon is started, then restart',
    ]);
    expect(await row('mcp.servers').getAttribute('data-source')).toBe('file');
    expect(await row('agent.max_steps').locator('td').allInnerTexts()).toEqual(['25', 'default', 'restart after editing']);
    // A world's on/off changes live, in the fields above the table.
    expect(await row('worlds.tasks.enabled').locator('td').nth(2).innerText()).toBe('above, on this page');
    // The filter narrows the list by key or value.
    await details.getByLabel('Filter the settings').fill('max_pulses_per_day');
    expect(await details.locator('[data-testid="setting"]').count()).toBe(1);
    expect(await row('worlds.heartbeat.max_pulses_per_day').locator('td').nth(2).innerText()).toContain(
      'Heartbeat settings above, or on the Bots tab (kept in the database for the whole cluster',
    );
    await screenshots(page, 'settings');
    await details.getByLabel('Filter the settings').fill('');
  });

  it('Respond sends the text to the run, which continues with it; the held call does not run', async () => {
    const c = card(RELEASE);
    await c.getByRole('button', { name: /^Respond/ }).click();
    await c.getByLabel(/Your answer/).fill('Put it in summary.md instead, not a draft file.');
    await c.getByRole('button', { name: 'Send answer' }).click();
    await expect.poll(() => approvedRequests.length, { timeout: 30_000 }).toBeGreaterThan(1);
    const last = JSON.stringify(approvedRequests.at(-1)!.body?.messages ?? []);
    expect(last).toContain('Put it in summary.md instead, not a draft file.');
    expect(existsSync(path.join(ws, 'draft-summary.md'))).toBe(false);
    await page.locator('[data-testid="inbox-empty"]').waitFor();
    await expect.poll(() => page.title()).toBe('subconscious');
    expect(await page.locator('[data-testid="tab-badge"]').count()).toBe(0);
    expect(watched.errors).toEqual([]);
  });
});
