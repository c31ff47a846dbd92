/**
 * Seed 2 §13 "Acceptance" 1, 3, 4 and 5 as tests, on both dialects (2 — a daemon killed with
 * SIGKILL — is crash.test.ts):
 *   1. 1,000 healthy idle bots over a simulated day: 0 model calls, no messages, no runs;
 *   3. an unavailable or garbage-speaking pulse model never escalates; budgets, attempt caps,
 *      quiet hours and stop are enforced by the host whatever the model says;
 *   4. a person's message is never delayed by a heartbeat resume beyond a cancellation;
 *   5. every resume leaves a system note and a log entry.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { uuid } from '../../../src/core/index.js';
import type { SendResult, Task } from '../../../src/protocol/bots.js';
import { BotStore } from '../../../src/bots/bot-store.js';
import { TaskStore } from '../../../src/bots/task-store.js';
import { ThreadStore } from '../../../src/bots/thread-store.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, interruptedTask, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const TICK = 30_000;
const DAY = 24 * 3600_000;

const settled = (h: HeartbeatHarness, taskId: string, status: string) =>
  until(async () => {
    const t = await h.task(taskId);
    return t.status === status && h.host.runtime.isIdle(t.bot_id);
  });

/**
 * `ms` of ticks, one every 30 s, as the scheduler would run them. A run a tick started (a real
 * HTTP round-trip to the scripted server) settles before the fake clock moves on, as it would in
 * the 30 real seconds between two ticks.
 */
async function runFor(h: HeartbeatHarness, ms: number): Promise<{ ticks: number; kinds: Record<string, number> }> {
  const kinds: Record<string, number> = {};
  let ticks = 0;
  for (let t = 0; t < ms; t += TICK) {
    const o = await h.tick();
    kinds[o.kind] = (kinds[o.kind] ?? 0) + 1;
    ticks++;
    if (o.message.includes('resumed')) await untilIdle(h);
    await h.clock.advance(TICK);
  }
  return { ticks, kinds };
}

async function untilIdle(h: HeartbeatHarness): Promise<void> {
  const bots = await h.db.selectFrom('bots_bots').select('id').execute();
  await until(() => bots.every((b) => h.host.runtime.isIdle(b.id)));
}

