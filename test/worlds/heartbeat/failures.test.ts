/**
 * Seed 2 §13 integration, when things go wrong, on both dialects: an approval that expires during
 * a resume, a retryable failure that reaches its attempts, pulse errors and timeouts (backoff,
 * then the bot's heartbeat off after 3), garbage from the pulse model (never an escalation),
 * budgets (no call once spent) and their local-midnight rollover.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BotWithStatus, Message, Snapshot } from '../../../src/protocol/bots.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, interruptedTask, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const settled = (h: HeartbeatHarness, taskId: string, status: string) =>
  until(async () => {
    const t = await h.task(taskId);
    return t.status === status && h.host.runtime.isIdle(t.bot_id);
  });

async function thread(h: HeartbeatHarness, botId: string): Promise<Message[]> {
  const t = await h.host.heartbeat.directThread(botId);
  return h.host.heartbeat.messages(t.id, { limit: 100 });
}

describe.each(await testDialects())('heartbeat failures on %s', (dialect) => {
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('an approval expiring during a resume: no deadlock, failed / approval_expired, never auto-approved; exactly one check-in, and the approval is not asked again until the person answers', async () => {
    const bot = await h.createBot('writer');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    const target = path.join(h.dir, `hb-approval-${dialect}.txt`);
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'checklist' } }] });
    await h.tick();
    await until(async () => (await h.db.selectFrom('bots_approvals').selectAll().execute()).length === 1);
    const link = await h.db.selectFrom('bots_approvals').selectAll().executeTakeFirstOrThrow();
    expect(Number(link.expires_at)).toBe(h.clock.now() + 10 * 60_000); // heartbeat runs are unattended

    await h.advance(10 * 60_000);
    await settled(h, t.id, 'failed');
    expect(await h.task(t.id)).toMatchObject({ error_kind: 'approval_expired', attempts: 1 });
    expect(existsSync(target)).toBe(false);
    expect((await h.db.selectFrom('bots_approvals').selectAll().executeTakeFirstOrThrow()).state).toBe('expired');

    // The expiry itself makes the one check-in (no pulse decides it).
    await until(async () => (await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).length === 1);
    const checkins = await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute();
    expect(checkins[0]).toMatchObject({ source: 'approval_expired', state: 'pending', task_id: t.id, bot_id: bot.id });
    expect(checkins[0]!.question).toMatch(/To go on with “Prepare the Q4 launch checklist” I need your approval.*write_file/);
    const msgs = await thread(h, bot.id);
    expect(msgs.filter((m) => m.role === 'system').map((m) => m.text)).toContain('Heartbeat: needs you');
    const question = msgs.filter((m) => m.role === 'bot' && m.heartbeat && m.status === 'done');
    expect(question).toHaveLength(1);
    const snap = await h.call<Snapshot>('bots.snapshot');
    expect(snap.bots.find((b: BotWithStatus) => b.id === bot.id)!.needs_attention).toBe(1);
    expect((await h.beat(bot.id)).state).toBe('waiting_user');

    // After the cooldown, even a pulse model that would say resume is never asked: the task waits
    // for its person — no second run, no second approval, no second check-in.
    await h.advance(10 * 60_000);
    await h.due(bot.id);
    h.verdict({ taskId: t.id, verdict: 'resume' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    expect(await h.db.selectFrom('bots_approvals').selectAll().execute()).toHaveLength(1);
    expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toHaveLength(1);
    expect(h.model.chatRequests).toHaveLength(1);

    // Waiting for the person: no more pulses; the person's reply resolves the check-in.
    await h.advance(3600_000);
    await h.due(bot.id);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    h.model.enqueue({ text: 'Understood, I will not write it.' });
    await h.call('bots.send_message', { bot_id: bot.id, text: 'No, leave the file alone.' });
    await until(async () => (await h.hdb.selectFrom('heartbeat_checkins').select('state').executeTakeFirstOrThrow()).state === 'answered');
    expect((await h.call<Snapshot>('bots.snapshot')).bots.find((b: BotWithStatus) => b.id === bot.id)!.needs_attention).toBe(0);
  });

  it('a retryable failure resumed until max_task_attempts, then one check-in — not a silent stuck task', async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, config: { max_task_attempts: 2 } });
    const bot = await h.createBot('flaky');
    const t = await h.failedTask(bot.id); // provider error: rule 6, and the settle marked the bot due
    // Due soon, not after a whole interval: the next tick at which the person who asked no longer counts as active.
    const failedAt = h.clock.now();
    expect((await h.beat(bot.id)).next_heartbeat_at).toBe(failedAt + 90_000);
    for (let attempt = 1; attempt <= 2; attempt++) {
      await h.advance(11 * 60_000);
      h.verdict({ taskId: t.id, reason: 'the provider failed; try again' });
      h.model.enqueue({ status: 500, message: 'still down' });
      await h.tick();
      await until(async () => (await h.task(t.id)).attempts === attempt);
      await settled(h, t.id, 'failed');
    }
    expect(h.pulse.chatRequests).toHaveLength(2);
    await h.advance(11 * 60_000);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(2); // exhausted: no pulse
    const checkins = await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute();
    expect(checkins).toHaveLength(1);
    expect(checkins[0]).toMatchObject({ source: 'exhausted', task_id: t.id });
    expect(checkins[0]!.question).toContain('2 times');
    // Once: another look changes nothing.
    await h.due(bot.id);
    await h.tick();
    expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toHaveLength(1);
    expect((await h.beat(bot.id)).next_heartbeat_at).toBeNull();

    // "Retry" on the check-in is a person's reset: attempts 0, checked at once.
    await h.call('bots.resolve_checkin', { id: checkins[0]!.id, resolution: 'retry' });
    expect((await h.task(t.id)).attempts).toBe(0);
    expect(h.triggered.count).toBe(1);
    h.verdict({ taskId: t.id });
    h.model.enqueue({ text: 'Worked this time.' });
    await h.tick();
    await settled(h, t.id, 'done');
  });

  it('a retryable failure resumes within 3 ticks of failing (seed 2 §13), ticks every 30 s from the failure', async () => {
    const bot = await h.createBot('retry');
    const t = await h.failedTask(bot.id);
    h.verdict({ taskId: t.id, reason: 'the provider failed; try again' });
    h.model.enqueue({ text: 'Retried: the numbers are in.' });
    let ticks = 0;
    while (h.pulse.chatRequests.length === 0 && ticks < 10) {
      await h.advance(30_000);
      await h.tick();
      ticks++;
    }
    expect(ticks).toBeLessThanOrEqual(3);
    await settled(h, t.id, 'done');
    expect((await h.task(t.id)).attempts).toBe(1);
  });

  it('pulse errors under repeated Check now presses: the press does not reset the error count, so the third error still switches the heartbeat off', async () => {
    const bot = await h.createBot('pressed');
    await interruptedTask(h, bot.id);
    for (let n = 1; n <= 3; n++) {
      h.pulse.enqueue({ status: 500, message: 'pulse model down' });
      await h.call('bots.heartbeat_now', { bot_id: bot.id });
      await h.tick();
      const beat = await h.beat(bot.id);
      if (n < 3) expect(beat).toMatchObject({ consecutive_errors: n, enabled: true });
      else expect(beat).toMatchObject({ consecutive_errors: 3, enabled: false, state: 'disabled' });
    }
    expect(h.pulse.chatRequests).toHaveLength(3);
    expect(h.model.chatRequests).toHaveLength(0);
    // Switched off: a fourth press is refused with the reason, not another pulse.
    const refused = await h.raw('bots.heartbeat_now', { bot_id: bot.id });
    expect('error' in refused && refused.error.message).toMatch(/switched off \(3 pulse errors in a row/);
  });

  it('pulse errors: no resume, exponential backoff, and after 3 in a row the bot’s heartbeat is switched off', async () => {
    const bot = await h.createBot('unlucky');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.pulse.enqueue({ status: 500, message: 'pulse model down' });
    await h.tick();
    let beat = await h.beat(bot.id);
    expect(beat).toMatchObject({ consecutive_errors: 1, enabled: true });
    expect(beat.next_heartbeat_at).toBe(h.clock.now() + 2 * 300_000);
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'pulse_error', tier: 1, escalated: false });

    // A marker during the backoff does not shorten it.
    await h.hb.core.mark(bot.id, h.clock.now());
    expect((await h.beat(bot.id)).next_heartbeat_at).toBe(h.clock.now() + 2 * 300_000);

    await h.advance(2 * 300_000);
    h.pulse.enqueue({ hang: true });
    const ticking = h.tick();
    await until(() => h.pulse.chatRequests.length === 2);
    await h.advance(8000); // the pulse timeout (8 s)
    await ticking;
    beat = await h.beat(bot.id);
    expect(beat.consecutive_errors).toBe(2);
    expect(beat.next_heartbeat_at).toBe(h.clock.now() + Math.min(4 * 300_000, 3600_000));
    expect((await h.logOf(bot.id))[0]!.reason).toMatch(/timeout/);

    await h.advance(3600_000);
    await h.pulse.close(); // unreachable now
    await h.tick();
    beat = await h.beat(bot.id);
    expect(beat).toMatchObject({ enabled: false, state: 'disabled', consecutive_errors: 3, next_heartbeat_at: null });
    expect(beat.disabled_reason).toMatch(/3 pulse errors in a row/);
    expect((await h.logOf(bot.id)).map((e) => e.outcome)).toContain('disabled');
    // Never escalated: no run, no check-in, the task untouched.
    expect(h.model.chatRequests).toHaveLength(0);
    expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toHaveLength(0);
    expect(await h.task(t.id)).toMatchObject({ status: 'failed', attempts: 0 });
    // Switched off: ticks leave it alone.
    await h.due(bot.id);
    await h.tick();
    expect((await h.logOf(bot.id))[0]).toMatchObject({ skip: 'disabled' });
  });

  it('garbage from the pulse model is idle (raw tail logged), a low-confidence resume is downgraded, and neither escalates', async () => {
    const bot = await h.createBot('garbled');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.pulse.enqueue({ text: 'Sure! I think the bot should definitely RESUME the work now.\nFOLLOWUP: 1m — pwn' });
    await h.tick();
    let log = (await h.logOf(bot.id))[0]!;
    expect(log).toMatchObject({ outcome: 'verdict', verdict: 'idle', escalated: false });
    expect(log.error).toContain('raw:');
    expect(log.error).not.toContain('FOLLOWUP:');
    const beat = await h.beat(bot.id);
    expect(beat.current_interval_seconds).toBe(450); // idle: ×1.5
    expect(beat.next_heartbeat_at).toBe(h.clock.now() + 450_000);

    await h.advance(450_000);
    h.verdict({ taskId: t.id, verdict: 'resume', confidence: 0.4 });
    await h.tick();
    log = (await h.logOf(bot.id))[0]!;
    expect(log).toMatchObject({ verdict: 'idle' });
    expect(log.error).toMatch(/downgraded/);
    expect(h.model.chatRequests).toHaveLength(0);
    expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toHaveLength(0);
    expect((await h.beat(bot.id)).current_interval_seconds).toBe(675);
    expect(await h.ledger()).toHaveLength(2);
  });

  it('budgets: a spent bot budget makes no call and waits for local midnight; the new day has a new budget', async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, config: { max_pulses_per_day: 1 }, timezone: 'Europe/Paris' });
    const bot = await h.createBot('thrifty');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id, verdict: 'wait', etaMinutes: 5 });
    await h.tick();
    expect((await h.beat(bot.id)).pulses_today).toBe(1);
    await h.advance(5 * 60_000);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    const beat = await h.beat(bot.id);
    expect(beat.last_outcome).toBe('skipped: budget');
    // Local midnight in Paris (the clock starts 2026-01-01 09:00 UTC = 10:00 CET).
    expect(beat.next_heartbeat_at).toBe(Date.UTC(2026, 0, 1, 23, 0, 0));
    expect((await h.logOf(bot.id))[0]!.reason).toMatch(/1\/1 pulses today \(bot\)/);

    await h.advance(Date.UTC(2026, 0, 1, 23, 0, 0) - h.clock.now());
    h.verdict({ taskId: t.id, verdict: 'idle' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(2);
    expect((await h.beat(bot.id)).pulses_today).toBe(1);
  });

  it('the store-wide budget stops every bot with one store-wide log entry a day', async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, config: { global_pulses_per_day: 1 } });
    const a = await h.createBot('aa');
    const b = await h.createBot('bb');
    await interruptedTask(h, a.id);
    await interruptedTask(h, b.id);
    await h.due(a.id);
    await h.due(b.id);
    h.verdict({ verdict: 'idle' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    const global = await h.hb.core.logs.list({ limit: 50 });
    const budgetEntries = global.filter((e) => e.bot_id === null);
    expect(budgetEntries).toHaveLength(1);
    expect(budgetEntries[0]!.reason).toMatch(/store-wide daily budget is spent/);
    await h.due(a.id);
    await h.due(b.id);
    await h.tick();
    expect((await h.hb.core.logs.list({ limit: 50 })).filter((e) => e.bot_id === null)).toHaveLength(1);
  });
});
