/**
 * Seed 2 §13 integration, the resume path, on both dialects: fake clock, the scripted model
 * servers (pulses and bot runs apart), the real bots host.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message, SendResult } from '../../../src/protocol/bots.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, interruptedTask, sharedMcp, until, type HeartbeatHarness } from './harness.js';

const mcpHolder: { value?: Awaited<ReturnType<typeof sharedMcp>> } = {};
beforeAll(async () => {
  mcpHolder.value = await sharedMcp();
});
afterAll(async () => {
  await mcpHolder.value?.close();
});

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
    // The person just wrote: the bot is left alone for two minutes (user-active deferral).
    expect((await h.tick()).kind).toBe('quiet');
    expect(await h.beat(bot.id)).toMatchObject({ last_outcome: 'skipped: user_active', next_heartbeat_at: h.clock.now() + 120_000 });
    await h.advance(120_000);
    const outcome = await h.tick();
    expect(outcome.kind).toBe('quiet');
    expect(h.pulse.chatRequests).toHaveLength(0);
    const beat = await h.beat(bot.id);
    expect(beat.next_heartbeat_at).toBeNull();
    expect(beat.last_outcome).toBe('skipped: nothing_unfinished');
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'skipped', skip: 'nothing_unfinished', tier: 0 });
  });
});