describe.each(await testDialects())('acceptance on %s', (dialect) => {
  // The whole day on SQLite; on Postgres the same loop over six hours (each quiet tick is a few
  // network round-trips: a day of them would take the suite's time for nothing the dialect adds).
  const PERIOD = dialect === 'sqlite' ? DAY : DAY / 4;
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('1. 1,000 healthy idle bots over a simulated day: 0 model calls, no message, no run, no bot ever due', { timeout: 240_000 }, async () => {
    const bots = new BotStore({ db: h.db, clock: h.clock, ids: uuid });
    const threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
    const tasks = new TaskStore({ db: h.db, clock: h.clock, ids: uuid });
    for (let i = 0; i < 1000; i++) {
      const bot = await bots.create({ name: `bot${i}` });
      const thread = await threads.direct(bot);
      if (i % 2 === 0) {
        // Half of them talked today and finished: a done task and its answer.
        await threads.addMessage({ threadId: thread.id, role: 'user', text: 'How is it going?', status: 'done' });
        const t = await tasks.create({ botId: bot.id, threadId: thread.id, title: 'How is it going?', prompt: 'How is it going?', source: 'user' });
        await threads.addMessage({ threadId: thread.id, role: 'bot', botId: bot.id, taskId: t.id, text: 'All done.', status: 'done' });
        await tasks.update(t.id, { status: 'done', finished_at: h.clock.now() });
      }
    }
    const messagesBefore = (await h.db.selectFrom('bots_messages').select('id').execute()).length;
    expect((await h.hb.start()).scheduled).toBe(0);
    const { ticks, kinds } = await runFor(h, PERIOD);
    expect(ticks).toBe(PERIOD / TICK);
    expect(kinds).toEqual({ quiet: PERIOD / TICK });
    expect(await h.ledger()).toEqual([]);
    expect(h.pulse.requests).toHaveLength(0);
    expect(h.model.requests).toHaveLength(0);
    expect((await h.db.selectFrom('bots_messages').select('id').execute()).length).toBe(messagesBefore);
    expect(await h.hdb.selectFrom('heartbeat_bots').selectAll().execute()).toEqual([]);
    expect(await h.hdb.selectFrom('heartbeat_log').selectAll().execute()).toEqual([]);
  });

  it('3. an unavailable pulse model and a garbage-speaking one never escalate: no run, no check-in, no message, over a day', { timeout: 120_000 }, async () => {
    const down = await h.createBot('down');
    const garbled = await h.createBot('garbled');
    const td = await interruptedTask(h, down.id);
    const tg = await interruptedTask(h, garbled.id);
    await h.hb.start();
    h.pulse.handle((req) => {
      const prompt = req.body!.messages!.at(-1)!.content as string;
      if (prompt.includes(td.id)) return { status: 503, message: 'overloaded' };
      return { text: 'resume resume RESUME!!! {"verdict": resume}\nFOLLOWUP: 1m — again\nBLOCKED: help' };
    });
    const messagesBefore = (await h.db.selectFrom('bots_messages').select('id').execute()).length;
    await runFor(h, PERIOD);
    expect(h.model.chatRequests).toHaveLength(0);
    expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toEqual([]);
    expect(await h.hdb.selectFrom('heartbeat_followups').selectAll().execute()).toEqual([]);
    expect((await h.db.selectFrom('bots_messages').select('id').execute()).length).toBe(messagesBefore);
    expect(await h.task(td.id)).toMatchObject({ status: 'failed', attempts: 0 });
    expect(await h.task(tg.id)).toMatchObject({ status: 'failed', attempts: 0 });
    // The unavailable one: three errors, then its heartbeat is off (and says why).
    expect(await h.beat(down.id)).toMatchObject({ enabled: false, consecutive_errors: 3 });
    // The garbage one: idle each time, backing off to an hourly look — bounded, never more.
    const g = await h.beat(garbled.id);
    expect(g).toMatchObject({ enabled: true, last_verdict: 'idle', current_interval_seconds: 3600 });
    const garbledPulses = h.pulse.chatRequests.filter((r) => (r.body!.messages!.at(-1)!.content as string).includes(tg.id)).length;
    expect(garbledPulses).toBeLessThanOrEqual(30);
    expect(h.pulse.chatRequests.length - garbledPulses).toBe(3);
    expect((await h.logOf(garbled.id)).every((e) => !e.escalated)).toBe(true);
  });

  it('3. budgets, attempt caps, quiet hours and stop hold whatever the model says', { timeout: 120_000 }, async () => {
    await h.dispose();
    h = await createHeartbeatHarness({
      dialect,
      mcp: mcpHolder.value!,
      config: { max_resumes_per_day: 2, max_task_attempts: 10, resume_cooldown_seconds: 120 },
    });
    const eager = await h.createBot('eager');
    const t = await interruptedTask(h, eager.id);
    // The model always says resume with full confidence; every resume fails again.
    h.pulse.handle(() => ({ json: { verdict: 'resume', taskId: t.id, reason: 'go', instruction: 'go', etaMinutes: 0, urgency: 'high', confidence: 1 } }));
    h.model.handle(() => ({ status: 500, message: 'still broken' }));
    await h.due(eager.id);
    await runFor(h, 6 * 3600_000);
    expect((await h.logOf(eager.id)).filter((e) => e.outcome === 'resumed')).toHaveLength(2); // max_resumes_per_day
    expect((await h.beat(eager.id)).resumes_today).toBe(2);
    expect((await h.logOf(eager.id)).some((e) => e.skip === 'budget')).toBe(true);

    // Quiet hours: nothing at all happens inside them.
    const sleepy = await h.createBot('sleepy');
    await h.call('bots.set_heartbeat_settings', { bot_id: sleepy.id, quiet_hours: { enabled: true, start: '00:00', end: '23:59' } });
    await interruptedTask(h, sleepy.id);
    await h.due(sleepy.id);
    const pulsesBefore = h.pulse.chatRequests.length;
    await runFor(h, 3600_000);
    expect(h.pulse.chatRequests.filter((r) => (r.body!.messages!.at(-1)!.content as string).includes('sleepy'))).toHaveLength(0);
    expect((await h.beat(sleepy.id)).last_outcome).toBe('skipped: quiet_hours');
    expect(h.pulse.chatRequests.length).toBeGreaterThanOrEqual(pulsesBefore);
    await h.call('bots.set_heartbeat', { bot_id: sleepy.id, enabled: false });

    // Stop: the bot's work is cancelled for good, whatever the model says next.
    await h.call('bots.stop_bot', { bot_id: eager.id });
    await h.due(eager.id);
    const runs = h.model.chatRequests.length;
    await runFor(h, PERIOD);
    expect(h.model.chatRequests).toHaveLength(runs);
    expect((await h.logOf(eager.id)).filter((e) => e.outcome === 'resumed')).toHaveLength(2);
  });

  it('3. max_task_attempts holds with the budget to spare: one check-in, then nothing', { timeout: 120_000 }, async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, config: { max_task_attempts: 3, resume_cooldown_seconds: 120 } });
    const bot = await h.createBot('capped');
    const t = await interruptedTask(h, bot.id);
    h.pulse.handle(() => ({ json: { verdict: 'resume', taskId: t.id, reason: 'go', instruction: 'go', etaMinutes: 0, urgency: 'high', confidence: 1 } }));
    h.model.handle(() => ({ status: 500, message: 'still broken' }));
    await h.due(bot.id);
    await runFor(h, PERIOD);
    expect((await h.logOf(bot.id)).filter((e) => e.outcome === 'resumed')).toHaveLength(3);
    // §7.5: the task says it was given up on; its last error is kept in the check-in's reason.
    expect(await h.task(t.id)).toMatchObject({ attempts: 3, status: 'failed', error: 'Heartbeat attempts exhausted' });
    const checkins = await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute();
    expect(checkins.map((c) => c.source)).toEqual(['exhausted']);
    expect((await h.logOf(bot.id)).find((e) => e.outcome === 'checked_in')!.reason).toMatch(
      /last error: The model endpoint .*\(scripted-model\) had an intern/,
    );
  });

  it('4. a person’s message is never delayed by a heartbeat resume: a queued one is set aside (attempt refunded), a running one preempted', async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, bots: { next_job_delay_ms: 5000 } });
    const bot = await h.createBot('yielding');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    await h.tick();
    expect((await h.task(t.id)).attempts).toBe(1); // claimed, queued behind the 5 s gap
    h.model.enqueue({ text: 'Here you go.' });
    const before = h.clock.now();
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Quick: what is 2+2?' });
    await h.advance(5000); // the gap between jobs, not the resume
    await settled(h, sent.dispatched[0]!.task_id, 'done');
    expect(h.clock.now() - before).toBe(5000);
    expect(h.model.chatRequests).toHaveLength(1);
    expect(h.model.chatRequests[0]!.body!.messages!.at(-1)!.content as string).toMatch(/Quick: what is 2\+2\?$/);
    expect(await h.task(t.id)).toMatchObject({ status: 'failed', attempts: 0, claimed_by: null });
    expect((await h.logOf(bot.id)).find((e) => e.outcome === 'set_aside')!.reason).toMatch(/attempt refunded/);

    // A running resume (it would never end by itself) is preempted: the person waits only for the gap.
    const other = await h.createBot('preempted');
    const t2 = await interruptedTask(h, other.id);
    await h.due(other.id);
    h.verdict({ taskId: t2.id });
    h.model.handle((req) => {
      const last = req.body!.messages!.at(-1)!.content as string;
      return last.includes('Heartbeat wake-up') ? { hang: true } : { text: 'Four.' };
    });
    await h.tick();
    // Its job waits out the gap on the fake clock once it is queued: only then move the clock.
    await until(() => h.host.runtime.hasJobFor(t2.id));
    await h.advance(5000);
    await until(async () => (await h.task(t2.id)).status === 'working');
    const asked = h.clock.now();
    const second = await h.call<SendResult>('bots.send_message', { bot_id: other.id, text: 'And 2+2 again?' });
    // Cancelled at once: the resume settles and the person's job is next, waiting only for the gap.
    await until(async () => (await h.task(t2.id)).status === 'failed' && h.host.runtime.statusOf(other.id).status === 'queued');
    await h.advance(5000); // the gap between jobs, not the resume
    await settled(h, second.dispatched[0]!.task_id, 'done');
    expect(h.clock.now() - asked).toBe(5000);
    // Resumable later; the person's message reset its attempts once the preempted run settled (§7.5).
    expect(await h.task(t2.id)).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'preempted', attempts: 0 });
  });

  it('5. every resume leaves a system note and a log entry (and only resumes do)', { timeout: 120_000 }, async () => {
    const bots = await Promise.all(['n1', 'n2', 'n3'].map((n) => h.createBot(n)));
    const tasks: Task[] = [];
    for (const b of bots) tasks.push(await interruptedTask(h, b.id));
    h.pulse.handle((req) => {
      const prompt = req.body!.messages!.at(-1)!.content as string;
      const t = tasks.find((x) => prompt.includes(x.id))!;
      return {
        json: {
          verdict: t === tasks[2] ? 'idle' : 'resume',
          taskId: t.id,
          reason: `resume ${t.id}`,
          instruction: '',
          etaMinutes: 0,
          urgency: 'normal',
          confidence: 0.9,
        },
      };
    });
    h.model.handle(() => ({ text: 'Finished.' }));
    for (const b of bots) await h.due(b.id);
    await h.tick();
    for (const t of tasks.slice(0, 2)) await settled(h, t.id, 'done');
    const resumed = (await h.hb.core.logs.list({ limit: 100 })).filter((e) => e.outcome === 'resumed');
    const notes = await h.db.selectFrom('bots_messages').selectAll().where('role', '=', 'system').where('heartbeat', '=', 1).execute();
    expect(resumed).toHaveLength(2);
    expect(notes).toHaveLength(2);
    for (const e of resumed) {
      const note = notes.find((n) => n.task_id === e.task_id)!;
      expect(note.text).toMatch(/^Woke up to continue “.+” — resume /);
      expect(e.dispatched?.task_id).toBe(e.task_id);
    }
    const heartbeatRuns = await h.store.db.selectFrom('model_calls').select('purpose').where('purpose', '=', 'heartbeat_resume').execute();
    expect(heartbeatRuns).toHaveLength(2);
  });
});
