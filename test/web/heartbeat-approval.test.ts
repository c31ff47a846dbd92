/**
 * Seed 2 §7.1 on the Bots tab in real Chromium, against the daemon (`tick_seconds = 15`,
 * unattended approvals waiting 1 minute; in this process on a fake clock, moved a tick at a time)
 * with the scripted model server and a real MCP server (filesystem): a bot's reply fails (the
 * provider), the person presses Check now, the pulse says resume, and the resumed run —
 * unattended — asks to write a file. Nobody answers: the approval expires, the tool never runs,
 * and exactly one check-in card says why in the heartbeat section; the next ticks do not ask the
 * same approval again. Screenshot, contrast, no CSP violation.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThreadView } from '../../src/protocol/bots.js';
import { filesystemServer } from '../support/mcp-servers.js';
import { contrastFailures } from './support/a11y.js';
import { screenshots } from './support/browser.js';
import { openHeartbeatPage, type HeartbeatPage } from './support/heartbeat-page.js';

const TITLE = 'Write the launch plan to plan.txt';

describe('an approval that expires in a heartbeat resume, on the Bots tab in Chromium', () => {
  let h: HeartbeatPage;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-hb-approval-'));
    const fs = filesystemServer(dir);
    h = await openHeartbeatPage({
      name: 'heartbeat approval test',
      pulse: { reason: 'the plan was not written', instruction: 'Write the plan.' },
      botsConfig: ['unattended_approval_minutes = 1'],
      config: ['[[mcp.servers]]', 'name = "fs"', `command = ${JSON.stringify(fs.command)}`, `args = ${JSON.stringify(fs.args)}`],
      bot: { description: 'Prepares launches.', tools: ['fs'] },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the approval expires unanswered: the tool never runs, one check-in card says why, and the approval is not asked again', async () => {
    const { page, daemon, clock, pulses, botCalls, botReplies, section, snapshot, directThread } = h;
    const target = path.join(dir, 'plan.txt');
    // The person's request fails at the provider; the resumed run asks to write the file.
    botReplies.push({ status: 500, message: 'upstream down' });
    botReplies.push({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'Ship on Friday.' } }] });
    await page.getByTestId('composer-input').fill(TITLE);
    await page.getByTestId('composer-input').press('Enter');
    await page.locator('[data-testid="message"][data-role="bot"][data-status="error"]').waitFor({ timeout: 20_000 });

    // The person reads the error before pressing Check now (on a clock that never moved, their
    // typing would be as new as the tick's look, which then leaves the thread to them).
    await daemon.advance(5_000);
    await section().getByTestId('heartbeat-check-now').click();
    await section().locator('[data-testid="heartbeat-entry"][data-outcome="resumed"]').waitFor({ timeout: 30_000 });
    // The resumed run is unattended: its approval waits its minute, and nobody answers it.
    const card = page.getByTestId('bot-approval');
    await card.waitFor({ timeout: 20_000 });
    expect(await card.innerText()).toContain('Approval needed: write_file on fs');

    // Nobody answers: the clock moves on a tick at a time until its minute is over and a tick saw it.
    const [approval] = (await daemon.rpc<ThreadView>('bots.thread', { id: (await directThread()).id })).approvals;
    expect(approval).toMatchObject({ state: 'pending', expires_at: approval!.created_at + 60_000 });
    const expiredCheckin = async () => (await snapshot()).checkins.some((c) => c.source === 'approval_expired');
    await daemon.advanceUntil(expiredCheckin, 100_000);
    expect(clock.now()).toBeGreaterThanOrEqual(approval!.expires_at!);
    const checkin = section().locator('[data-testid="heartbeat-checkin"][data-source="approval_expired"]');
    await checkin.waitFor({ timeout: 20_000 });
    expect(await checkin.innerText()).toContain('because an approval it needed expired while nobody was there');
    expect(await checkin.innerText()).toContain(`To go on with “${TITLE}” I need your approval`);
    expect(existsSync(target)).toBe(false);
    const view = await daemon.rpc<ThreadView>('bots.thread', { id: (await directThread()).id });
    expect(view.approvals.map((a) => [a.tool, a.state])).toEqual([['write_file', 'expired']]);
    expect(view.tasks.find((t) => t.title === TITLE)).toMatchObject({ status: 'failed', error_kind: 'approval_expired' });
    await screenshots(page, 'heartbeat-approval-expired');
    expect(await contrastFailures(page), 'the approval_expired check-in').toEqual([]);

    // Two more ticks: the pending check-in holds the task — no pulse, no run, no second approval.
    const [pulsesBefore, runsBefore, ticksBefore] = [pulses.length, botCalls.length, await daemon.ticks('heartbeat')];
    await daemon.advance(30_000);
    expect(await daemon.ticks('heartbeat')).toBeGreaterThanOrEqual(ticksBefore + 2);
    expect(pulses.length).toBe(pulsesBefore);
    expect(botCalls.length).toBe(runsBefore);
    const after = await daemon.rpc<ThreadView>('bots.thread', { id: (await directThread()).id });
    expect(after.approvals).toHaveLength(1);
    expect((await snapshot()).checkins.filter((c) => c.source === 'approval_expired' && c.state === 'pending')).toHaveLength(1);
    expect(await section().locator('[data-testid="heartbeat-checkin"]').count()).toBe(1);
    expect(await h.cspViolations()).toEqual([]);
  }, 120_000);
});
