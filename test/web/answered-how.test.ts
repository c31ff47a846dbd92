/**
 * Issue 18 §5 in real Chromium against the real daemon: escalations and check-ins answered from
 * the page, over RPC and over MCP (a real MCP client over `/mcp`, `[server] mcp_allow_answers =
 * true`) each say under "Needs you" → "Answered lately" how they were answered — "on the page",
 * "over RPC by <the name the caller gave>", "over MCP by <the MCP client's own name>" — and the
 * rows the page reads keep the same (`answered_via`, `answered_by`).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkin, Escalation, HeartbeatSnapshot } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { scriptedModelEnv, startModelServer, type ModelServer } from '../support/model-server.js';
import { contrastFailures } from './support/a11y.js';
import { launchBrowser, screenshots, type TestBrowser, type WatchedPage } from './support/browser.js';
import { scriptPageModels } from './support/models.js';
import { ensurePageBuilt } from './support/page-build.js';

const ESCALATIONS = [
  { title: 'Check urgent emails', action: 'Forward the 3 urgent emails to accounting' },
  { title: 'Check the shared calendar', action: 'Decline the duplicate meeting invite' },
  { title: 'Review the open invoices', action: 'Pay the overdue invoice from Acme' },
];
const BLOCKED = ['waiting for the billing API key', 'waiting for the staging password', 'waiting for the design review'];

describe('answered lately: each escalation and check-in says how it was answered', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;
  let mcp: Client;

  const escalations = () => daemon.rpc<Escalation[]>('subconscious.escalations_list', {});
  const checkins = () => daemon.rpc<HeartbeatSnapshot>('bots.heartbeat_snapshot', {});
  const card = (kind: string, text: string) => page.locator(`[data-testid="inbox-card"][data-kind="${kind}"]`).filter({ hasText: text });
  const answered = (text: string) => page.locator('[data-testid="inbox-answered-item"]').filter({ hasText: text });

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    const models = scriptPageModels(server);
    for (const e of ESCALATIONS) {
      models.decide(e.title, 'escalate');
      models.analyse(e.title, `Read what came in.\nRECOMMENDED ACTION: ${e.action}`);
    }
    daemon = await startDaemon({
      config: ['[server]', 'mcp_allow_answers = true', ''].join('\n'),
      env: scriptedModelEnv(server),
    });
    // Only this test's tasks: the starter ones stay off.
    for (const t of await daemon.rpc<{ id: string }[]>('subconscious.tasks_list'))
      await daemon.rpc('subconscious.tasks_update', { task_id: t.id, enabled: false });
    for (const e of ESCALATIONS) await daemon.rpc('subconscious.tasks_add', { title: e.title, needs_tools: false });
    // An external runtime's bot ends three runs with a BLOCKED: line: three check-ins, no model needed.
    await daemon.rpc('runtime.register', {
      runtime_id: 'acme',
      name: 'Acme agents',
      instance_id: 'p1',
      delivery: { kind: 'poll' },
      bots: [{ id: 'writer', name: 'writer', label: 'Writer' }],
    });
    await daemon.rpc('runtime.report', {
      runtime_id: 'acme',
      tasks: BLOCKED.map((_, i) => ({ id: `job-${i}`, bot_id: 'writer', title: `Job ${i}`, status: 'failed', error_kind: 'unknown', error: 'blocked' })),
      runs: BLOCKED.map((b, i) => ({ id: `run-${i}`, bot_id: 'writer', task_id: `job-${i}`, status: 'failed', outcome: `BLOCKED: ${b}` })),
    });
    mcp = new Client({ name: 'Claude Desktop', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${daemon.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${daemon.token}` } } }),
    );
    browser = await launchBrowser();
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    await daemon.rpc('subconscious.trigger', { world: 'tasks' });
  }, 180_000);

  afterAll(async () => {
    await mcp?.close();
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('one of each answered on the page, over RPC and over MCP, and each says so', async () => {
    for (const e of ESCALATIONS) await card('escalation', e.title).waitFor({ timeout: 60_000 });
    for (const b of BLOCKED) await card('checkin', b).waitFor({ timeout: 30_000 });
    // Nothing answered yet: no "Answered lately".
    expect(await page.locator('[data-testid="inbox-answered"]').count()).toBe(0);
    const pending = await escalations();
    const escalationId = (title: string) => pending.find((e) => e.title === title && e.status === 'pending')!.id;
    const openCheckins = (await checkins()).checkins;
    const checkinId = (text: string) => openCheckins.find((c) => c.question.includes(text))!.id;

    // On the page: Ignore on one card of each kind.
    await card('escalation', ESCALATIONS[0]!.title)
      .getByRole('button', { name: /^Ignore/ })
      .click();
    await card('escalation', ESCALATIONS[0]!.title).waitFor({ state: 'detached' });
    await card('checkin', BLOCKED[0]!)
      .getByRole('button', { name: /^Ignore/ })
      .click();
    await card('checkin', BLOCKED[0]!).waitFor({ state: 'detached' });
    // Over RPC, with the caller's name.
    await daemon.rpc('subconscious.escalations_dismiss', { id: escalationId(ESCALATIONS[1]!.title), by: 'ops-script' });
    await daemon.rpc('bots.resolve_checkin', { id: checkinId(BLOCKED[1]!), resolution: 'dismissed', by: 'ops-script' });
    // Over MCP: the client's own name, recorded as answered over MCP.
    const viaMcp = [
      await mcp.callTool({ name: 'escalation_answer', arguments: { id: escalationId(ESCALATIONS[2]!.title), approve: false } }),
      await mcp.callTool({ name: 'checkin_answer', arguments: { id: checkinId(BLOCKED[2]!), resolution: 'dismissed' } }),
    ];
    expect(viaMcp.map((r) => r.isError ?? false)).toEqual([false, false]);

    // The rows the page reads say the same.
    await expect
      .poll(
        async () =>
          (await checkins()).answered_checkins?.map((c: Checkin) => [c.question.replace(/^.*?(waiting for [^.]+).*$/s, '$1'), c.answered_via, c.answered_by]),
        {
          timeout: 15_000,
        },
      )
      .toEqual([
        [BLOCKED[2], 'mcp', 'Claude Desktop'],
        [BLOCKED[1], 'rpc', 'ops-script'],
        [BLOCKED[0], 'page', 'you'],
      ]);
    const done = (await escalations()).filter((e) => e.status !== 'pending');
    expect(Object.fromEntries(done.map((e) => [e.title, [e.answer?.via, e.answer?.by]]))).toEqual({
      [ESCALATIONS[0]!.title]: ['page', 'you'],
      [ESCALATIONS[1]!.title]: ['rpc', 'ops-script'],
      [ESCALATIONS[2]!.title]: ['mcp', 'Claude Desktop'],
    });

    // Needs you is empty now; "Answered lately" says how each was answered.
    await page.locator('[data-testid="inbox-empty"]').waitFor({ timeout: 15_000 });
    const list = page.locator('[data-testid="inbox-answered"]');
    await expect.poll(() => list.locator('[data-testid="inbox-answered-item"]').count(), { timeout: 15_000 }).toBe(6);
    await list.locator('summary').click();
    const how = async (text: string) => (await answered(text).locator('[data-testid="inbox-answered-how"]').innerText()).trim();
    expect(await how(ESCALATIONS[0]!.title)).toBe('Dismissed on the page');
    expect(await how(ESCALATIONS[1]!.title)).toBe('Dismissed over RPC by ops-script');
    expect(await how(ESCALATIONS[2]!.title)).toBe('Dismissed over MCP by Claude Desktop');
    expect(await how(BLOCKED[0]!)).toBe('Dismissed on the page');
    expect(await how(BLOCKED[1]!)).toBe('Dismissed over RPC by ops-script');
    expect(await how(BLOCKED[2]!)).toBe('Dismissed over MCP by Claude Desktop');
    // A check-in names the bot it came from.
    expect(await answered(BLOCKED[2]!).innerText()).toMatch(/^Writer \(in Acme agents\) asked: /);
    expect(await answered(BLOCKED[2]!).getAttribute('data-via')).toBe('mcp');
    expect(await contrastFailures(page), 'answered lately').toEqual([]);
    await screenshots(page, 'inbox-answered');

    // A row's approval trail in the Activity Log says the same.
    for (const [i, words] of [
      [0, 'skipped by you on the page'],
      [1, 'skipped over RPC by ops-script'],
      [2, 'skipped over MCP by Claude Desktop'],
    ] as const) {
      const e = done.find((x) => x.title === ESCALATIONS[i]!.title)!;
      await page.locator(`[data-testid="log-row"][data-task-id="${e.task_id}"] [data-testid="log-open-detail"]`).first().click();
      const step = page
        .locator('[data-testid="log-detail"] [data-testid="detail-approvals"] li[data-state="dismissed"]')
        .filter({ hasText: ESCALATIONS[i]!.action });
      await step.waitFor({ timeout: 15_000 });
      expect((await step.innerText()).replace(/^.*? · /, '')).toMatch(new RegExp(`^${words}: `));
    }
    expect(watched.errors).toEqual([]);
  }, 120_000);
});
