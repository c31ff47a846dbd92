/**
 * The Subconscious and Usage tabs in real Chromium against the real daemon and the scripted
 * model server: tasks added, toggled and deleted from the page; Run now with its log row going
 * from pulsing blue to its final colour live; escalations approved and skipped; the usage chart
 * agreeing with the ledger; screenshots of every tab at desktop and phone sizes.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SQLite } from '../../src/store/index.js';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageCalls, UsageSummary } from '../../src/protocol/index.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { horizontalOverflow, launchBrowser, screenshots, VIEWPORTS, type TestBrowser, type WatchedPage } from './support/browser.js';
import { contrastFailures, walkFocus } from './support/a11y.js';
import { scriptPageModels, type PageModels } from './support/models.js';
import { ensurePageBuilt } from './support/page-build.js';

interface TaskRow {
  id: string;
  title: string;
  source: string;
  recurrence: string;
  enabled: boolean;
  needs_tools: boolean;
}
interface LogRow {
  id: string;
  task_id: string;
  decision: string;
  result: string | null;
}
interface EscalationRow {
  id: string;
  title: string;
  status: string;
  priority: string;
}
interface StatusRow {
  world: string;
  running: boolean;
  total_ticks: number;
}

/** The viewer is 14 hours ahead of UTC: their day is not the daemon's UTC day. */
const VIEWER_TZ = 'Pacific/Kiritimati';
const MEMORY_SERVER = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-memory/dist/index.js', import.meta.url));

const LONG_RESULT =
  'Release notes summarised: the importer now streams large files, the scheduler no longer stacks ticks after a sleep, ' +
  'three flaky tests were fixed, and the settings page gained a dark theme. Nothing needs your attention.';

