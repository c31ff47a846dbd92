/**
 * Seed 2 §8 on the Bots tab in real Chromium, against the daemon (`tick_seconds = 15`; in this
 * process on a fake clock, moved a tick at a time) and the scripted model server: a bot finishes
 * a task and promises `FOLLOWUP: 1m — …`; the promise waits in the heartbeat section; when it is
 * due (and the person's 90 s activity window is over) the pulse says resume and the bot keeps its
 * promise in the same task — a note "Woke up to follow up on “…”", its reply under the task's own
 * chip (named by its title), no new task; the promise fired. Screenshot, contrast, no CSP
 * violation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThreadView } from '../../src/protocol/bots.js';
import { contrastFailures } from './support/a11y.js';
import { screenshots } from './support/browser.js';
import { openHeartbeatPage, type HeartbeatPage } from './support/heartbeat-page.js';

const TITLE = 'Deploy the site.';

/** The newest user turn of a bot call (what the run was told). */
const lastTurn = (req: HeartbeatPage['botCalls'][number]) => {
  const last = (req.body?.messages ?? []).at(-1);
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
};

describe('a follow-up continues its task, on the Bots tab in Chromium', () => {
  let h: HeartbeatPage;

  beforeAll(async () => {
    h = await openHeartbeatPage({
      name: 'heartbeat follow-up test',
      pulse: { reason: 'the bot promised to verify the deploy' },
      bot: { description: 'Deploys the site.' },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.dispose();
  });

  it('FOLLOWUP: 1m — the promise waits in the section, then the bot keeps it in the same task, named, with no new task', async () => {
    const { page, daemon, clock, pulses, botCalls, botReplies, section, snapshot, directThread } = h;
    botReplies.push({ text: 'Deploy started.\nFOLLOWUP: 1m — verify the deploy landed and report back' });
    botReplies.push({ text: 'The deploy landed; all checks are green.' });
    await page.getByTestId('composer-input').fill(TITLE);
    await page.getByTestId('composer-input').press('Enter');
    const first = page.locator('[data-testid="message"][data-role="bot"][data-status="done"]', { hasText: 'Deploy started.' });
    await first.waitFor({ timeout: 20_000 });
    // The control line is stripped from the reply; the promise waits in the heartbeat section.
    expect(await first.innerText()).not.toContain('FOLLOWUP:');
    const followups = section().getByTestId('heartbeat-followups');
    await followups.locator('text=verify the deploy landed and report back').first().waitFor({ timeout: 10_000 });
    const [promise] = (await snapshot()).followups;
    expect(promise).toMatchObject({ kind: 'delay', state: 'pending', note: 'verify the deploy landed and report back' });

    // Due in a minute, after the person's activity window: a tick pulses, the bot keeps its promise.
    expect(promise!.due_at).toBe(promise!.created_at + 60_000);
    const due = promise!.due_at!;
    const moved = await daemon.advanceUntil(async () => (await snapshot()).followups.every((f) => f.state !== 'pending'), 150_000);
    // Not before it was due, nor before the person's 90 s were over (nothing else moved the clock since they sent).
    expect(clock.now()).toBeGreaterThanOrEqual(due);
    expect(moved).toBeGreaterThanOrEqual(90_000);
    const note = page.locator('[data-testid="message"][data-role="system"]', { hasText: `Woke up to follow up on “${TITLE}”` });
    await note.waitFor({ timeout: 20_000 });
    const reply = page.locator('[data-testid="message"][data-role="bot"][data-status="done"]', { hasText: 'The deploy landed; all checks are green.' });
    await reply.waitFor({ timeout: 30_000 });
    expect(await reply.getByTestId('task-chip').getAttribute('title')).toBe(TITLE);
    expect(await reply.getByTestId('task-chip').getAttribute('data-status')).toBe('done');
    const resumed = section().locator('[data-testid="heartbeat-entry"][data-outcome="resumed"]');
    await resumed.waitFor({ timeout: 20_000 });
    expect(await resumed.getByTestId('heartbeat-why').innerText()).toContain('follow-up');
    await screenshots(page, 'heartbeat-followup-continued');
    expect(await contrastFailures(page), 'a follow-up continuing its task').toEqual([]);

    // One task, continued: both replies belong to it; the promise fired; the run was told what it promised.
    const view = await daemon.rpc<ThreadView>('bots.thread', { id: (await directThread()).id });
    expect(view.tasks.map((t) => t.title)).toEqual([TITLE]);
    const taskId = view.tasks[0]!.id;
    expect(view.messages.filter((m) => m.role === 'bot').map((m) => m.task_id)).toEqual([taskId, taskId]);
    expect((await snapshot()).followups.filter((f) => f.state === 'pending')).toEqual([]);
    expect(pulses).toHaveLength(1);
    expect(lastTurn(botCalls[1]!)).toContain('You promised to follow up on this');
    expect(lastTurn(botCalls[1]!)).toContain('verify the deploy landed');
    expect(await h.cspViolations()).toEqual([]);
  }, 120_000);
});
