/**
 * Issue 10's page in real Chromium against the real daemon (and issue 9's write-rights questions):
 * the first-run screen explained in plain words; every task saying why it is or is not looked at
 * next; the log grouped by tick with reasons, filters, search and a repeated failure as one line;
 * a row's detail; "Running the approved action…"; the empty Needs you; Fix in Skills
 * opening the failing server and the card resolving by itself; rename, reschedule, delete with
 * undo; the theme toggle, remembered; stale data marked when the daemon is unreachable; the
 * model banner from the probe; guessed write rights from release 0.1.0 asked about. Screenshots
 * of the first-run screen, the grouped log and a row's detail go to test-output/screenshots/.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_ANALYSIS_SYSTEM, AGENT_APPROVED_SYSTEM, EVALUATION_SYSTEM, EXECUTION_SYSTEM } from '../../src/worlds/tasks/prompts.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ChatMessage, type ModelServer, type RecordedRequest, type ScriptedReply } from '../support/model-server.js';
import { contrastFailures } from './support/a11y.js';
import { horizontalOverflow, launchBrowser, screenshots, VIEWPORTS, type TestBrowser } from './support/browser.js';
import { ensurePageBuilt } from './support/page-build.js';

const MEMORY_SERVER = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-memory/dist/index.js', import.meta.url));
const FIXTURE_DB = fileURLToPath(new URL('../fixtures/release-0.1.0/release-0.1.0.sqlite', import.meta.url));
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

interface TaskRow {
  id: string;
  title: string;
  recurrence: string;
  enabled: boolean;
  needs_tools: boolean;
  write_choice: string;
  why: { kind: string };
}

const first = (s: string) => s.split('\n')[0]!;
const text = (m: ChatMessage) => (typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? JSON.stringify(m.content) : '');

/** The scripted models for this file: decisions and answers by task title; evaluations can fail; approved runs can be held. */
function script(server: ModelServer) {
  const decisions: Array<[string, 'noop' | 'act' | 'escalate']> = [];
  const answers: Array<[string, string]> = [];
  let failEvaluations = false;
  let hold: Promise<void> | null = null;
  let reachedHold: (() => void) | null = null;
  server.handle(async (req: RecordedRequest): Promise<ScriptedReply> => {
    const messages = req.body?.messages ?? [];
    const system = messages
      .filter((m) => m.role === 'system')
      .map(text)
      .join('\n');
    const user = messages
      .filter((m) => m.role === 'user')
      .map(text)
      .join('\n');
    const taskPart = user.includes('# Task\n') ? user.slice(user.lastIndexOf('# Task\n')) : user;
    const pick = <T>(rules: Array<[string, T]>, t: string) => rules.find(([part]) => t.includes(part))?.[1];
    if (system.includes(first(EVALUATION_SYSTEM))) {
      // A failure that is the tasks' (a model that is down fails the tick alone, with no task rows).
      if (failEvaluations) return { text: 'Sorry, no JSON from me today.' };
      const out = user
        .split('- task_id: ')
        .slice(1)
        .map((chunk) => {
          const id = chunk.split('\n')[0]!.trim();
          const decision = pick(decisions, chunk) ?? 'noop';
          const reason = decision === 'noop' ? 'No release date moved since the last check.' : `Something new for this task (${decision}).`;
          return { task_id: id, decision, reason };
        });
      return { json: { decisions: out }, usage: { prompt_tokens: 800, completion_tokens: 60 } };
    }
    if (system.includes(first(EXECUTION_SYSTEM)))
      return { text: pick(answers, taskPart) ?? 'Checked: nothing needs attention.', usage: { prompt_tokens: 200, completion_tokens: 20 } };
    if (system.includes(first(AGENT_APPROVED_SYSTEM))) {
      if (hold) {
        reachedHold?.();
        await hold;
      }
      return { text: 'Done: carried out the approved action.' };
    }
    if (system.includes(first(AGENT_ANALYSIS_SYSTEM))) return { text: pick(answers, taskPart) ?? 'Read everything; no action is needed.' };
    return { status: 400, message: `unscripted: ${first(system).slice(0, 60)}` };
  });
  return {
    decide: (part: string, d: 'noop' | 'act' | 'escalate') => void decisions.unshift([part, d]),
    answer: (part: string, a: string) => void answers.unshift([part, a]),
    failEvaluations: (on: boolean) => void (failEvaluations = on),
    holdApproved() {
      let release!: () => void;
      const reached = new Promise<void>((r) => (reachedHold = r));
      hold = new Promise<void>((r) => (release = r));
      return {
        reached,
        release: () => {
          hold = null;
          release();
        },
      };
    },
  };
}

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('the Subconscious page explains itself (issue 10)', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let models: ReturnType<typeof script>;
  let daemon: TestDaemon;
  let page: Page;
  let errors: string[];
  let skillDir: string;
  let mailFlag: string;

  const tasks = () => daemon.rpc<TaskRow[]>('subconscious.tasks_list');
  const taskRow = (title: string) => page.locator('[data-testid="task-row"]', { hasText: title });
  const idle = async () => {
    for (let i = 0; i < 200; i++) {
      const s = await daemon.rpc<{ instances: { running: boolean }[] }>('subconscious.status');
      if (s.instances.every((w) => !w.running)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('a tick kept running');
  };
  /** Run a tick now and wait until it is over. */
  const tick = async () => {
    await idle();
    const before = (
      await daemon.rpc<{ instances: { world: string; total_ticks: number; consecutive_failures: number }[] }>('subconscious.status')
    ).instances.find((w) => w.world === 'tasks')!;
    await daemon.rpc('subconscious.trigger', { world: 'tasks' });
    for (let i = 0; i < 200; i++) {
      const now = (
        await daemon.rpc<{ instances: { world: string; total_ticks: number; consecutive_failures: number; running: boolean }[] }>('subconscious.status')
      ).instances.find((w) => w.world === 'tasks')!;
      if (!now.running && (now.total_ticks > before.total_ticks || now.consecutive_failures > before.consecutive_failures)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the tick did not finish');
  };

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer({ models: ['scripted-local', 'scripted-agent'] });
    models = script(server);
    skillDir = mkdtempSync(path.join(os.tmpdir(), 'subc-page-skill-'));
    mailFlag = path.join(skillDir, 'broken');
    const wrapper = path.join(skillDir, 'mail-server.mjs');
    writeFileSync(
      wrapper,
      `import { existsSync } from 'node:fs';\nif (existsSync(${JSON.stringify(mailFlag)})) { console.error('mail login expired'); process.exit(1); }\nawait import(${JSON.stringify(MEMORY_SERVER)});\n`,
    );
    daemon = await startDaemon({
      config: ['[[mcp.servers]]', 'name = "mail"', `command = ${JSON.stringify(process.execPath)}`, `args = [${JSON.stringify(wrapper)}]`, ''].join('\n'),
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'scripted-local',
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: 'scripted-agent',
      },
    });
    browser = await launchBrowser();
    const watched = await browser.newPage();
    page = watched.page;
    errors = watched.errors;
    await page.goto(daemon.pageUrl);
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
    if (skillDir) rmSync(skillDir, { recursive: true, force: true });
  });

  it('the first screen says in plain words what happens, explains its words, and where to start; Needs you says it is empty', async () => {
    await idle();
    const intro = page.locator('[data-testid="intro"]');
    await page.locator('[data-testid="intro"][data-first-run="true"]').waitFor();
    expect(await intro.innerText()).toContain('Nothing is sent or changed unless you said so');
    await page.locator('[data-testid="first-run-hint"]').waitFor();
    await page.getByText('What do the words on this page mean?').click();
    for (const word of ['Tick', 'World', 'Nothing new', 'Unchanged', 'Approval', 'Writes'])
      await page.locator('.glossary dt', { hasText: word }).first().waitFor();
    await page.locator('[data-testid="inbox-empty"]').waitFor();
    expect(await page.locator('[data-testid="inbox-empty"]').innerText()).toContain('Nothing waits for you');
    expect(await intro.innerText()).toContain('it asks first under Needs you');
    await page.locator('[data-testid="no-user-tasks"]').waitFor();
    // The defaults were looked at by the start-up tick: "nothing new", with the model's reason, in a
    // group that starts collapsed (nothing happened in it) and opens on request.
    const quiet = page.locator('[data-testid="log-group"][data-quiet="true"]').first();
    await quiet.waitFor();
    expect(await quiet.locator('details').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    expect(await quiet.locator('[data-testid="log-group-summary"]').innerText()).toMatch(/ · 3 tasks · 3 nothing new · [\d.]+k? tokens · [\d.]+ (ms|s)$/);
    await quiet.locator('[data-testid="log-group-summary"]').click();
    await page.locator('[data-testid="log-row"][data-decision="noop"]').first().waitFor();
    expect(await page.locator('[data-testid="log-row"][data-decision="noop"] [data-testid="log-text"]').first().innerText()).toBe(
      'Nothing new: No release date moved since the last check.',
    );
    expect(await contrastFailures(page), 'first-run screen').toEqual([]);
    await page.setViewportSize(VIEWPORTS[1]);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.setViewportSize(VIEWPORTS[0]);
    await screenshots(page, 'subconscious-first-run');
  });

  it('a task that sounds like it writes is read-only until the person says otherwise; every task says why it is or is not looked at next', async () => {
    await page.getByLabel('New task').fill('Send the weekly digest to Slack');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const row = taskRow('Send the weekly digest to Slack').and(page.locator(':not([data-task-id^="pending-"])'));
    const question = row.locator('[data-testid="write-suggestion"]');
    await question.waitFor();
    expect(await question.innerText()).toContain('This sounds like it sends or changes things: allow it to act without asking?');
    let added = (await tasks()).find((t) => t.title === 'Send the weekly digest to Slack')!;
    expect(added).toMatchObject({ needs_tools: false, write_choice: 'none' });
    await question.getByRole('button', { name: 'Allow it to act' }).click();
    await row.locator('.badge', { hasText: 'writes' }).waitFor();
    await question.waitFor({ state: 'detached' });
    added = (await tasks()).find((t) => t.id === added.id)!;
    expect(added).toMatchObject({ needs_tools: true, write_choice: 'person' });

    // After a tick where every task decides "nothing new", each says so; the next tick is quiet.
    await tick();
    await tick();
    await page.locator(`[data-testid="task-row"][data-task-id="${added.id}"][data-why="unchanged"]`).waitFor();
    expect(await row.locator('[data-testid="task-why"]').innerText()).toMatch(
      /^unchanged since \d{1,2}:\d{2}(:\d{2})?( [AP]M)? · looked at again when something changes, or at /,
    );
    // A cron task not yet due, and a switched-off one, say so.
    await daemon.rpc('subconscious.tasks_add', { title: 'Summarize the release notes', recurrence: 'cron:0 9 1 1 *' });
    await taskRow('Summarize the release notes').locator('[data-testid="task-why"][data-kind="not_due"]').waitFor();
    expect(await taskRow('Summarize the release notes').locator('[data-testid="task-why"]').innerText()).toMatch(/^not due until /);
    const system = page.locator('[data-testid="task-row"][data-task-id="system:review-memory"]');
    await daemon.rpc('subconscious.tasks_update', { task_id: 'system:review-memory', enabled: false });
    await system.locator('[data-testid="task-why"][data-kind="off"]').waitFor();
    expect(await system.locator('[data-testid="task-why"]').innerText()).toBe('switched off');
    await daemon.rpc('subconscious.tasks_update', { task_id: 'system:review-memory', enabled: true });
  });

  it('the log is grouped by tick, with reasons, a repeated failure as one line with a count, filters and search; a row opens its detail', async () => {
    models.decide('Check the nightly build', 'act');
    models.answer('Check the nightly build', 'The nightly build is green; 3 flaky tests were retried.');
    await daemon.rpc('subconscious.tasks_add', { title: 'Check the nightly build' });
    await tick();
    // An outage: three ticks fail the same way.
    models.failEvaluations(true);
    await daemon.rpc('subconscious.tasks_add', { title: 'Check the deploy queue' });
    for (let i = 0; i < 3; i++) await tick();
    models.failEvaluations(false);
    await tick();

    // The first failing tick evaluated only the new task; the next two everything (a new failure is
    // a change) and failed the same way: those two are one group, one line with its count.
    const groups = page.locator('[data-testid="log-group"]');
    const outage = page.locator('[data-testid="log-group"][data-ticks="2"][data-quiet="false"]');
    await outage.waitFor();
    expect(await outage.locator('[data-testid="log-row"]').count()).toBe(1);
    const repeated = Number((await outage.locator('[data-testid="log-count"]').innerText()).replace('×', ''));
    expect(repeated).toBeGreaterThan(2);
    expect(await outage.locator('[data-testid="log-group-summary"]').innerText()).toMatch(
      new RegExp(` · 2 ticks · ${repeated} tasks · ${repeated} failed( · [\\d.]+ (ms|s))?$`),
    );
    expect(await outage.locator('[data-testid="log-text"]').innerText()).toMatch(/malformed|JSON|schema|parse/i);
    // The tick that acted: its summary line, open, with the result and the model's reason.
    const acted = groups.filter({ has: page.locator('[data-decision="act"]') }).first();
    const summary = await acted.locator('[data-testid="log-group-summary"]').innerText();
    // Whether the other tasks were asked again in that tick is the unchanged-task skip's business (their
    // inputs since their last check), which this test does not pin down: "nothing new" may be absent.
    expect(summary).toMatch(/^\d{1,2}:\d{2}(:\d{2})?( [AP]M)? · \d+ tasks? · 1 acted( · \d+ nothing new)? · [\d.]+k? tokens · [\d.]+ (ms|s)$/);
    const actRow = acted.locator('[data-testid="log-row"][data-decision="act"]');
    expect(await actRow.locator('[data-testid="log-text"]').innerText()).toBe('The nightly build is green; 3 flaky tests were retried.');
    expect(await actRow.locator('[data-testid="log-reason"]').innerText()).toBe('Why: Something new for this task (act).');
    // A group where every task found nothing new starts collapsed.
    const quiet = page.locator('[data-testid="log-group"][data-quiet="true"]').first();
    await quiet.waitFor();
    expect(await quiet.locator('details').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    await screenshots(page, 'subconscious-grouped-log');

    // Filters: by decision, by task, and search.
    await page.getByLabel('Show', { exact: true }).selectOption('act');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="log-row"]')].every((r) => r.getAttribute('data-decision') === 'act'));
    await page.getByLabel('Show', { exact: true }).selectOption('');
    const build = (await tasks()).find((t) => t.title === 'Check the nightly build')!;
    await page.getByLabel('Task', { exact: true }).selectOption(build.id);
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll('[data-testid="log-row"]')];
      return rows.length > 0 && rows.every((r) => r.getAttribute('data-task-id') === id);
    }, build.id);
    await page.getByLabel('Task', { exact: true }).selectOption('');
    await page.getByLabel('Search', { exact: true }).fill('flaky');
    // (The build acted twice: before the outage and after it.)
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="log-row"]')];
      return rows.length >= 1 && rows.every((r) => r.textContent!.includes('flaky'));
    });
    // The row's detail: the decision and reason, the report as sent, the raw answer, the figures.
    await page.locator('[data-testid="log-row"] [data-testid="log-open-detail"]').first().click();
    const detail = page.locator('[data-testid="log-detail"]');
    await detail.locator('[data-testid="detail-execution"]').waitFor();
    expect(await detail.locator('[data-testid="detail-decision"]').innerText()).toContain('Something new for this task (act)');
    await detail.getByText('The situation report as sent').click();
    expect(await detail.locator('[data-testid="detail-report-text"]').innerText()).toContain('# Situation report');
    await detail.getByText('The model’s raw answer').click();
    expect(await detail.locator('[data-testid="detail-raw-answer"]').innerText()).toContain('"decision":"act"');
    expect(await detail.locator('[data-testid="detail-evaluation"] [data-testid="detail-figures"]').innerText()).toMatch(
      /^deciding what each task needs · model scripted-local · 1 call · 800 tokens in, 60 out( · [\d.]+ (ms|s))? · \d+ tasks in this call$/,
    );
    expect(await detail.locator('[data-testid="detail-execution"] [data-testid="detail-figures"]').innerText()).toMatch(
      /^text answer \(local model\) · model scripted-local · 1 call · 200 tokens in, 20 out/,
    );
    expect(await detail.locator('[data-testid="detail-approvals"]').innerText()).toContain('Nothing here needed an approval.');
    expect(await contrastFailures(page), 'row detail').toEqual([]);
    await screenshots(page, 'subconscious-row-detail');
    await page.getByLabel('Search', { exact: true }).fill('');
  }, 90_000); // five ticks with their model calls, then the page's reads

  it('after "Go ahead" the row says "Running the approved action…"; Fix in Skills opens the failing skill, and its card resolves by itself', async () => {
    // The mail skill breaks (its login "expired"): it exits, and will not start again.
    writeFileSync(mailFlag, 'x');
    const mail = (await daemon.rpc<{ servers: { name: string; pid: number | null }[] }>('mcp.servers', { check: true })).servers.find(
      (s) => s.name === 'mail',
    )!;
    expect(mail.pid).not.toBeNull();
    process.kill(mail.pid!, 'SIGKILL');
    await expect
      .poll(
        async () =>
          (await daemon.rpc<{ servers: { name: string; status: string }[] }>('mcp.servers', { check: true })).servers.find((s) => s.name === 'mail')!.status,
        {
          timeout: 10_000,
        },
      )
      .not.toBe('connected');
    models.decide('Check urgent emails', 'escalate');
    models.answer('Check urgent emails', 'Three urgent emails from the bank.\nRECOMMENDED ACTION: [important] Forward the 3 urgent emails to accounting');
    models.decide('Check that the mail connection works', 'escalate');
    models.answer(
      'Check that the mail connection works',
      'The mail skill cannot start: its login expired.\nRECOMMENDED ACTION: Re-authenticate the mail integration',
    );
    const emails = (await daemon.rpc<TaskRow>('subconscious.tasks_add', { title: 'Check urgent emails' })).id;
    const connection = (await daemon.rpc<TaskRow>('subconscious.tasks_add', { title: 'Check that the mail connection works' })).id;
    await tick();
    const card = (title: string) => page.locator('[data-testid="inbox-card"][data-kind="escalation"]', { hasText: title });
    await card('Check urgent emails').waitFor();
    await taskRow('Check urgent emails').locator('[data-testid="task-why"][data-kind="waiting"]').waitFor();
    expect(await taskRow('Check urgent emails').locator('[data-testid="task-why"]').innerText()).toBe(
      'waiting for your answer to “Forward the 3 urgent emails to accounting”',
    );

    const hold = models.holdApproved();
    const row = page.locator(`[data-testid="log-row"][data-task-id="${emails}"]`).first();
    try {
      await card('Check urgent emails').getByRole('button', { name: 'Go ahead' }).click();
      await hold.reached;
      await row.and(page.locator('[data-decision="in_progress"]')).waitFor();
      expect(await row.locator('[data-testid="log-text"]').innerText()).toBe('Running the approved action...');
    } finally {
      hold.release();
    }
    await row.and(page.locator('[data-decision="act"]')).waitFor();

    // Fix in Skills: the Skills tab on the failing server.
    const fix = card('Check that the mail connection works');
    expect(await fix.locator('[data-testid="inbox-skill"]').innerText()).toContain('“mail”');
    await fix.getByRole('button', { name: 'Fix in Skills' }).click();
    await page.locator('[role="tab"][aria-selected="true"]', { hasText: 'Skills' }).waitFor();
    expect(page.url()).toContain('#/skills/mail');
    await page.locator('[data-testid="skill-row"][data-focused="true"]', { hasText: 'mail' }).waitFor();
    // The person fixes it (the login is renewed): at the next health check the card resolves by itself.
    rmSync(mailFlag);
    await page.getByRole('tab', { name: 'Subconscious' }).click();
    await expect
      .poll(
        async () => {
          await daemon.rpc('subconscious.health', { check: true });
          return (await daemon.rpc<{ status: string }[]>('subconscious.escalations_list', { status: 'resolved' })).length;
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(1);
    await fix.waitFor({ state: 'detached' }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(await daemon.rpc('subconscious.escalations_list', {}))}`);
    });
    const resolved = page.locator(`[data-testid="log-row"][data-task-id="${connection}"][data-decision="resolved"]`).first();
    await resolved.waitFor();
    expect(await resolved.locator('[data-testid="log-text"]').innerText()).toBe(
      'Resolved by itself: the skill “mail” is healthy again, so nothing waits for your approval.',
    );
    await page.locator('[data-testid="inbox-empty"]').waitFor();
  });

  it('rename and reschedule on the page; delete with undo; an error never shows a raw task id', async () => {
    await daemon.rpc('subconscious.tasks_add', { title: 'Watch the staging server' });
    const row = taskRow('Watch the staging server');
    await row.waitFor();
    await row.getByRole('button', { name: 'Edit task: Watch the staging server' }).click();
    const form = row.locator('[data-testid="edit-task"]');
    await form.getByLabel('Title').fill('Watch the staging and canary servers');
    await form.getByLabel('Runs').selectOption('cron');
    await form.getByLabel('Cron').fill('30 8 * * 1-5');
    await form.getByRole('button', { name: 'Save' }).click();
    // The schedule in words; the expression itself on hover.
    const badge = taskRow('Watch the staging and canary servers').locator('.badge', { hasText: 'weekdays at 08:30' });
    await badge.waitFor();
    expect(await badge.getAttribute('title')).toBe('Recurrence: cron:30 8 * * 1-5');
    const renamed = (await tasks()).find((t) => t.title === 'Watch the staging and canary servers')!;
    expect(renamed.recurrence).toBe('cron:30 8 * * 1-5');

    // Delete, then Undo from the keyboard: the same task (its id, title, schedule) is back.
    await taskRow('Watch the staging and canary servers')
      .getByRole('button', { name: /^Delete task/ })
      .click();
    await taskRow('Watch the staging and canary servers').waitFor({ state: 'detached' });
    await expect.poll(async () => (await tasks()).some((t) => t.title === 'Watch the staging and canary servers')).toBe(false);
    const notice = page.locator('[data-testid="notice"]', { hasText: 'Deleted “Watch the staging and canary servers”.' });
    await notice.getByRole('button', { name: 'Undo' }).waitFor();
    // The row the keyboard was on is gone: it lands on Undo.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Undo');
    await page.keyboard.press('Enter');
    await page.locator(`[data-testid="task-row"][data-task-id="${renamed.id}"]`).waitFor();
    expect((await tasks()).find((t) => t.title === 'Watch the staging and canary servers')).toMatchObject({ id: renamed.id, recurrence: 'cron:30 8 * * 1-5' });

    // Errors on the page name tasks by their title, never by their id: a duplicate refused…
    await page.getByLabel('New task').fill('watch the STAGING and canary servers');
    await page.getByLabel('Runs', { exact: true }).selectOption('cron');
    await page.getByLabel('Cron', { exact: true }).fill('30 8 * * 1-5');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const formError = page.locator('[data-testid="add-task-error"]');
    await formError.waitFor();
    expect(await formError.innerText()).toContain('A task with this wording already exists: "Watch the staging and canary servers".');
    expect(await formError.innerText()).not.toMatch(UUID);
    await page.getByLabel('Runs', { exact: true }).selectOption('default');
    await page.getByLabel('New task').fill('');
    // … and a task removed elsewhere while this page (its live updates cut) still shows it.
    const back = (await tasks()).find((t) => t.title === 'Watch the staging and canary servers')!;
    const other = await browser.newPage();
    await other.page.route(/\/events(\?|$)/, (route) => route.abort());
    await other.page.goto(daemon.pageUrl);
    const stale = other.page.locator(`[data-testid="task-row"][data-task-id="${back.id}"]`);
    await stale.waitFor();
    // Once the page's first reads are done (it polls status every 2 s without its stream).
    await other.page.waitForLoadState('networkidle');
    // The task is removed while the page's pause is on its way (held at the route), so no refresh
    // can take the row away first. The switch's handle slides (a transition): click it as it is.
    await other.page.route('**/rpc', async (route) => {
      if ((route.request().postData() ?? '').includes('subconscious.tasks_update')) await daemon.rpc('subconscious.tasks_remove', { task_id: back.id });
      await route.continue();
    });
    const toggleSwitch = stale.getByRole('switch');
    await toggleSwitch.waitFor();
    await toggleSwitch.click({ force: true });
    const refusal = other.page.locator('[data-testid="notice"]', { hasText: 'Could not pause' });
    await refusal.waitFor();
    expect(await refusal.innerText()).toContain('Could not pause “Watch the staging and canary servers”: That task does not exist (any more)');
    expect(await refusal.innerText()).not.toMatch(UUID);
    await other.page.close();
  });

  it('the theme toggle: system, light, dark — remembered, and readable in each', async () => {
    const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    await page.emulateMedia({ colorScheme: 'light' });
    const toggle = page.locator('[data-testid="theme-toggle"]');
    expect(await toggle.getByRole('radio', { name: 'System' }).getAttribute('aria-checked')).toBe('true');
    const light = await bg();
    await toggle.getByRole('radio', { name: 'Dark' }).click();
    await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    const dark = await bg();
    expect(dark).not.toBe(light);
    expect(await contrastFailures(page), 'dark by choice').toEqual([]);
    await page.reload();
    await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await bg()).toBe(dark);
    expect(await page.locator('[data-testid="theme-toggle"]').getByRole('radio', { name: 'Dark' }).getAttribute('aria-checked')).toBe('true');
    // Light by choice wins over a dark system.
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.locator('[data-testid="theme-toggle"]').getByRole('radio', { name: 'Light' }).click();
    expect(await bg()).toBe(light);
    expect(await contrastFailures(page), 'light by choice on a dark system').toEqual([]);
    // Back to the system's.
    await page.locator('[data-testid="theme-toggle"]').getByRole('radio', { name: 'System' }).click();
    expect(await bg()).toBe(dark);
    expect(await page.evaluate(() => localStorage.getItem('subconscious.theme'))).toBeNull();
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('when the daemon is unreachable, what is on screen is marked stale; when it is back, it is live again', async () => {
    await idle();
    await page.locator('[data-testid="stale-note"]').waitFor({ state: 'detached' });
    await daemon.stop();
    await page.locator('[data-testid="banner-unreachable"]').waitFor({ timeout: 20_000 });
    const note = page.locator('[data-testid="stale-note"]');
    await note.waitFor();
    expect(await note.innerText()).toMatch(/^Not live: what you see is as of .+, when the daemon stopped answering\./);
    expect(await page.locator('main[data-stale="true"]').count()).toBe(1);
    // The data stays on screen, marked.
    expect(await page.locator('[data-testid="task-row"]').count()).toBeGreaterThan(0);
    expect(await contrastFailures(page), 'stale').toEqual([]);
    await daemon.restart();
    await note.waitFor({ state: 'detached', timeout: 30_000 });
    expect(await page.locator('main[data-stale="true"]').count()).toBe(0);
    expect(errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED|net::/.test(e))).toEqual([]);
  }, 90_000); // a stop, a restart and the waits for each (20 s, 30 s): more than the default 30 s
});

describe('the model banner comes from the probe, not a failed tick', () => {
  it('a model that does not answer shows at start, with the reason, though no tick has failed', async () => {
    await ensurePageBuilt();
    const port = await closedPort();
    const daemon = await startDaemon({
      // Ticks evaluate nothing (inference off): only the world's probe can say the model is down.
      config: '[worlds.tasks]\ninference_enabled = false\n',
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: `http://127.0.0.1:${port}/v1`,
        SUBCONSCIOUS_LOCAL_MODEL: 'gone',
        SUBCONSCIOUS_AGENT_BASE_URL: `http://127.0.0.1:${port}/v1`,
      },
    });
    const browser = await launchBrowser();
    try {
      const { page } = await browser.newPage();
      await page.goto(daemon.pageUrl);
      const banner = page.locator('[data-testid="banner-model-probe-local"]');
      await banner.waitFor();
      expect(await banner.innerText()).toMatch(/The local model \(gone\) is unavailable\./);
      expect(await banner.innerText()).toContain(String(port));
      const status = await daemon.rpc<{ instances: { world: string; consecutive_failures: number; provider_available: boolean | null }[] }>(
        'subconscious.status',
      );
      expect(status.instances.find((w) => w.world === 'tasks')).toMatchObject({ consecutive_failures: 0, provider_available: null });
      // Every task that would be looked at says why it is not.
      const why = page.locator('[data-testid="task-row"][data-task-id="system:check-skills"] [data-testid="task-why"]');
      await page.locator('[data-testid="task-row"][data-task-id="system:check-skills"][data-why="model_unavailable"]').waitFor();
      // The reason and the fix are said once, in the banner; the task says only that it waits (issue 23).
      expect(await why.innerText()).toBe('waiting for the model (the banner at the top says how to fix it)');
      expect(await contrastFailures(page)).toEqual([]);
    } finally {
      await browser.close();
      await daemon.dispose();
    }
  }, 60_000);
});