describe('Subconscious and Usage tabs in Chromium', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let models: PageModels;
  let daemon: TestDaemon;
  let watched: WatchedPage;
  let page: Page;

  const waitIdle = async () => {
    // A tick in flight would take the next scripted evaluation; start each scenario from rest.
    await page.waitForFunction(
      async () => {
        const token = sessionStorage.getItem('subconscious.token');
        const res = await fetch('/rpc', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subconscious.status', params: {} }),
        });
        const body = (await res.json()) as { result: { instances: { running: boolean }[] } };
        return body.result.instances.every((i) => !i.running);
      },
      undefined,
      { polling: 200 },
    );
  };
  const taskRow = (title: string) => page.locator('[data-testid="task-row"]', { hasText: title });
  const logRowFor = (taskId: string) => page.locator(`[data-testid="log-row"][data-task-id="${taskId}"]`);
  const tasks = () => daemon.rpc<TaskRow[]>('subconscious.tasks_list');

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer();
    models = scriptPageModels(server);
    daemon = await startDaemon({
      // One real MCP server from npm, so the Skills view has a skill and its health to show.
      config: ['[[mcp.servers]]', 'name = "memory"', `command = ${JSON.stringify(process.execPath)}`, `args = [${JSON.stringify(MEMORY_SERVER)}]`, ''].join(
        '\n',
      ),
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
      },
    });
    browser = await launchBrowser({ timezoneId: VIEWER_TZ });
    watched = await browser.newPage();
    page = watched.page;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    await page.locator('[data-testid="world-tasks"]').waitFor();
    // A marker that a reload would wipe: every update below must arrive without one.
    await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('shows system tasks with the default badge and no controls', async () => {
    const system = page.locator('[data-testid="task-row"][data-source="system"]');
    await system.first().waitFor();
    const fromDaemon = (await tasks()).filter((t) => t.source === 'system' && !('completed' in t && t.completed));
    expect(await system.count()).toBe(fromDaemon.length);
    for (const row of await system.all()) {
      expect(await row.locator('.badge', { hasText: 'default' }).count()).toBe(1);
      expect(await row.locator('button').count()).toBe(0);
      expect(await row.locator('.dot-green').count()).toBe(1);
    }
  });

  it('a system task switched off shows a switch that turns it on again; the status bar and the heading count the same tasks', async () => {
    const heading = page.locator('#active-tasks-heading .count');
    const statusTasks = page.locator('[data-testid="status-tasks"]');
    // Both count the tasks that are not completed, on or off; the status bar says how many are on.
    const expectCounts = async () => {
      const active = (await daemon.rpc<(TaskRow & { completed: boolean })[]>('subconscious.tasks_list')).filter((t) => !t.completed);
      const on = active.filter((t) => t.enabled).length;
      const noun = active.length === 1 ? 'task' : 'tasks';
      const expected = on < active.length ? `${on} of ${active.length} ${noun} on` : `${active.length} ${noun}`;
      await page.waitForFunction(
        ([n, text]) =>
          document.querySelector('#active-tasks-heading .count')?.textContent === n &&
          document.querySelector('[data-testid="status-tasks"]')?.textContent === text,
        [String(active.length), expected] as const,
      );
      expect(await heading.innerText()).toBe(String(active.length));
      expect(await statusTasks.innerText()).toBe(expected);
      return active;
    };
    const before = await expectCounts();
    const system = before.find((t) => t.source === 'system' && t.enabled)!;
    const row = page.locator(`[data-testid="task-row"][data-task-id="${system.id}"]`);
    const toggle = row.getByRole('switch', { name: `Enable task: ${system.title}` });
    expect(await row.locator('button').count()).toBe(0);

    await daemon.rpc('subconscious.tasks_update', { task_id: system.id, enabled: false });
    await toggle.waitFor();
    expect(await toggle.getAttribute('aria-checked')).toBe('false');
    expect(await row.locator('.dot-gray').count()).toBe(1);
    expect(await row.locator('.badge', { hasText: 'default' }).count()).toBe(1);
    expect(await row.getByRole('button', { name: /^Delete/ }).count()).toBe(0); // system tasks are never deleted
    expect(await row.locator('button').count()).toBe(1);
    expect(await contrastFailures(page), 'a switched-off system task').toEqual([]);
    const off = await expectCounts();
    expect(off.filter((t) => !t.enabled).map((t) => t.id)).toContain(system.id);
    expect(await statusTasks.innerText()).toMatch(/^\d+ of \d+ tasks on$/);

    await toggle.click();
    await expect.poll(async () => (await tasks()).find((t) => t.id === system.id)?.enabled).toBe(true);
    await toggle.waitFor({ state: 'detached' });
    expect(await row.locator('button').count()).toBe(0);
    expect(await row.locator('.dot-green').count()).toBe(1);
    expect((await expectCounts()).length).toBe(before.length);
  });

  it('the world card shows the status and disables and enables the world', async () => {
    const card = page.locator('[data-testid="world-tasks"]');
    const status = async () =>
      (await daemon.rpc<{ instances: (StatusRow & { enabled: boolean })[] }>('subconscious.status')).instances.find((i) => i.world === 'tasks')!;
    await waitIdle();
    await page.waitForFunction(
      async (n) => document.querySelector('[data-testid="world-tasks"] [data-testid="world-ticks"]')?.textContent === String(n),
      (await status()).total_ticks,
    );
    const toggle = card.getByRole('switch', { name: 'Enable Tasks' });
    expect(await toggle.getAttribute('aria-checked')).toBe('true');
    await toggle.click();
    await page.locator('[data-testid="world-tasks"][data-state="Disabled"]').waitFor();
    await expect.poll(async () => (await status()).enabled).toBe(false);
    // Off, Run now would run nothing: the button is disabled and says why; the RPC refuses.
    const runNow = card.getByRole('button', { name: 'Run Tasks now' });
    expect(await runNow.isDisabled()).toBe(true);
    expect(await card.locator('[data-testid="world-run-off"]').textContent()).toMatch(/switched off: switch it on first/);
    await expect(daemon.rpc('subconscious.trigger', { world: 'tasks' })).rejects.toThrow(/tasks is off: switched off on the page/);
    await toggle.click();
    await page.locator('[data-testid="world-tasks"][data-state="Idle"]').waitFor();
    await expect.poll(async () => (await status()).enabled).toBe(true);
    expect(await runNow.isDisabled()).toBe(false);
    expect(await card.locator('[data-testid="world-run-off"]').count()).toBe(0);
  });

  it('adds a user task (every tick, once, cron), toggles it, deletes it; a refused add rolls back with a message', async () => {
    const input = page.getByLabel('New task');
    await input.fill('Summarize the team notes');
    await page.getByLabel('Runs', { exact: true }).selectOption('once');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const row = taskRow('Summarize the team notes');
    await row.and(page.locator(':not([data-task-id^="pending-"])')).waitFor();
    let added = (await tasks()).find((t) => t.title === 'Summarize the team notes');
    expect(added).toMatchObject({ source: 'user', recurrence: 'once', enabled: true });
    expect(await input.inputValue()).toBe('');

    await page.getByLabel('Runs', { exact: true }).selectOption('cron');
    await input.fill('Weekday digest');
    await page.getByLabel('Cron', { exact: true }).fill('0 9 * * 1-5');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await taskRow('Weekday digest').and(page.locator(':not([data-task-id^="pending-"])')).waitFor();
    expect((await tasks()).find((t) => t.title === 'Weekday digest')?.recurrence).toBe('cron:0 9 * * 1-5');

    // The daemon refuses a bad cron expression: the optimistic row goes away, the text comes back,
    // and the reason stays under the form, by the Cron field, in words (not croner's), with the
    // hint's two forms as code — no passing notice.
    const cronField = page.getByLabel('Cron', { exact: true });
    const formError = page.locator('[data-testid="add-task-error"]');
    await input.fill('Broken schedule');
    await cronField.fill('61 * * * *');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await formError.waitFor();
    expect(await formError.getAttribute('role')).toBe('alert');
    const refusal = await formError.innerText();
    expect(refusal).toContain('Could not add “Broken schedule”: recurrence: "61 * * * *" is not a valid cron expression (minute must be 0-59)');
    expect(refusal).not.toMatch(/CronPattern|`/);
    expect(await formError.locator('code').allInnerTexts()).toEqual(expect.arrayContaining(['cron:0 9 * * 1-5', '0 9 * * 1-5']));
    expect(await cronField.getAttribute('aria-invalid')).toBe('true');
    expect((await cronField.getAttribute('aria-describedby'))?.split(' ')).toContain(await formError.getAttribute('id'));
    expect(await contrastFailures(page), 'the form error and its code').toEqual([]);
    await taskRow('Broken schedule').waitFor({ state: 'detached' });
    expect(await input.inputValue()).toBe('Broken schedule');
    expect((await tasks()).some((t) => t.title === 'Broken schedule')).toBe(false);
    expect(await page.locator('[data-testid="notice"]', { hasText: 'Broken schedule' }).count()).toBe(0);
    // Corrected, the add goes through and the error goes with it.
    await cronField.fill('1 * * * *');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await taskRow('Broken schedule').and(page.locator(':not([data-task-id^="pending-"])')).waitFor();
    await formError.waitFor({ state: 'detached' });
    expect(await cronField.getAttribute('aria-invalid')).toBe('false');
    const fixed = (await tasks()).find((t) => t.title === 'Broken schedule')!;
    expect(fixed.recurrence).toBe('cron:1 * * * *');
    await daemon.rpc('subconscious.tasks_remove', { task_id: fixed.id });
    await taskRow('Broken schedule').waitFor({ state: 'detached' });
    await page.getByLabel('Runs', { exact: true }).selectOption('default');

    // Write rights are the person's choice (issue 9): left alone, a task only reads, whatever its
    // title says (the page asks; write-rights tests in subconscious-why.test.ts); chosen, they are given.
    await input.fill('Send the weekly digest to Slack');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const digest = taskRow('Send the weekly digest to Slack').and(page.locator(':not([data-task-id^="pending-"])'));
    await digest.locator('[data-testid="write-suggestion"]').waitFor();
    expect((await tasks()).find((t) => t.title === 'Send the weekly digest to Slack')?.needs_tools).toBe(false);
    expect(await digest.locator('.badge', { hasText: 'writes' }).count()).toBe(0);
    await page.getByLabel('Writes', { exact: true }).selectOption('write');
    await input.fill('Send the invoice reminders');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await taskRow('Send the invoice reminders').and(page.locator(':not([data-task-id^="pending-"])')).locator('.badge', { hasText: 'writes' }).waitFor();
    expect((await tasks()).find((t) => t.title === 'Send the invoice reminders')?.needs_tools).toBe(true);
    await page.getByLabel('Writes', { exact: true }).selectOption('read');
    for (const t of await tasks()) if (t.title.startsWith('Send ')) await daemon.rpc('subconscious.tasks_remove', { task_id: t.id });
    await taskRow('Send the weekly digest to Slack').waitFor({ state: 'detached' });

    // Toggle off and on again. A successful edit also clears what the form said before.
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await formError.filter({ hasText: 'Write what the task should check or do.' }).waitFor();
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    const toggle = row.getByRole('switch', { name: 'Enable task: Summarize the team notes' });
    await toggle.click();
    await formError.waitFor({ state: 'detached' });
    await page.locator(`[data-testid="task-row"][data-task-id="${added!.id}"][data-enabled="false"]`).waitFor();
    await expect.poll(async () => (await tasks()).find((t) => t.id === added!.id)?.enabled).toBe(false);
    expect(await toggle.getAttribute('aria-checked')).toBe('false');
    await toggle.click();
    await expect.poll(async () => (await tasks()).find((t) => t.id === added!.id)?.enabled).toBe(true);

    // Delete shows on hover (and on keyboard focus) and removes the task.
    const del = row.getByRole('button', { name: 'Delete task: Summarize the team notes' });
    await page.mouse.move(0, 0);
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    // Hidden when neither hovered nor focused (after its fade-out transition).
    await page.waitForFunction((el) => getComputedStyle(el!).opacity === '0', await del.elementHandle());
    await row.hover();
    await page.waitForFunction((el) => getComputedStyle(el!).opacity === '1', await del.elementHandle());
    await del.click();
    await row.waitFor({ state: 'detached' });
    added = (await tasks()).find((t) => t.title === 'Summarize the team notes');
    expect(added).toBeUndefined();

    await taskRow('Weekday digest').getByRole('button', { name: 'Delete task: Weekday digest' }).focus();
    await page.waitForFunction(
      (el) => getComputedStyle(el!).opacity === '1',
      await taskRow('Weekday digest').getByRole('button', { name: 'Delete task: Weekday digest' }).elementHandle(),
    );
    await page.keyboard.press('Enter');
    await taskRow('Weekday digest').waitFor({ state: 'detached' });
    expect((await tasks()).some((t) => t.title === 'Weekday digest')).toBe(false);
  });

  it('Run now: the log row pulses blue while evaluating and turns green with its result, without a reload', async () => {
    models.decide('Summarize the release notes', 'act');
    models.act('release notes', LONG_RESULT);
    await daemon.rpc('subconscious.tasks_add', { title: 'Summarize the release notes', needs_tools: false });
    const task = (await tasks()).find((t) => t.title === 'Summarize the release notes')!;
    await taskRow('Summarize the release notes').waitFor();
    await waitIdle();

    const hold = models.holdEvaluations();
    const row = logRowFor(task.id).first();
    try {
      await page.getByRole('button', { name: 'Run Tasks now' }).click();
      await hold.reached;
      await row.and(page.locator('[data-decision="in_progress"]')).waitFor();
      expect(await row.locator('.dot.dot-blue.dot-pulse').count()).toBe(1);
      expect(await row.locator('[data-testid="log-text"]').innerText()).toBe('Deciding what it needs...');
      await page.locator('[data-testid="world-tasks"][data-state="Running"]').waitFor();
      await screenshots(page, 'subconscious-tick-running');
    } finally {
      hold.release();
    }
    await row.and(page.locator('[data-decision="act"]')).waitFor();
    expect(await row.locator('.dot.dot-green').count()).toBe(1);
    expect(await row.locator('.dot-pulse').count()).toBe(0);
    // Over 120 characters: collapsed, then expanded on request.
    const text = row.locator('[data-testid="log-text"]');
    expect((await text.innerText()).length).toBeLessThanOrEqual(121);
    const more = row.getByRole('button', { name: 'Show more' });
    expect(await more.getAttribute('aria-expanded')).toBe('false');
    await more.click();
    expect(await text.innerText()).toBe(LONG_RESULT);
    expect(await row.getByRole('button', { name: 'Show less' }).getAttribute('aria-expanded')).toBe('true');

    const log = await daemon.rpc<LogRow[]>('subconscious.log_list', { task_id: task.id });
    expect(log[0]).toMatchObject({ decision: 'act', result: LONG_RESULT });
    expect(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    await page.locator('[data-testid="world-tasks"]:not([data-state="Running"])').waitFor();
  });

  it('a result with `backticks` shows them as code, and its markup as text', async () => {
    const result = 'The build is green; run `npm test` again after merging <b>feature</b>.';
    models.decide('Check the nightly build', 'act');
    models.act('Check the nightly build', result);
    await daemon.rpc('subconscious.tasks_add', { title: 'Check the nightly build', needs_tools: false });
    const task = (await tasks()).find((t) => t.title === 'Check the nightly build')!;
    await taskRow('Check the nightly build').waitFor();
    await waitIdle();
    await page.getByRole('button', { name: 'Run Tasks now' }).click();
    const text = logRowFor(task.id).and(page.locator('[data-decision="act"]')).locator('[data-testid="log-text"]');
    await text.waitFor();
    expect((await daemon.rpc<LogRow[]>('subconscious.log_list', { task_id: task.id }))[0]?.result).toBe(result);
    expect(await text.locator('code').allInnerTexts()).toEqual(['npm test']);
    expect(await text.innerText()).toBe('The build is green; run npm test again after merging <b>feature</b>.');
    expect(await text.locator('b').count()).toBe(0);
    await waitIdle();
    await daemon.rpc('subconscious.tasks_remove', { task_id: task.id });
    await taskRow('Check the nightly build').waitFor({ state: 'detached' });
  });

  it('with the event stream blocked, the page says so, and polls in_progress rows every 2 s until they settle', async () => {
    models.decide('Poll the inbox', 'act');
    models.act('Poll the inbox', 'Inbox checked: two newsletters, nothing urgent.');
    await daemon.rpc('subconscious.tasks_add', { title: 'Poll the inbox', needs_tools: false });
    const task = (await tasks()).find((t) => t.title === 'Poll the inbox')!;
    await waitIdle();

    const second = await browser.newPage();
    const p2 = second.page;
    let blocked = 0;
    await p2.route(/\/events(\?|$)/, (route) => {
      blocked++;
      return route.abort();
    });
    await p2.goto(daemon.pageUrl);
    await p2.locator('[data-testid="banner-stream"]').waitFor();
    expect(await p2.locator('[data-testid="banner-unreachable"]').count()).toBe(0);
    await p2.locator('[data-testid="task-row"]', { hasText: 'Poll the inbox' }).waitFor();

    const hold = models.holdEvaluations();
    const row = p2.locator(`[data-testid="log-row"][data-task-id="${task.id}"]`).first();
    const isLogRead = (r: Request) => r.url().endsWith('/rpc') && (r.postData() ?? '').includes('"subconscious.log_ticks"');
    try {
      await p2.getByRole('button', { name: 'Run Tasks now' }).click();
      await hold.reached;
      await row.and(p2.locator('[data-decision="in_progress"]')).waitFor();
      // Held here, nothing changes in the status, so only the log's own 2 s poll asks again — twice.
      await p2.waitForRequest(isLogRead);
      await p2.waitForRequest(isLogRead);
    } finally {
      hold.release();
    }
    await row.and(p2.locator('[data-decision="act"]')).waitFor();
    expect(await row.locator('[data-testid="log-text"]').innerText()).toBe('Inbox checked: two newsletters, nothing urgent.');
    expect(await p2.locator('[data-testid="live-state"]').getAttribute('data-state')).not.toBe('open');
    expect(blocked).toBeGreaterThan(0);
    // The browser reports the aborted stream requests; nothing else went wrong.
    expect(second.errors.filter((e) => !/ERR_FAILED/.test(e))).toEqual([]);
    await p2.close();
    await daemon.rpc('subconscious.tasks_remove', { task_id: task.id });
  });

  it('escalations appear as amber cards under Needs you; "Go ahead" runs one, "Ignore" dismisses another, "Fix in Skills" leads to the skills; no Approval Needed section is left', async () => {
    const specs = [
      {
        title: 'Check urgent emails',
        analysis: 'Three urgent emails from the bank.\nRECOMMENDED ACTION: [important] Forward the 3 urgent emails to #team-alerts',
      },
      { title: 'Check the shared calendar', analysis: 'Two invites collide on Friday.\nRECOMMENDED ACTION: Decline the duplicate meeting invite' },
      {
        title: 'Review the Notion workspace',
        analysis: 'The Notion connection answers 401.\nRECOMMENDED ACTION: [critical] Re-authenticate the Notion integration',
      },
    ];
    for (const s of specs) {
      models.decide(s.title, 'escalate');
      models.analyse(s.title, s.analysis);
      await daemon.rpc('subconscious.tasks_add', { title: s.title, needs_tools: false });
    }
    await waitIdle();
    await page.getByRole('button', { name: 'Run Tasks now' }).click();

    const cards = page.locator('[data-testid="inbox-card"][data-kind="escalation"]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="inbox-card"][data-kind="escalation"]').length === 3);
    // The inbox holds the approvals: the old section is gone.
    expect(await page.locator('#approvals, [data-testid="approval-card"]').count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Approval Needed' }).count()).toBe(0);
    const card = (title: string) => cards.filter({ hasText: title });
    expect(await card('Check urgent emails').locator('[data-testid="priority"]').innerText()).toBe('important');
    expect(await card('Review the Notion workspace').locator('[data-testid="priority"]').innerText()).toBe('critical');
    expect(await card('Check the shared calendar').locator('[data-testid="priority"]').innerText()).toBe('normal');
    expect(await card('Check urgent emails').innerText()).toContain('Forward the 3 urgent emails to #team-alerts');
    expect(await card('Review the Notion workspace').getByRole('button', { name: 'Fix in Skills' }).count()).toBe(1);
    expect(await card('Review the Notion workspace').getByRole('button', { name: 'Go ahead' }).count()).toBe(0);
    const amber = await card('Check urgent emails').evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(amber).toBe('rgb(255, 246, 220)');
    const emailsTask = (await tasks()).find((t) => t.title === 'Check urgent emails')!;
    const calendarTask = (await tasks()).find((t) => t.title === 'Check the shared calendar')!;
    const emailsRow = logRowFor(emailsTask.id).first();
    await emailsRow.and(page.locator('[data-decision="escalate"]')).waitFor();
    // Each escalated task says it waits for an answer (it is not evaluated again until then).
    const taskRow = (id: string) => page.locator(`[data-testid="task-row"][data-task-id="${id}"]`);
    await taskRow(calendarTask.id).locator('[data-testid="task-waiting"]').waitFor();
    expect(await page.locator('[data-testid="task-waiting"]').count()).toBe(3);
    expect(await emailsRow.locator('.dot-amber').count()).toBe(1);
    expect(await emailsRow.locator('[data-testid="log-text"]').innerText()).toBe('Waiting for approval');
    await waitIdle();
    await screenshots(page, 'subconscious');

    await card('Check urgent emails').getByRole('button', { name: 'Go ahead' }).click();
    await card('Check urgent emails').waitFor({ state: 'detached' });
    await emailsRow.and(page.locator('[data-decision="act"]')).waitFor();
    expect(await emailsRow.locator('[data-testid="log-text"]').innerText()).toBe('Done: carried out the approved action.');
    expect((await daemon.rpc<EscalationRow[]>('subconscious.escalations_list', { status: 'approved' })).map((e) => e.title)).toEqual(['Check urgent emails']);
    expect(models.seen).toContain('approved');

    await card('Check the shared calendar')
      .getByRole('button', { name: /^Ignore/ })
      .click();
    await card('Check the shared calendar').waitFor({ state: 'detached' });
    const calendarRow = logRowFor(calendarTask.id).first();
    await calendarRow.and(page.locator('[data-decision="dismissed"]')).waitFor();
    expect(await calendarRow.locator('[data-testid="log-text"]').innerText()).toBe('Skipped');
    expect(await calendarRow.locator('.dot-gray').count()).toBe(1);
    await taskRow(calendarTask.id).locator('[data-testid="task-waiting"]').waitFor({ state: 'detached' });
    expect(await taskRow(emailsTask.id).locator('[data-testid="task-waiting"]').count()).toBe(0);
    expect((await daemon.rpc<EscalationRow[]>('subconscious.escalations_list', { status: 'dismissed' })).map((e) => e.title)).toEqual([
      'Check the shared calendar',
    ]);
    expect(models.seen.filter((k) => k === 'approved')).toHaveLength(1); // skipping ran nothing

    await card('Review the Notion workspace').getByRole('button', { name: 'Fix in Skills' }).click();
    await page.locator('[role="tab"][aria-selected="true"]', { hasText: 'Skills' }).waitFor();
    await page.locator('[data-testid="skills"]').waitFor();
    expect(page.url()).toContain('#/skills');
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    await card('Review the Notion workspace').waitFor();
  });

  it('the Usage tab agrees with the ledger: chart, totals, by world and purpose, and paged calls', async () => {
    await waitIdle();
    // Older calls, as earlier days would have left them in the ledger (some failed), so the
    // chart has more than one day and the calls table more than one page.
    const dbFile = path.join(daemon.workspace, '.subconscious', 'subconscious.db');
    const db = new SQLite(dbFile);
    db.pragma('busy_timeout = 5000');
    const DAY = 86_400_000;
    const insert = db.prepare(
      'insert into model_calls (id, at, world, purpose, role, model, input_tokens, output_tokens, estimated, latency_ms, outcome, error) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    for (let i = 0; i < 30; i++) {
      const failed = i % 7 === 3;
      insert.run(
        `seed-${i}`,
        Date.now() - (1 + (i % 12)) * DAY,
        i % 3 ? 'tasks' : 'heartbeat',
        i % 2 ? 'evaluate' : 'pulse',
        'local',
        'scripted-local',
        200 + i * 10,
        20 + i,
        0,
        100 + i,
        failed ? 'timeout' : 'ok',
        failed ? 'took longer than 120 s' : null,
      );
    }
    // Two calls a minute either side of the viewer's midnight: one UTC day, two of the viewer's.
    const viewerToday = (await daemon.rpc<UsageSummary>('usage.summary', { days: 1, timezone: VIEWER_TZ })).today.start;
    insert.run('seed-before-midnight', viewerToday - 60_000, 'tasks', 'evaluate', 'local', 'scripted-local', 11, 1, 0, 50, 'ok', null);
    insert.run('seed-after-midnight', Math.min(viewerToday + 60_000, Date.now()), 'tasks', 'evaluate', 'local', 'scripted-local', 13, 1, 0, 50, 'ok', null);

    await page.getByRole('tab', { name: 'Usage' }).click();
    await page.locator('[data-testid="usage-chart"]').waitFor();
    // The page counts the viewer's days, not the daemon's.
    const summary = await daemon.rpc<UsageSummary>('usage.summary', { days: 14, timezone: VIEWER_TZ });
    const from = summary.from;
    const direct = db
      .prepare('select count(*) as calls, coalesce(sum(input_tokens),0) as input, coalesce(sum(output_tokens),0) as output from model_calls where at >= ?')
      .get(from) as { calls: number; input: number; output: number };
    const allCalls = (db.prepare('select count(*) as n from model_calls').get() as { n: number }).n;
    db.close();
    expect(direct.calls).toBeGreaterThan(30); // the seeded rows plus the real calls of the ticks above
    expect(summary.totals).toMatchObject({ calls: direct.calls, input_tokens: direct.input, output_tokens: direct.output });

    const num = async (sel: string) => Number((await page.locator(sel).innerText()).replace(/[^0-9]/g, ''));
    // The page may have read the ledger before the seeded rows: it refreshes on the next tick; reload its data by re-opening the tab.
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    await page.getByRole('tab', { name: 'Usage' }).click();
    await page.waitForFunction(
      (n) => document.querySelector('[data-testid="usage-total-figures"] [data-testid="figure-calls"]')?.textContent?.replace(/[^0-9]/g, '') === String(n),
      direct.calls,
    );
    expect(await num('[data-testid="usage-total-figures"] [data-testid="figure-input"]')).toBe(direct.input);
    expect(await num('[data-testid="usage-total-figures"] [data-testid="figure-output"]')).toBe(direct.output);
    expect(await num('[data-testid="usage-today-figures"] [data-testid="figure-calls"]')).toBe(summary.today.calls);
    await expect(page.locator('[data-testid="usage-today"]').innerText()).resolves.toContain(`Today (${summary.today.date}, ${VIEWER_TZ})`);

    const chart = page.locator('[data-testid="usage-chart"]');
    const drawn = async () => Number(await chart.getAttribute('data-drawn-total'));
    expect(await chart.getAttribute('data-metric')).toBe('input_tokens');
    expect(await drawn()).toBe(direct.input);
    await page.getByLabel('Show', { exact: true }).selectOption('calls');
    await page.locator('[data-testid="usage-chart"][data-metric="calls"]').waitFor();
    expect(await drawn()).toBe(direct.calls);
    const perDay = await page.locator('[data-testid="chart-day"]').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-total'))));
    expect(perDay).toEqual(summary.per_day.map((d) => d.calls));
    await page.getByLabel('Show', { exact: true }).selectOption('output_tokens');
    await page.locator('[data-testid="usage-chart"][data-metric="output_tokens"]').waitFor();
    expect(await drawn()).toBe(direct.output);
    await page.getByLabel('Split', { exact: true }).selectOption('by_purpose');
    expect(await drawn()).toBe(direct.output);

    for (const [testid, groups] of [
      ['usage-by-world', summary.totals.by_world],
      ['usage-by-purpose', summary.totals.by_purpose],
    ] as const) {
      for (const g of groups) {
        const cells = await page.locator(`[data-testid="${testid}"] tr[data-key="${g.key}"] td`).allInnerTexts();
        expect(cells.slice(0, 3).map((c) => Number(c.replace(/[^0-9]/g, '')))).toEqual([g.calls, g.input_tokens, g.output_tokens]);
      }
    }

    // Purposes in words, not the ledger's codes (issue 23); the code stays in a tooltip.
    const evaluate = page.locator('[data-testid="usage-by-purpose"] tr[data-key="evaluate"] th');
    expect(await evaluate.innerText()).toBe('deciding what each task needs');
    expect(await evaluate.getAttribute('title')).toBe('evaluate');
    expect(await page.locator('[data-testid="usage-by-purpose"]').innerText()).not.toMatch(/\bevaluate\b|execute_/);

    // Calls: newest first, 20 a page, latency and outcome per row.
    const calls = await daemon.rpc<UsageCalls>('usage.calls', { limit: 20 });
    expect(calls.total).toBe(allCalls);
    await page.locator('[data-testid="calls-range"]', { hasText: `of ${allCalls}` }).waitFor();
    expect(await page.locator('[data-testid="call-row"]').count()).toBe(20);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.locator('[data-testid="calls-range"]', { hasText: '21–' }).waitFor();
    expect(await page.locator('[data-testid="call-row"]').count()).toBe(Math.min(20, allCalls - 20));
    const failedRows = page.locator('[data-testid="call-row"][data-outcome="timeout"]');
    await page.getByLabel('World', { exact: true }).selectOption('heartbeat');
    await page.locator('[data-testid="calls-range"]', { hasText: 'of 10' }).waitFor();
    expect(await failedRows.count()).toBeGreaterThan(0);
    expect(await failedRows.first().innerText()).toContain('took longer than 120 s');
    await page.getByLabel('World', { exact: true }).selectOption('');
    await page.getByLabel('Show', { exact: true }).selectOption('input_tokens');
    await page.getByLabel('Split', { exact: true }).selectOption('by_world');
    await screenshots(page, 'usage');
  });

  it('the activity log shows the newest 20 ticks, and older ones on request', async () => {
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    // A task that finds something each time is evaluated at every tick (only "nothing new" is skipped when unchanged).
    models.decide('Count the open pull requests', 'act');
    models.act('Count the open pull requests', 'Four pull requests are open.');
    const counting = await daemon.rpc<TaskRow>('subconscious.tasks_add', { title: 'Count the open pull requests', needs_tools: false });
    await waitIdle();
    const groups = () => daemon.rpc<{ groups: unknown[]; next_before: number | null }>('subconscious.log_ticks', { limit: 100 });
    const running = async () => (await daemon.rpc<{ instances: StatusRow[] }>('subconscious.status')).instances.some((w) => w.running);
    await expect
      .poll(
        async () => {
          const n = (await groups()).groups.length;
          if (n <= 20 && !(await running())) await daemon.rpc('subconscious.trigger', { world: 'tasks' });
          return n;
        },
        { timeout: 60_000, interval: 50 },
      )
      .toBeGreaterThan(20);
    await waitIdle();
    const shown = page.locator('[data-testid="log-group"]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="log-group"]').length >= 20);
    // Merged failure runs can make fewer groups than ticks; 20 ticks' worth at most.
    expect(await shown.count()).toBeLessThanOrEqual(20);
    const before = await shown.count();
    await page.getByRole('button', { name: 'Show older ticks' }).click();
    await expect.poll(async () => shown.count(), { timeout: 10_000 }).toBeGreaterThan(before);
    await daemon.rpc('subconscious.tasks_remove', { task_id: counting.id });
  }, 120_000); // 20 ticks with a model call each, and the 60 s poll for them: more than the default 30 s

  it('every tab is keyboard reachable, fits 360 px without sideways scrolling, and logged no console error', async () => {
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    await page.getByRole('tab', { name: 'Subconscious' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.locator('[role="tab"][aria-selected="true"]', { hasText: 'Bots' }).waitFor();
    await page.getByRole('tab', { name: 'Usage' }).click();
    await page.getByRole('tab', { name: 'Usage' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.locator('[role="tab"][aria-selected="true"]', { hasText: 'Skills' }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skills');
    await page.locator('[data-testid="skills"]').waitFor();
    // The skill's health, as the daemon reports it after a check.
    await page.getByRole('button', { name: 'Check now' }).click();
    const skill = page.locator('[data-testid="skill-row"]', { hasText: 'memory' });
    await page.locator('[data-testid="skill-row"][data-status="connected"]').waitFor();
    const health = await daemon.rpc<{ servers: { name: string; status: string; tools: string[] }[] }>('mcp.servers');
    const memory = health.servers.find((s) => s.name === 'memory')!;
    expect(memory.status).toBe('connected');
    expect(await skill.innerText()).toContain(`${memory.tools.length} tools`);
    await screenshots(page, 'skills');
    await page.getByRole('tab', { name: 'Skills' }).focus();
    await page.keyboard.press('Home');
    await page.locator('[role="tab"][aria-selected="true"]', { hasText: 'Subconscious' }).waitFor();

    // What each tab shows once its data has loaded (its controls exist only then).
    const loaded: Record<string, string[]> = {
      Subconscious: ['[data-testid="status-bar"]'],
      Usage: ['[data-testid="usage-chart"]', '[data-testid="calls-range"]'],
      Skills: ['[data-testid="skill-row"]'],
    };
    for (const tab of ['Subconscious', 'Usage', 'Skills']) {
      await page.getByRole('tab', { name: tab }).click();
      for (const selector of loaded[tab]!) await page.locator(selector).first().waitFor();
      // A person sees where the keyboard is, on every control, and can read every text.
      const stops = await walkFocus(page);
      // Subconscious: tab, run buttons, switches, deletes, the add form…; Usage: tab, Show, Split, World, Next; Skills: tab, Check now.
      expect(stops.length, `${tab}: focus stops`).toBeGreaterThanOrEqual({ Subconscious: 10, Usage: 5, Skills: 2 }[tab]!);
      expect(
        stops.filter((s) => s.problem !== null),
        tab,
      ).toEqual([]);
      expect(await contrastFailures(page), `${tab}: text contrast`).toEqual([]);
      await page.setViewportSize(VIEWPORTS[1]);
      expect(await horizontalOverflow(page), `${tab} at 360 px`).toBeLessThanOrEqual(0);
      await page.setViewportSize(VIEWPORTS[0]);
      // Every button, switch, input and select has an accessible name.
      const unnamed = await page.evaluate(() =>
        [...document.querySelectorAll('button, input, select, [role="switch"]')]
          .filter((el) => {
            const label = el.getAttribute('aria-label') || (el as HTMLInputElement).labels?.[0]?.textContent || el.textContent;
            return !label || !label.trim();
          })
          .map((el) => el.outerHTML.slice(0, 120)),
      );
      expect(unnamed, tab).toEqual([]);
    }
    // The dark scheme (the page follows the system's) keeps the same contrast.
    await page.emulateMedia({ colorScheme: 'dark' });
    for (const tab of ['Subconscious', 'Usage', 'Skills']) {
      await page.getByRole('tab', { name: tab }).click();
      for (const selector of loaded[tab]!) await page.locator(selector).first().waitFor();
      await page.locator('[role="tabpanel"] [data-testid]').first().waitFor();
      expect(await contrastFailures(page), `${tab} (dark): text contrast`).toEqual([]);
      if (tab !== 'Skills') await screenshots(page, `${tab.toLowerCase()}-dark`);
    }
    await page.emulateMedia({ colorScheme: 'light' });

    // A picture of the keyboard focus on a task's delete button (shown on focus, seed 1: on hover).
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    await page.locator('.task-delete').first().waitFor({ state: 'attached' });
    for (let i = 0; i < 80 && !(await page.evaluate(() => document.activeElement?.classList.contains('task-delete'))); i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.matches('.task-delete:focus-visible'))).toBe(true);
    await screenshots(page, 'keyboard-focus');
    expect(watched.errors).toEqual([]);
  });
});
