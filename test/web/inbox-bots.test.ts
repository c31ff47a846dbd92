/**
 * Issue 23 in real Chromium against the real daemon, the scripted model server and the MCP
 * filesystem server: a bot's tool calls held at the approval gate and the heartbeat's check-ins
 * are answered from "Needs you" at the top of the page — Accept runs the call as shown, Edit runs
 * the edited arguments (the file carries the edited value), Respond sends the person's words back
 * to the run (the call does not run), Ignore runs nothing; a check-in answered with Respond is a
 * reply in the bot's thread, Ignore dismisses one, and Try again checks the bot again. Every answer is recorded with how it was
 * given. Screenshots of the cards at 1280 and 360 px, light and dark.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Approval } from '../../src/protocol/agent.js';
import type { BotWithStatus, ThreadSummary, ThreadView } from '../../src/protocol/bots.js';
import type { Checkin, HeartbeatSnapshot } from '../../src/protocol/heartbeat.js';
import { PULSE_SYSTEM } from '../../src/worlds/heartbeat/pulse.js';
import { filesystemServer } from '../support/mcp-servers.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, scriptedModelEnv, type ChatMessage, type ModelServer, type ScriptedReply } from '../support/model-server.js';
import { launchBrowser, screenshots, type TestBrowser, type WatchedPage } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';
import { ASK_USER_PULSE } from './support/heartbeat-page.js';

const PULSE_FIRST_LINE = PULSE_SYSTEM.split('\n')[0]!;

function text(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => (typeof p === 'object' && p && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

describe('Needs you answers a bot’s tool calls and the heartbeat’s check-ins', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  let dir: string;
  let scout: BotWithStatus;
  /** The bot's next replies, in order; a call with none scripted fails (a 400 naming it). */
  const replies: ScriptedReply[] = [];
  /** Every bot call's messages, in order. */
  const botCalls: ChatMessage[][] = [];
  let pulses = 0;

  const thread = async (): Promise<ThreadView> => {
    const direct = (await daemon.rpc<ThreadSummary[]>('bots.threads_list', { bot_id: scout.id })).find((t) => t.kind === 'direct')!;
    return daemon.rpc<ThreadView>('bots.thread', { thread_id: direct.id });
  };
  const approvals = () => daemon.rpc<{ approvals: Approval[] }>('approvals.list', {}).then((r) => r.approvals);
  const checkins = () => daemon.rpc<HeartbeatSnapshot>('bots.heartbeat_snapshot', {}).then((s) => s.checkins);
  const inboxCard = (kind: string) => page.locator(`[data-testid="inbox-card"][data-kind="${kind}"]`);
  const file = (name: string) => path.join(dir, name);
  const read = (name: string) => (existsSync(file(name)) ? readFileSync(file(name), 'utf8') : null);
  /** The bot asks to write `name`; its card under Needs you is returned once it shows. */
  const askToWrite = async (name: string, content: string, after: ScriptedReply) => {
    replies.push({ toolCalls: [{ name: 'fs__write_file', arguments: { path: file(name), content } }] }, after);
    await daemon.rpc('bots.send_message', { bot_id: scout.id, text: `Please save ${name}.` });
    const card = inboxCard('approval').filter({ hasText: file(name) });
    await card.waitFor({ timeout: 30_000 });
    return card;
  };
  const answerOf = async (name: string) => (await approvals()).find((a) => (a.arguments as { path?: string }).path === file(name))!;

  beforeAll(async () => {
    await ensurePageBuilt();
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-inbox-bots-'));
    server = await startModelServer();
    server.handle((req) => {
      const messages = req.body?.messages ?? [];
      const system = messages
        .filter((m) => m.role === 'system')
        .map(text)
        .join('\n');
      if (system.startsWith(PULSE_FIRST_LINE)) {
        pulses++;
        // Every pulse asks the person: the check-ins this test answers.
        return ASK_USER_PULSE;
      }
      if (/^You are .* \(@scout\)/.test(system)) {
        botCalls.push(messages);
        return replies.shift() ?? { status: 400, message: 'inbox bots test: no answer scripted for @scout' };
      }
      return { status: 400, message: `inbox bots test: an unexpected call (${system.slice(0, 60)})` };
    });
    const fs = filesystemServer(dir);
    daemon = await startDaemon({
      // Ticks as far apart as allowed: the test asks for each check ("Check now"); a tick's own pulse asks the same.
      config: [
        '[worlds.tasks]',
        'enabled = false',
        '',
        '[worlds.heartbeat]',
        'tick_seconds = 120',
        '',
        '[[mcp.servers]]',
        'name = "fs"',
        `command = ${JSON.stringify(fs.command)}`,
        `args = ${JSON.stringify(fs.args)}`,
        '',
      ].join('\n'),
      env: scriptedModelEnv(server),
    });
    scout = await daemon.rpc<BotWithStatus>('bots.create', { name: 'scout', label: 'Scout', description: 'Writes launch notes.', tools: ['fs'] });
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
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a bot’s held call shows its tool, server and arguments; Accept runs it as shown', async () => {
    const card = await askToWrite('accepted.md', 'as asked', { text: 'Saved accepted.md.' });
    expect(await card.locator('[data-testid="inbox-tool"]').innerText()).toBe('write_file');
    expect(await card.locator('[data-testid="inbox-server"]').innerText()).toBe('fs');
    expect(await card.locator('[data-arg="content"] pre').innerText()).toBe('as asked');
    expect(await card.getAttribute('data-world')).toBe('bots');
    expect(await page.locator('[data-testid="tab-badge"][data-tab="bots"]').innerText()).toBe('1');
    await screenshots(page, 'inbox-bot-approval');
    await card.getByRole('button', { name: /^Accept/ }).click();
    await expect.poll(() => read('accepted.md'), { timeout: 30_000 }).toBe('as asked');
    await card.waitFor({ state: 'detached' });
    expect((await answerOf('accepted.md')).answer).toMatchObject({ kind: 'accept', via: 'page' });
  });

  it('Edit: the edited arguments run, and the file carries the edited value', async () => {
    const card = await askToWrite('edited.md', 'first draft', { text: 'Saved edited.md.' });
    await card.getByRole('button', { name: /^Edit the arguments/ }).click();
    const form = card.locator('[data-testid="inbox-edit"]');
    await form.getByLabel(/^content/).fill('the edited value');
    await form.getByRole('button', { name: 'Run with these arguments' }).click();
    await expect.poll(() => read('edited.md'), { timeout: 30_000 }).toBe('the edited value');
    await card.waitFor({ state: 'detached' });
    expect((await answerOf('edited.md')).answer).toMatchObject({ kind: 'edit', via: 'page', arguments: { content: 'the edited value' } });
  });

  it('Respond: the person’s words go back to the run, which continues with them; the call does not run', async () => {
    const before = botCalls.length;
    const card = await askToWrite('answered.md', 'draft', { text: 'Understood: I will put it in the launch notes instead.' });
    await card.getByRole('button', { name: /^Respond/ }).click();
    await card.getByLabel(/Your answer/).fill('Put it in the launch notes, not a new file.');
    await card.getByRole('button', { name: 'Send answer' }).click();
    await card.waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => botCalls.length, { timeout: 30_000 }).toBe(before + 2);
    expect(JSON.stringify(botCalls.at(-1))).toContain('Put it in the launch notes, not a new file.');
    expect(read('answered.md')).toBeNull();
    expect((await answerOf('answered.md')).answer).toMatchObject({ kind: 'respond', via: 'page', text: 'Put it in the launch notes, not a new file.' });
  });

  it('Ignore: nothing runs, and the run hears that the person said no', async () => {
    const before = botCalls.length;
    const card = await askToWrite('ignored.md', 'draft', { text: 'Fine, I left it.' });
    await card.getByRole('button', { name: /^Ignore/ }).click();
    await card.waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => botCalls.length, { timeout: 30_000 }).toBe(before + 2);
    expect(read('ignored.md')).toBeNull();
    expect((await answerOf('ignored.md')).answer).toMatchObject({ kind: 'ignore', via: 'page' });
    expect((await answerOf('ignored.md')).state).toBe('denied');
    await page.locator('[data-testid="inbox-empty"]').waitFor();
  });

  /** A run that fails at the provider, then a check: the pulse asks the person, so a check-in waits. */
  const failThenCheck = async (): Promise<Checkin> => {
    const failed = async () => (await thread()).tasks.filter((t) => t.status === 'failed' && t.title.includes('launch plan')).length;
    const before = await failed();
    replies.push({ status: 400, message: 'the provider refused the request' });
    await daemon.rpc('bots.send_message', { bot_id: scout.id, text: 'Draft the launch plan.' });
    await expect.poll(failed, { timeout: 30_000 }).toBe(before + 1);
    // The bot is idle again (a check while it runs is skipped as busy).
    await expect.poll(async () => (await daemon.rpc<BotWithStatus[]>('bots.list')).find((b) => b.id === scout.id)!.status, { timeout: 30_000 }).toBe('idle');
    const asked = pulses;
    await daemon.rpc('bots.heartbeat_now', { bot_id: scout.id });
    await expect
      .poll(async () => (await checkins()).filter((c) => c.state === 'pending').length, { timeout: 30_000 })
      .toBe(1)
      .catch(async (err: unknown) => {
        const log = await daemon.rpc<{ entries?: unknown[] }>('bots.heartbeat_log', { bot_id: scout.id });
        throw new Error(`${String(err)}\nheartbeat log: ${JSON.stringify(log).slice(0, 3000)}`);
      });
    expect(pulses).toBeGreaterThan(asked);
    return (await checkins()).find((c) => c.state === 'pending')!;
  };

  it('a heartbeat check-in is a card under Needs you; Respond replies in the thread and answers it', { timeout: 90_000 }, async () => {
    const checkin = await failThenCheck();
    const card = inboxCard('checkin');
    await card.waitFor({ timeout: 30_000 });
    expect(await card.innerText()).toContain('Should I try the launch plan again, or leave it?');
    expect(await card.getAttribute('data-world')).toBe('heartbeat');
    // A check-in has no arguments to edit: Try again (accept), Respond and Ignore.
    expect(await card.getByRole('button', { name: /^Edit/ }).count()).toBe(0);
    for (const name of ['Try again', 'Respond', 'Ignore']) expect(await card.getByRole('button', { name: new RegExp(`^${name}`) }).count()).toBe(1);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await screenshots(page, `inbox-checkin-${scheme}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    replies.push({ text: 'Thanks, I will leave the launch plan for now.' });
    await card.getByRole('button', { name: /^Respond/ }).click();
    await card.getByLabel(/Your answer/).fill('Leave it until Monday.');
    await card.getByRole('button', { name: 'Send answer' }).click();
    await card.waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(async () => (await checkins()).find((c) => c.id === checkin.id)?.state ?? 'gone', { timeout: 30_000 }).not.toBe('pending');
    expect((await thread()).messages.some((m) => m.role === 'user' && m.text === 'Leave it until Monday.')).toBe(true);
  });

  it('Ignore dismisses a check-in', async () => {
    const checkin = await failThenCheck();
    const card = inboxCard('checkin');
    await card.waitFor({ timeout: 30_000 });
    await card.getByRole('button', { name: /^Ignore/ }).click();
    await card.waitFor({ state: 'detached', timeout: 30_000 });
    const after = await daemon.rpc<{ checkins: Checkin[] }>('bots.heartbeat_snapshot', {});
    expect(after.checkins.find((c) => c.id === checkin.id)?.state ?? 'not pending').not.toBe('pending');
    await page.locator('[data-testid="inbox-empty"]').waitFor();
    expect(await page.title()).toBe('subconscious');
    expect(watched.errors).toEqual([]);
  }, 90_000);

  it('Try again (accept) resets the attempts and checks the bot again at once', { timeout: 90_000 }, async () => {
    const checkin = await failThenCheck();
    const card = inboxCard('checkin');
    await card.waitFor({ timeout: 30_000 });
    const asked = pulses;
    await card.getByRole('button', { name: /^Try again/ }).click();
    // The answered check-in is gone; the bot was checked again (a new pulse, which asks once more here).
    await expect.poll(async () => (await checkins()).some((c) => c.id === checkin.id && c.state === 'pending'), { timeout: 30_000 }).toBe(false);
    await expect.poll(() => pulses, { timeout: 30_000 }).toBeGreaterThan(asked);
    expect(watched.errors).toEqual([]);
  });
});
