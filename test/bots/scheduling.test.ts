/**
 * Queue, priorities, single-flight, preemption and handoffs (issue 11 §2, seed 2 §5.1, §7.4):
 * the behaviour the heartbeat relies on, driven through the host's own API on both dialects.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DroppedJobInfo, SettledInfo } from '../../src/bots/index.js';
import type { SendResult, Task, Thread } from '../../src/protocol/bots.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, gate, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const task = async (h: BotsHarness, id: string): Promise<Task> => (await h.host.heartbeat.getTask(id))!;
const settled = (h: BotsHarness, taskId: string, status: Task['status']) =>
  until(async () => {
    const t = await task(h, taskId);
    return t.status === status && h.host.runtime.isIdle(t.bot_id);
  });

/** A task of `botId` that failed with a provider error (a resumable kind), for the heartbeat paths. */
async function failedTask(h: BotsHarness, botId: string): Promise<Task> {
  h.model.enqueue({ status: 500, message: 'upstream down' });
  const sent = await h.call<SendResult>('bots.send_message', { bot_id: botId, text: 'Prepare the Q4 launch checklist' });
  await settled(h, sent.dispatched[0]!.task_id, 'failed');
  const t = await task(h, sent.dispatched[0]!.task_id);
  expect(t.error_kind).toBe('provider');
  return t;
}

async function claim(h: BotsHarness, t: Task, token = 'claim-1'): Promise<Task> {
  const claimed = await h.host.heartbeat.claimTask(t.id, { version: t.version, token, by: 'heartbeat' });
  expect(claimed).toBeDefined();
  return claimed!;
}

