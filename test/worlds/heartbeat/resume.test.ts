/**
 * Seed 2 §13 integration, the resume path, on both dialects: fake clock, the scripted model
 * servers (pulses and bot runs apart), the real bots host.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message, SendResult } from '../../../src/protocol/bots.js';
import { testDialects } from '../../support/stores.js';
import { commitTick, observe, runPulses } from '../../../src/worlds/heartbeat/index.js';
import { createHeartbeatHarness, gate, interruptedTask, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

async function messages(h: HeartbeatHarness, threadId: string): Promise<Message[]> {
  return h.host.heartbeat.messages(threadId, { limit: 100 });
}

const settled = (h: HeartbeatHarness, taskId: string, status: string) =>
  until(async () => {
    const t = await h.task(taskId);
    return t.status === status && h.host.runtime.isIdle(t.bot_id);
  });

describe.each(await testDialects())('heartbeat resume on %s', (dialect) => {
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('restart scenario: interrupted task → tick → pulse resume → one heartbeat dispatch of the same task, attempts persisted, visible note and log', async () => {
    const bot = await h.createBot('growth', { label: 'Growth lead', description: 'Owns outbound experiments.' });
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ verdict: 'resume', taskId: t.id, reason: 'the checklist was cut off', confidence: 0.9 });
    h.model.enqueue({ text: 'Checked the file; finished the remaining 4 items. The checklist is complete.' });

    const outcome = await h.tick();
    expect(outcome.kind).toBe('committed');
    await settled(h, t.id, 'done');

    // One pulse on the local model, one resume run on the agent model; no new task.
    expect(h.pulse.chatRequests).toHaveLength(1);
    const pulseBody = h.pulse.chatRequests[0]!.body!;
    expect(pulseBody.temperature).toBe(0);
    expect(pulseBody.max_tokens).toBe(180);
    expect(pulseBody.tools).toBeUndefined();
    const system = pulseBody.messages!.find((m) => m.role === 'system')!.content as string;
    expect(system).toContain('You are the heartbeat triage for one AI teammate');
    const prompt = pulseBody.messages!.find((m) => m.role === 'user')!.content as string;
    expect(prompt).toContain('<untrusted-data label="heartbeat digest">');
    expect(prompt).toContain('interrupted_task');

    const task = await h.task(t.id);
    expect(task).toMatchObject({ status: 'done', source: 'user', attempts: 1 });
    const tasks = await h.db.selectFrom('bots_tasks').selectAll().execute();
    expect(tasks).toHaveLength(1);

    const run = h.model.chatRequests.at(-1)!.body!.messages!;
    const last = run.at(-1)!.content as string;
    expect(last).toContain('[Heartbeat wake-up — not a new user message]');
    expect(last).toContain('<untrusted-data label="pulse">');

    const thread = await h.host.heartbeat.directThread(bot.id);
    const notes = (await messages(h, thread.id)).filter((m) => m.role === 'system');
    expect(notes.map((n) => n.text)).toEqual([expect.stringContaining('Woke up to continue “Prepare the Q4 launch checklist”')]);
    expect(notes[0]!.heartbeat).toBe(true);

    const log = await h.logOf(bot.id);
    const resumed = log.find((e) => e.outcome === 'resumed')!;
    expect(resumed).toMatchObject({ rule: 'interrupted_task', verdict: 'resume', task_id: t.id, escalated: true, tier: 2 });
    expect(resumed.dispatched?.task_id).toBe(t.id);
    expect(log.some((e) => e.outcome === 'settled')).toBe(true);

    const beat = await h.beat(bot.id);
    expect(beat).toMatchObject({ state: 'cooldown', pulses_today: 1, resumes_today: 1, last_verdict: 'resume' });
    expect(beat.next_heartbeat_at).toBe(beat.cooldown_until);

    // After the cooldown: nothing unfinished, no model call, and the bot sleeps (no next check).
    await h.advance(600_000);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    expect((await h.beat(bot.id)).next_heartbeat_at).toBeNull();
    expect((await h.ledger()).map((l) => l.purpose).sort()).toEqual(['heartbeat_pulse', 'heartbeat_resume']);
  });

  it('no candidate: a quiet tick, no model call, the bot sleeps until something changes', async () => {
    const bot = await h.createBot('quiet');
    h.model.enqueue({ text: 'All good.' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'How are things?' });
    await settled(h, sent.dispatched[0]!.task_id, 'done');
    await h.due(bot.id);
    // The person just wrote: the bot is left alone until 90 s after their message (user-active).
    expect((await h.tick()).kind).toBe('quiet');
    const { userActiveAt } = await h.host.heartbeat.userActivity(sent.thread_id);
    expect(await h.beat(bot.id)).toMatchObject({ last_outcome: 'skipped: user_active', next_heartbeat_at: userActiveAt! + 90_000 });
    await h.advance(120_000);
    const outcome = await h.tick();
    expect(outcome.kind).toBe('quiet');
    expect(h.pulse.chatRequests).toHaveLength(0);
    const beat = await h.beat(bot.id);
    expect(beat.next_heartbeat_at).toBeNull();
    expect(beat.last_outcome).toBe('skipped: nothing_unfinished');
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'skipped', skip: 'nothing_unfinished', tier: 0 });
  });

  it('no second resume before settle: a tick while the resume runs finds the bot busy', async () => {
    const bot = await h.createBot('busy');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    const release = gate();
    h.model.handle(async () => {
      await release.wait;
      return { text: 'Done now.' };
    });
    await h.tick();
    await until(() => h.model.chatRequests.length === 1);
    await h.due(bot.id);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'skipped', skip: 'busy' });
    release.open();
    await settled(h, t.id, 'done');
    expect(h.model.chatRequests).toHaveLength(1);
    expect((await h.task(t.id)).attempts).toBe(1);
  });

  it('a crash between claim and begin: the claim stays, attempts stay counted, the stale claim is taken over after 5 minutes, one run', async () => {
    const bot = await h.createBot('crashy');
    const t = await interruptedTask(h, bot.id);
    // The "crashed" worker: it claimed (attempt 1) and died before dispatching.
    const claimed = await h.hb.core.queue.claim(t.id, t.version);
    expect(claimed?.attempts).toBe(1);
    await h.due(bot.id);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(0); // claimed and fresh: not ours
    const next = (await h.beat(bot.id)).next_heartbeat_at!;
    expect(next).toBeGreaterThan(h.clock.now() + 4 * 60_000);

    await h.advance(5 * 60_000 + 1000);
    h.verdict({ taskId: t.id });
    h.model.enqueue({ text: 'Picked it up again and finished.' });
    await h.tick();
    await settled(h, t.id, 'done');
    expect(await h.task(t.id)).toMatchObject({ attempts: 2, claimed_by: null });
    expect(h.model.chatRequests).toHaveLength(1);
  });

  it('a commit that runs again (a crash mid-commit) dispatches nothing twice', async () => {
    const bot = await h.createBot('twice');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    const hold = gate();
    h.model.handle(async () => {
      await hold.wait;
      return { text: 'ok' };
    });
    const core = h.hb.core;
    const obs = await observe(core, 6);
    const reflection = await runPulses(core, obs, new AbortController().signal);
    const first = await commitTick(core, obs, reflection, 'tick-1');
    const again = await commitTick(core, obs, reflection, 'tick-1');
    expect(first.resumed).toBe(1);
    expect(again.resumed).toBe(0);
    hold.open();
    await settled(h, t.id, 'done');
    expect(h.model.chatRequests).toHaveLength(1);
    expect((await h.task(t.id)).attempts).toBe(1);
    expect((await h.db.selectFrom('bots_messages').selectAll().where('role', '=', 'system').execute()).length).toBe(1);
  });

  it('a tick in the gap between one job and the next sees the bot busy (seed 2 §5.1)', async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, bots: { next_job_delay_ms: 250 } });
    const bot = await h.createBot('gap');
    await interruptedTask(h, bot.id);
    await h.advance(120_000);
    h.model.enqueue({ text: 'first' }, { text: 'second' });
    const a = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'one' });
    await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'two' });
    await h.advance(250);
    await until(async () => (await h.task(a.dispatched[0]!.task_id)).status === 'done' && h.host.runtime.statusOf(bot.id).status === 'queued');
    // The second job waits its 250 ms: not idle, though nothing runs.
    expect(h.host.runtime.statusOf(bot.id).status).not.toBe('idle');
    expect(h.host.runtime.isIdle(bot.id)).toBe(false);
    await h.due(bot.id);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(0);
    expect((await h.logOf(bot.id))[0]).toMatchObject({ skip: 'busy' });
  });

  it('cancel between claim and begin: never resurrected, the claim released, no run', async () => {
    await h.dispose();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, bots: { next_job_delay_ms: 5000 } });
    const bot = await h.createBot('cancel');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    await h.tick();
    expect((await h.logOf(bot.id)).some((e) => e.outcome === 'resumed')).toBe(true);
    const cancelled = await h.call<{ status: string }>('bots.cancel_intent', { task_id: t.id });
    expect(cancelled.status).toBe('cancelled');
    await h.advance(6000);
    await until(() => h.host.runtime.isIdle(bot.id));
    expect(await h.task(t.id)).toMatchObject({ status: 'cancelled', claimed_by: null });
    expect(h.model.chatRequests).toHaveLength(0);
    await h.due(bot.id);
    await h.advance(120_000);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1); // never pulsed again: nothing unfinished
  });

  it('a person’s message preempts a running resume (failed + interrupted + preempted), runs first, and the task may resume later', async () => {
    const bot = await h.createBot('preempt');
    const t = await interruptedTask(h, bot.id, { attempts: 1 });
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    h.model.handle((req) => {
      const last = req.body!.messages!.at(-1)!.content as string;
      if (last.includes('[Heartbeat wake-up')) return { hang: true };
      return { text: 'Here is the answer to your question.' };
    });
    await h.tick();
    await until(() => h.model.chatRequests.length === 1);
    expect((await h.task(t.id)).attempts).toBe(2);

    // Acceptance 4: the person's run starts without waiting for the resume (no clock moves).
    const before = h.clock.now();
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'quick question: what is the status?' });
    await settled(h, sent.dispatched[0]!.task_id, 'done');
    expect(h.clock.now()).toBe(before);
    expect(h.model.chatRequests).toHaveLength(2);
    expect(await h.task(t.id)).toMatchObject({ status: 'failed', error_kind: 'preempted', interrupted: true });
    // The person's message reset the attempts once the preempted run settled (§7.5).
    await until(async () => (await h.task(t.id)).attempts === 0);

    // Later, the preempted work may come back (the pulse decides).
    await h.advance(10 * 60_000);
    await h.due(bot.id);
    h.verdict({ taskId: t.id, verdict: 'idle', reason: 'the person moved on' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(2);
    const prompt = h.pulse.chatRequests[1]!.body!.messages!.at(-1)!.content as string;
    expect(prompt).toContain('interrupted_task');
    expect(prompt).toContain('preempted');
  });

  it('a stop during a resume cancels the task for good: it is never a candidate again', async () => {
    const bot = await h.createBot('stopper');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id });
    h.model.handle(() => ({ hang: true }));
    await h.tick();
    await until(() => h.model.chatRequests.length === 1);
    await h.call('bots.stop_bot', { bot_id: bot.id });
    expect((await h.task(t.id)).status).toBe('cancelled');
    await h.advance(3600_000);
    await h.due(bot.id);
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    expect((await h.beat(bot.id)).next_heartbeat_at).toBeNull();
  });
});