describe('write rights an older version guessed (issue 9)', () => {
  it('the page asks about each task release 0.1.0 gave write rights, and the answer settles it', async () => {
    await ensurePageBuilt();
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-page-release-'));
    mkdirSync(path.join(workspace, '.subconscious'), { recursive: true, mode: 0o700 });
    copyFileSync(FIXTURE_DB, path.join(workspace, '.subconscious', 'subconscious.db'));
    // A `[write]` line only asks: the page shows it pending until the person confirms.
    writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '- Check the deploy queue\n- [write] Write the weekly digest to notes.md\n');
    const server = await startModelServer({ models: ['m'] });
    server.handle((req) => ({
      json: {
        decisions: JSON.stringify(req.body?.messages ?? [])
          .split('- task_id: ')
          .slice(1)
          .map((c) => ({ task_id: c.split('\\n')[0]!.trim(), decision: 'noop', reason: 'quiet' })),
      },
    }));
    const daemon = await startDaemon({
      workspace,
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'm',
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: 'm',
      },
    });
    const browser = await launchBrowser();
    try {
      const { page } = await browser.newPage();
      await page.goto(daemon.pageUrl);
      const guessed = page.locator('[data-testid="task-row"]', { hasText: 'Check which emails I need to reply to' });
      const review = guessed.locator('[data-testid="write-review"]');
      await review.waitFor();
      expect(await review.innerText()).toContain('Set automatically by an older version');
      expect(await guessed.locator('.badge', { hasText: 'writes?' }).count()).toBe(1);
      await review.getByRole('button', { name: 'Make read-only' }).click();
      await review.waitFor({ state: 'detached' });
      const digest = page.locator('[data-testid="task-row"]', { hasText: 'Send the daily digest to #team' });
      await digest.locator('[data-testid="write-review"]').getByRole('button', { name: 'Allow writes' }).click();
      await digest.locator('[data-testid="write-review"]').waitFor({ state: 'detached' });
      // The card leaves as soon as it is answered; the answer is stored when its call returns.
      const stored = async (title: string) => (await daemon.rpc<TaskRow[]>('subconscious.tasks_list')).find((t) => t.title === title);
      await expect.poll(() => stored('Check which emails I need to reply to')).toMatchObject({ needs_tools: false, write_choice: 'person' });
      await expect.poll(() => stored('Send the daily digest to #team')).toMatchObject({ needs_tools: true, write_choice: 'person' });
      expect(await page.locator('[data-testid="write-review"]').count()).toBe(0);

      const marked = page.locator('[data-testid="task-row"]', { hasText: 'Write the weekly digest to notes.md' });
      const ask = marked.locator('[data-testid="write-confirm-heartbeat"]');
      await ask.waitFor();
      expect(await ask.innerText()).toContain('Pending your confirmation');
      expect(await marked.locator('.badge', { hasText: 'writes?' }).count()).toBe(1);
      // A HEARTBEAT.md line says where it comes from, not "default" (those are the three that ship).
      expect(await marked.locator('.badge', { hasText: 'HEARTBEAT.md' }).count()).toBe(1);
      expect(await marked.locator('.badge', { hasText: 'default' }).count()).toBe(0);
      expect(
        await page
          .locator('[data-testid="task-row"]')
          .locator('.badge', { hasText: /^default$/ })
          .count(),
      ).toBe(3);
      expect((await daemon.rpc<TaskRow[]>('subconscious.tasks_list')).find((t) => t.title === 'Write the weekly digest to notes.md')).toMatchObject({
        needs_tools: true,
        write_choice: 'heartbeat_md',
      });
      // From the keyboard: Confirm makes it the person's choice.
      await ask.getByRole('button', { name: 'Confirm' }).focus();
      await page.keyboard.press('Enter');
      await ask.waitFor({ state: 'detached' });
      expect((await daemon.rpc<TaskRow[]>('subconscious.tasks_list')).find((t) => t.title === 'Write the weekly digest to notes.md')).toMatchObject({
        needs_tools: true,
        write_choice: 'person',
      });
      expect(await marked.locator('.badge', { hasText: 'writes?' }).count()).toBe(0);
    } finally {
      await browser.close();
      await daemon.dispose();
      await server.close();
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 60_000);
});