describe.each(await testDialects())('scheduling on %s', (dialect) => {
  let h: BotsHarness;
  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('a person’s message runs before a low job that is waiting (which still runs after)', async () => {
    const bot = await h.createBot('ops');
    const thread = await h.host.heartbeat.directThread(bot.id);
    const busy = gate();
    const order: string[] = [];
    h.model.handle(async (req) => {
      const last = req.body!.messages!.at(-1)!.content as string;
      order.push(last);
      if (last === 'keep busy') await busy.wait;
      return { text: `done: ${last}` };
    });
    const a = await h.host.runtime.dispatchToBot(bot.id, thread.id, 'keep busy', { source: 'external' });
    await until(() => h.model.chatRequests.length === 1);
    const low = await h.host.runtime.dispatchToBot(bot.id, thread.id, 'low background job', { source: 'external', priority: 'low' });
    const user = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'urgent question' });
    expect(h.host.runtime.statusOf(bot.id)).toMatchObject({ status: 'working', queued: 2 });
    busy.open();
    await settled(h, low.taskId, 'done');
    expect(order).toEqual(['keep busy', 'urgent question', 'low background job']);
    expect((await task(h, a.taskId)).status).toBe('done');
    expect((await task(h, user.dispatched[0]!.task_id)).status).toBe('done');
  });

  it('a person’s message drops a waiting heartbeat job: message stopped, claim released, attempt refunded, task still resumable', async () => {
    const bot = await h.createBot('growth');
    const failed = await failedTask(h, bot.id);
    const claimed = await claim(h, failed);
    expect(claimed.attempts).toBe(1);
    const dropped: DroppedJobInfo[] = [];
    h.host.heartbeat.onJobDropped((d) => void dropped.push(d));

    const busy = gate();
    h.model.handle(async (req) => {
      const last = req.body!.messages!.at(-1)!.content as string;
      if (last.endsWith('keep busy')) await busy.wait;
      return { text: `done: ${last}` };
    });
    const a = await h.host.runtime.dispatchToBot(bot.id, failed.thread_id, 'keep busy', { source: 'external' });
    await until(() => h.model.chatRequests.length === 2);
    const resume = await h.host.heartbeat.dispatchToBot(bot.id, failed.thread_id, 'Continue the checklist.', {
      heartbeat: true,
      taskId: failed.id,
      claimToken: 'claim-1',
      priority: 'low',
    });
    expect(resume.taskId).toBe(failed.id); // reused, no new task
    const user = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'what is the status?' });

    expect(dropped).toEqual([expect.objectContaining({ taskId: failed.id, reason: 'user_message', refunded: true, heartbeat: true })]);
    const after = await task(h, failed.id);
    expect(after).toMatchObject({ status: 'failed', attempts: 0, claimed_by: null, error_kind: 'provider' });
    const msg = await h.db.selectFrom('bots_messages').selectAll().where('id', '=', resume.messageId).executeTakeFirstOrThrow();
    expect(msg).toMatchObject({ status: 'stopped', heartbeat: 1 });

    busy.open();
    await settled(h, user.dispatched[0]!.task_id, 'done');
    expect((await task(h, a.taskId)).status).toBe('done');
    expect((await task(h, failed.id)).status).toBe('failed'); // never ran
    expect(h.model.chatRequests.some((r) => JSON.stringify(r.body!.messages).includes('Continue the checklist.'))).toBe(false);
  });

  it('a person’s message preempts a running heartbeat resume: failed + interrupted + preempted, then the person’s job runs', async () => {
    const bot = await h.createBot('growth');
    const failed = await failedTask(h, bot.id);
    await claim(h, failed);
    const settledInfo: SettledInfo[] = [];
    h.host.heartbeat.onSettled((s) => void settledInfo.push(s));
    h.model.handle((req) => {
      const last = req.body!.messages!.at(-1)!.content as string;
      return last.endsWith('Continue the checklist.') ? { hang: true } : { text: 'Here is the status.' };
    });
    const resume = await h.host.heartbeat.dispatchToBot(bot.id, failed.thread_id, '[Heartbeat wake-up] Continue the checklist.', {
      heartbeat: true,
      taskId: failed.id,
      claimToken: 'claim-1',
    });
    await until(async () => (await task(h, failed.id)).status === 'working' && h.model.chatRequests.length === 2);
    expect((await task(h, failed.id)).claimed_by).toBeNull(); // begin() consumed the claim

    const user = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'status?' });
    await settled(h, user.dispatched[0]!.task_id, 'done');
    const t = await task(h, failed.id);
    expect(t).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'preempted', attempts: 1 });
    const msg = await h.db.selectFrom('bots_messages').selectAll().where('id', '=', resume.messageId).executeTakeFirstOrThrow();
    expect(msg.status).toBe('error');
    expect(settledInfo.map((s) => [s.task.id, s.heartbeat, s.task.status])).toEqual([
      [failed.id, true, 'failed'],
      [user.dispatched[0]!.task_id, false, 'done'],
    ]);
    // Resumable: the heartbeat may claim it again (attempts keep counting).
    expect((await h.host.heartbeat.claimTask(t.id, { version: t.version, token: 'claim-2', by: 'heartbeat' }))?.attempts).toBe(2);
  });

  it('begin() re-checks the claim: a task cancelled between claim and start is never resurrected', async () => {
    const bot = await h.createBot('growth');
    const failed = await failedTask(h, bot.id);
    await claim(h, failed);
    const busy = gate();
    h.model.handle(async () => {
      await busy.wait;
      return { text: 'ok' };
    });
    const thread = await h.host.heartbeat.directThread(bot.id);
    await h.host.runtime.dispatchToBot(bot.id, thread.id, 'keep busy', { source: 'external' });
    await until(() => h.model.chatRequests.length === 2);
    const resume = await h.host.heartbeat.dispatchToBot(bot.id, thread.id, 'Continue.', { heartbeat: true, taskId: failed.id, claimToken: 'claim-1' });
    const cancelled = await h.call<Task>('bots.cancel_intent', { task_id: failed.id });
    expect(cancelled).toMatchObject({ status: 'cancelled', claimed_by: null });
    busy.open();
    await until(() => h.host.runtime.isIdle(bot.id));
    expect((await task(h, failed.id)).status).toBe('cancelled');
    expect(h.model.chatRequests).toHaveLength(2);
    const msg = await h.db.selectFrom('bots_messages').selectAll().where('id', '=', resume.messageId).executeTakeFirstOrThrow();
    expect(msg.status).toBe('stopped');
  });

  it('stop also cancels a claimed task whose resume is about to be dispatched (claim released, never resumed)', async () => {
    const bot = await h.createBot('growth');
    const failed = await failedTask(h, bot.id);
    await claim(h, failed);
    const stopped = await h.call<{ cancelled_task_ids: string[] }>('bots.stop_bot', { bot_id: bot.id });
    expect(stopped.cancelled_task_ids).toEqual([failed.id]);
    expect(await task(h, failed.id)).toMatchObject({ status: 'cancelled', claimed_by: null });
    await expect(
      h.host.heartbeat.dispatchToBot(bot.id, failed.thread_id, 'Continue.', { heartbeat: true, taskId: failed.id, claimToken: 'claim-1' }),
    ).rejects.toThrow(/not claimed with this token/);
    expect(h.host.runtime.isIdle(bot.id)).toBe(true);
  });

  it('claims are compare-and-set: a stale version loses, a live claim blocks, a stale claim is taken over with attempts kept', async () => {
    const bot = await h.createBot('growth');
    const failed = await failedTask(h, bot.id);
    const first = await claim(h, failed, 'a');
    expect(await h.host.heartbeat.claimTask(failed.id, { version: failed.version, token: 'b', by: 'heartbeat' })).toBeUndefined(); // old version
    expect(await h.host.heartbeat.claimTask(failed.id, { version: first.version, token: 'b', by: 'heartbeat' })).toBeUndefined(); // live claim
    expect(await h.host.heartbeat.renewClaim(failed.id, 'b')).toBe(false);
    expect(await h.host.heartbeat.staleClaims()).toEqual([]);
    await h.clock.advance(5 * 60_000 + 1);
    expect((await h.host.heartbeat.staleClaims()).map((t) => t.id)).toEqual([failed.id]);
    const taken = await h.host.heartbeat.claimTask(failed.id, { version: first.version, token: 'b', by: 'heartbeat' });
    expect(taken).toMatchObject({ attempts: 2, claimed_by: 'heartbeat' });
    expect(await h.host.heartbeat.releaseClaim(failed.id, { token: 'a' })).toBeUndefined(); // not the holder
    expect(await h.host.heartbeat.releaseClaim(failed.id, { token: 'b', refund: true })).toMatchObject({ attempts: 1, claimed_by: null });
    expect(await h.host.heartbeat.resetAttempts(failed.id)).toMatchObject({ attempts: 0 });
  });

  it('isIdle is false at every instant between enqueue and start (the clock stepped through the gap between jobs)', async () => {
    await h.dispose();
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value!, config: { next_job_delay_ms: 250 } });
    const bot = await h.createBot('ops');
    const thread = await h.host.heartbeat.directThread(bot.id);
    const busy = gate();
    h.model.handle(async (req) => {
      if (req.body!.messages!.at(-1)!.content === 'first') await busy.wait;
      return { text: 'ok' };
    });
    // Observed at every event the host emits, synchronously: from the first dispatch until B settles.
    const idleAt: string[] = [];
    h.listen((e) => {
      if (h.host.runtime.isIdle(bot.id)) idleAt.push(e.type);
    });
    const pendingA = h.host.runtime.dispatchToBot(bot.id, thread.id, 'first', { source: 'external' });
    expect(h.host.runtime.isIdle(bot.id)).toBe(false); // the dispatch is being written
    const a = await pendingA;
    await h.clock.advance(250);
    await until(() => h.model.chatRequests.length === 1);
    const b = await h.host.runtime.dispatchToBot(bot.id, thread.id, 'second', { source: 'external' });
    busy.open();
    await until(async () => (await task(h, a.taskId)).status === 'done');
    await until(() => h.host.runtime.statusOf(bot.id).taskId === null); // A finished; B waits in the gap

    let bStarted = false;
    h.listen((e) => {
      if (e.type === 'bots.task_changed' && e.data.task.id === b.taskId && e.data.task.status === 'working') bStarted = true;
    });
    let steps = 0;
    while (!bStarted && h.host.runtime.statusOf(bot.id).taskId !== b.taskId) {
      expect(h.host.runtime.isIdle(bot.id)).toBe(false);
      expect(h.host.runtime.statusOf(bot.id).status).not.toBe('idle');
      const c = new AbortController();
      expect(h.host.heartbeat.beginPulse(bot.id, c)).toBeNull(); // a heartbeat tick here finds the bot busy
      // Past the delay, B's claim is a store round trip (real time on Postgres): give it real time
      // as well as clock steps, so a loaded machine cannot run the clock past the bound meanwhile.
      if (steps >= 250) await new Promise((r) => setTimeout(r, 5));
      await h.clock.advance(1);
      if (++steps > 2000) throw new Error('B never started');
    }
    expect(steps).toBeGreaterThanOrEqual(250);
    await settled(h, b.taskId, 'done');
    expect(idleAt.filter((t) => t !== 'bots.status_changed' && t !== 'bots.note_added')).toEqual([]);
    expect(idleAt.every((t) => t === 'bots.status_changed')).toBe(true);
    expect(h.host.runtime.isIdle(bot.id)).toBe(true);
    // And a pulse registers only while idle, and a person's message aborts it.
    const c = new AbortController();
    const release = h.host.heartbeat.beginPulse(bot.id, c)!;
    expect(release).toBeTypeOf('function');
    expect(h.host.runtime.isIdle(bot.id)).toBe(false);
    expect(h.host.heartbeat.isChecking(bot.id)).toBe(true);
    await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hello' });
    expect(c.signal.aborted).toBe(true);
    release();
    expect(h.host.heartbeat.isChecking(bot.id)).toBe(false);
  });

  it('HANDOFF: @name wakes the other bot of a group thread with the note fenced, unattended', async () => {
    const writer = await h.createBot('writer');
    const reviewer = await h.createBot('reviewer', { label: 'Reviewer' });
    const group = await h.call<Thread>('bots.create_group', { name: 'Launch', bot_ids: [writer.id, reviewer.id] });
    h.model.handle((req) => {
      const system = req.body!.messages![0]!.content as string;
      if (system.includes('(@writer)')) return { text: 'Draft is in launch.md.\nHANDOFF: @reviewer — check the tone of the draft' };
      return { text: 'Tone is fine.' };
    });
    const sent = await h.call<SendResult>('bots.send_message', { thread_id: group.id, text: '@writer draft the launch note' });
    expect(sent.dispatched.map((d) => d.bot_id)).toEqual([writer.id]);
    await until(
      async () => (await h.db.selectFrom('bots_tasks').selectAll().where('bot_id', '=', reviewer.id).where('status', '=', 'done').execute()).length === 1,
    );
    await until(() => h.host.runtime.isIdle(reviewer.id) && h.host.runtime.isIdle(writer.id));
    const handed = await h.db.selectFrom('bots_tasks').selectAll().where('bot_id', '=', reviewer.id).executeTakeFirstOrThrow();
    expect(handed).toMatchObject({ source: 'handoff', from_bot_id: writer.id, handoff_depth: 1, status: 'done', thread_id: group.id });

    const req = h.model.chatRequests[1]!.body!;
    const system = req.messages![0]!.content as string;
    expect(system).toContain('group thread "Launch"');
    expect(system).toContain('@writer');
    const turns = req.messages!.filter((m) => m.role !== 'system');
    const last = turns.at(-1)!.content as string;
    expect(last).toContain('<untrusted-data label="handoff note from bot writer">');
    expect(last).toContain('check the tone of the draft');
    expect(JSON.stringify(turns)).toContain('message from bot writer'); // the writer's message is fenced data too
    expect(JSON.stringify(turns)).not.toContain('HANDOFF:');

    const view = await h.call<{ messages: { role: string; text: string }[] }>('bots.thread', { thread_id: group.id });
    expect(view.messages.map((m) => `${m.role}:${m.text}`)).toEqual([
      'user:@writer draft the launch note',
      'bot:Draft is in launch.md.',
      'system:@writer → @reviewer: check the tone of the draft',
      'bot:Tone is fine.',
    ]);
  });

  it('a HANDOFF outside a group, to a stranger, or past the chain limit is refused with a note, and wakes nobody', async () => {
    await h.dispose();
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value!, config: { max_handoffs: 1 } });
    const a = await h.createBot('alpha');
    const b = await h.createBot('beta');
    h.model.handle((req) => {
      const system = req.body!.messages![0]!.content as string;
      return system.includes('(@alpha)') ? { text: 'Done.\nHANDOFF: @beta — your turn' } : { text: 'Back to you.\nHANDOFF: @alpha — again' };
    });
    const direct = await h.call<SendResult>('bots.send_message', { bot_id: a.id, text: 'go' });
    await settled(h, direct.dispatched[0]!.task_id, 'done');
    const group = await h.call<Thread>('bots.create_group', { name: 'Ping pong', bot_ids: [a.id, b.id] });
    await h.call('bots.send_message', { thread_id: group.id, text: '@alpha start' });
    await until(async () => (await h.db.selectFrom('bots_tasks').selectAll().where('status', '=', 'done').execute()).length === 3);
    await until(() => h.host.runtime.isIdle(a.id) && h.host.runtime.isIdle(b.id));
    const tasks = await h.db.selectFrom('bots_tasks').selectAll().orderBy('created_at').execute();
    expect(tasks.map((t) => [t.bot_id === a.id ? 'alpha' : 'beta', t.source, t.handoff_depth])).toEqual([
      ['alpha', 'user', 0],
      ['alpha', 'user', 0],
      ['beta', 'handoff', 1],
    ]);
    const notes = await h.db.selectFrom('bots_notes').select(['kind', 'text']).orderBy('created_at').execute();
    expect(notes.map((n) => n.text)).toEqual([
      expect.stringContaining('handoffs work only in group threads'),
      expect.stringContaining('already has 1 handoffs'),
    ]);
    const system = await h.db.selectFrom('bots_messages').select('text').where('role', '=', 'system').execute();
    expect(system.map((m) => m.text)).toEqual(
      expect.arrayContaining([expect.stringContaining('Handoff from @alpha not made'), expect.stringContaining('Handoff from @beta not made')]),
    );
  });

  it('a message mentioning two bots of a group gives each a task; external runs and shutdown', async () => {
    const a = await h.createBot('alpha');
    const b = await h.createBot('beta');
    const group = await h.call<Thread>('bots.create_group', { name: 'Pair', bot_ids: [a.id, b.id] });
    h.model.handle(() => ({ hang: true }));
    const sent = await h.call<SendResult>('bots.send_message', { thread_id: group.id, text: '@beta and @Alpha: status please' });
    expect(sent.dispatched.map((d) => d.bot_id)).toEqual([b.id, a.id]);
    await until(() => h.model.chatRequests.length === 2);

    // A run of the bot started elsewhere keeps it busy (single-flight), until released.
    const c = await h.createBot('gamma');
    const release = h.host.runtime.trackExternalRun(c.id);
    expect(h.host.runtime.isIdle(c.id)).toBe(false);
    expect(h.host.runtime.statusOf(c.id).status).toBe('working');
    expect(h.host.heartbeat.beginPulse(c.id, new AbortController())).toBeNull();
    release();
    expect(h.host.runtime.isIdle(c.id)).toBe(true);

    // Shutdown: running work is not the person's stop; it settles failed + interrupted (resumable).
    const thread = await h.host.heartbeat.directThread(a.id);
    const queued = await h.host.runtime.dispatchToBot(a.id, thread.id, 'later', { source: 'external' });
    await h.host.stop();
    for (const d of sent.dispatched) {
      expect(await task(h, d.task_id)).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'interrupted' });
    }
    // Issue 17: a job that never started is never "cut off": it stays queued and runs after the restart.
    expect(await task(h, queued.taskId)).toMatchObject({ status: 'queued', interrupted: false, error_kind: null });
    expect((await h.coordinator.sizes()).find((s) => s.queue === 'bots.run')).toMatchObject({ queued: 1 });
    await expect(h.host.runtime.dispatchToBot(a.id, thread.id, 'more', { source: 'external' })).rejects.toThrow(/shutting down/);
  });
});
