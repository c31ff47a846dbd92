/**
 * The heartbeat treats an external runtime's bot as it treats a built-in one (issue 18 §6), both
 * dialects, over real HTTP: a person's message preempts a resume (one waiting is set aside with
 * its attempt refunded; one running is preempted, resumable, and the runtime told to stop it);
 * a pulse's `ask_user` becomes a check-in the runtime is asked to show, and the person's reply
 * answers it; quiet hours, budgets, a person being active and a run of the runtime's own keep
 * the heartbeat away; a resume's lease is renewed by reports and ends when they stop; a poll
 * runtime gets its dispatches by long-poll.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeDispatch } from '../../src/protocol/index.js';
import { testDialects } from '../support/stores.js';
import { createRuntimeHarness, SECRET_ENV, startFakeRuntime, until, type FakeRuntime, type RuntimeHarness } from './harness.js';

const RUNTIME = 'acme';
const BOT = 'ext:acme:writer';
const TASK = 'ext:acme:post-42';

async function register(h: RuntimeHarness, delivery: { kind: 'poll' } | { kind: 'webhook'; url: string; secret_env: string }): Promise<void> {
  await h.client.call('runtime.register', { runtime_id: RUNTIME, instance_id: 'p1', delivery, bots: [{ id: 'writer', name: 'writer', label: 'Writer' }] });
}

async function cutOff(h: RuntimeHarness): Promise<void> {
  await h.client.call('runtime.report', {
    runtime_id: RUNTIME,
    messages: [{ id: 'm1', thread_id: 'writer', role: 'user', text: 'Draft the launch post.', created_at: h.clock.now() - 600_000 }],
    tasks: [{ id: 'post-42', bot_id: 'writer', title: 'Draft the launch post', status: 'failed', error_kind: 'interrupted', checkpoint: 'The outline.' }],
  });
}

/** One heartbeat tick 30 s on, its pulse scripted. */
async function beat(h: RuntimeHarness, verdict: Parameters<RuntimeHarness['verdict']>[0] = {}): Promise<string> {
  await h.advance(30_000);
  h.verdict(verdict);
  return (await h.tick()).message;
}

const personWrites = (h: RuntimeHarness, id: string, text = 'Actually, make it shorter.') =>
  h.client.call('runtime.report', { runtime_id: RUNTIME, messages: [{ id, thread_id: 'writer', role: 'user', text }] });

describe('the heartbeat’s rules for an external runtime’s bot', async () => {
  const dialects = await testDialects();
  let h: RuntimeHarness | undefined;
  let rt: FakeRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    expect(rt?.errors ?? []).toEqual([]);
    await h?.dispose();
    h = rt = undefined;
  });
  const webhook = () => ({ kind: 'webhook' as const, url: rt!.url, secret_env: SECRET_ENV });

  it.each(dialects)(
    'on %s: a person’s message sets a waiting resume aside (attempt refunded) and preempts a running one (the runtime told to stop)',
    async (dialect) => {
      h = await createRuntimeHarness({ dialect });
      rt = await startFakeRuntime({ now: () => h!.clock.now() });
      rt.answer = 'hang';
      await register(h, webhook());
      await cutOff(h);
      expect(await beat(h)).toMatch(/1 resumed/);
      await until(() => rt!.received.length === 1);
      expect(await h.runtimes.heartbeat.getTask(TASK)).toMatchObject({ attempts: 1, claimed_by: 'heartbeat' });

      // 1. Not acknowledged yet: set aside, nothing ran, so the attempt is refunded and it is never delivered again.
      await personWrites(h, 'm2');
      const [aside] = await h.dispatches(RUNTIME);
      expect(aside).toMatchObject({ state: 'cancelled', last_error: 'a message from the person came first' });
      expect(await h.runtimes.heartbeat.getTask(TASK)).toMatchObject({ status: 'failed', attempts: 0, claimed_by: null });
      expect((await h.logOf(BOT))[0]).toMatchObject({ outcome: 'set_aside', reason: expect.stringMatching(/a person's message came first.*attempt refunded/) });
      await h.advance(30_000);
      expect(rt.received).toHaveLength(1);

      // That task is the person's now (they wrote after it stopped): the heartbeat leaves it, as it would a built-in bot's.
      for (let i = 0; i < 15; i++) expect(await beat(h)).not.toMatch(/resumed/);
      expect(rt.received).toHaveLength(1);

      // 2. Running (acknowledged): preempted — failed + interrupted + preempted, resumable — and a cancel to the runtime.
      await h.client.call('runtime.report', {
        runtime_id: RUNTIME,
        tasks: [{ id: 'post-42', bot_id: 'writer', status: 'failed', error_kind: 'interrupted', error: 'crashed again', checkpoint: 'The outline, shorter.' }],
      });
      rt.answer = 200;
      rt.onDispatch = async (d) => {
        if (d.webhook.dispatch.kind === 'resume')
          await h!.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.webhook.dispatch.id, instance_id: 'p1' });
      };
      let resumed = '';
      for (let i = 0; i < 10 && !/resumed/.test(resumed); i++) resumed = await beat(h);
      expect(resumed).toMatch(/1 resumed/);
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'acked');
      await personWrites(h, 'm3', 'Stop, I will write it myself.');
      await until(() => rt!.received.some((d) => d.webhook.dispatch.kind === 'cancel'));
      const cancel = rt.received.find((d) => d.webhook.dispatch.kind === 'cancel')!;
      expect(cancel.valid).toBe(true);
      expect(cancel.webhook.dispatch).toMatchObject({
        kind: 'cancel',
        task_id: 'post-42',
        bot_id: 'writer',
        text: expect.stringMatching(/The person wrote first/),
      });
      const list = await h.dispatches(RUNTIME);
      expect(list.find((d) => d.kind === 'resume' && d.state !== 'cancelled')).toMatchObject({ state: 'preempted' });
      expect(await h.runtimes.heartbeat.getTask(TASK)).toMatchObject({ status: 'failed', error_kind: 'preempted', interrupted: true, attempts: 0 });
      expect((await h.logOf(BOT))[0]).toMatchObject({ outcome: 'settled', reason: expect.stringMatching(/ended failed \(preempted\)/) });
      expect(h.runtimes.heartbeat.isIdle(BOT)).toBe(true);
      // The cancel is acknowledged like any dispatch.
      await h.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: cancel.webhook.dispatch.id });
      expect((await h.dispatches(RUNTIME)).find((d) => d.kind === 'cancel')).toMatchObject({ state: 'done' });
    },
  );

  it.each(dialects)('on %s: ask_user is a check-in the runtime is asked to show; the person’s reply answers it', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    rt = await startFakeRuntime({ now: () => h!.clock.now() });
    await register(h, webhook());
    await cutOff(h);
    expect(await beat(h, { verdict: 'ask_user', instruction: 'Should the post mention pricing?', reason: 'needs a decision' })).toMatch(/1 checked in/);
    await until(() => rt!.received.length === 1);
    const ask = rt.received[0]!.webhook.dispatch as RuntimeDispatch;
    expect(ask).toMatchObject({
      kind: 'ask',
      bot_id: 'writer',
      thread_id: 'writer',
      task_id: 'post-42',
      text: 'About “Draft the launch post”: Should the post mention pricing?',
    });
    const snap = await h.client.call('bots.heartbeat_snapshot', { bot_ids: [BOT] });
    expect(snap.checkins).toEqual([expect.objectContaining({ bot_id: BOT, task_id: TASK, source: 'ask_user', state: 'pending' })]);
    expect(snap.bots[0]!.state).toBe('waiting_user');
    await h.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: ask.id });
    // The runtime shows it; the person answers there; the runtime reports the answer.
    await personWrites(h, 'm2', 'Yes, one line about pricing.');
    const after = await h.client.call('bots.heartbeat_snapshot', { bot_ids: [BOT] });
    expect(after.checkins).toEqual([]);
    expect(after.bots[0]!.state).toBe('idle');
    expect((await h.dispatches(RUNTIME))[0]).toMatchObject({ kind: 'ask', state: 'done' });
  });

  it.each(dialects)('on %s: quiet hours, budgets, a person active and a run of its own keep the heartbeat away', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    rt = await startFakeRuntime({ now: () => h!.clock.now() });
    await register(h, webhook());
    await cutOff(h);
    const skip = async () => (await h!.logOf(BOT))[0]!;

    // Quiet hours around now (09:00 UTC): skipped, no pulse.
    await h.client.call('bots.set_heartbeat_settings', { bot_id: BOT, quiet_hours: { enabled: true, start: '08:00', end: '10:00' } });
    await h.hb.core.bots.update(BOT, { next_heartbeat_at: h.clock.now() });
    await h.tick();
    expect(await skip()).toMatchObject({ outcome: 'skipped', skip: 'quiet_hours' });
    await h.client.call('bots.set_heartbeat_settings', { bot_id: BOT, quiet_hours: null });

    // A run the runtime reports running: the bot is busy.
    await h.client.call('runtime.report', { runtime_id: RUNTIME, runs: [{ id: 'run-1', bot_id: 'writer', status: 'running', lease_seconds: 600 }] });
    expect(h.runtimes.heartbeat.statusOf(BOT)).toMatchObject({ status: 'working' });
    await h.hb.core.bots.update(BOT, { next_heartbeat_at: h.clock.now() });
    await h.tick();
    expect(await skip()).toMatchObject({ outcome: 'skipped', skip: 'busy' });
    await h.client.call('runtime.report', { runtime_id: RUNTIME, runs: [{ id: 'run-1', bot_id: 'writer', status: 'done' }] });
    expect(h.runtimes.heartbeat.isIdle(BOT)).toBe(true);

    // A person who just wrote is left alone for 90 s.
    await h.client.call('runtime.report', { runtime_id: RUNTIME, messages: [{ id: 'm9', thread_id: 'writer', role: 'user', text: 'Still there?' }] });
    await h.hb.core.bots.update(BOT, { next_heartbeat_at: h.clock.now() });
    await h.tick();
    expect(await skip()).toMatchObject({ outcome: 'skipped', skip: 'user_active' });

    // A spent resume budget: the pulse may say resume, nothing is dispatched.
    await h.advance(120_000);
    await h.client.call('runtime.report', {
      runtime_id: RUNTIME,
      messages: [
        { id: 'm10', thread_id: 'writer', role: 'bot', bot_id: 'writer', task_id: 'post-42', text: 'I was cut off', status: 'error', interrupted: true },
      ],
    });
    await h.client.call('bots.set_heartbeat_settings', { bot_id: BOT, max_resumes_per_day: 0 });
    await h.hb.core.bots.update(BOT, { next_heartbeat_at: h.clock.now() });
    h.verdict();
    await h.tick();
    expect(await skip()).toMatchObject({ outcome: 'skipped', skip: 'budget' });
    expect(await h.dispatches(RUNTIME)).toEqual([]);
    expect(rt.received).toEqual([]);
  });

  it.each(dialects)('on %s: a resume’s lease is renewed by reports, and ends when they stop: interrupted, cooldown, resumed again', async (dialect) => {
    h = await createRuntimeHarness({ dialect, runtimes: { lease_seconds: 120 } });
    rt = await startFakeRuntime({ now: () => h!.clock.now() });
    rt.onDispatch = async (d) => {
      if (d.webhook.dispatch.kind === 'resume')
        await h!.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.webhook.dispatch.id, instance_id: 'p1' });
    };
    await register(h, webhook());
    await cutOff(h);
    expect(await beat(h)).toMatch(/1 resumed/);
    await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'acked');
    const first = (await h.dispatches(RUNTIME))[0]!;
    // It keeps saying its run goes on: the lease moves with it, for longer than one lease.
    for (let i = 0; i < 5; i++) {
      await h.advance(60_000);
      await h.client.call('runtime.report', {
        runtime_id: RUNTIME,
        runs: [{ id: 'run-r', bot_id: 'writer', task_id: 'post-42', status: 'running', lease_seconds: 120 }],
      });
    }
    expect((await h.dispatches(RUNTIME))[0]).toMatchObject({ state: 'acked', lease_until: h.clock.now() + 120_000 });
    expect(await h.runtimes.heartbeat.getTask(TASK)).toMatchObject({ status: 'working' });
    // Then it goes silent: past its lease the resume is interrupted and the heartbeat settles it.
    await h.advance(125_000);
    await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'expired');
    expect(await h.runtimes.heartbeat.getTask(TASK)).toMatchObject({ status: 'failed', error_kind: 'interrupted', attempts: 1 });
    await until(async () => (await h!.logOf(BOT))[0]?.outcome === 'settled'); // told right after the dispatch's state
    let resumed = '';
    for (let i = 0; i < 30 && !/resumed/.test(resumed); i++) resumed = await beat(h);
    expect(resumed).toMatch(/1 resumed/);
    await until(async () => (await h!.dispatches(RUNTIME)).length === 2);
    const [second] = await h.dispatches(RUNTIME);
    expect(second).toMatchObject({ attempt: 2 });
    expect(second!.created_at).toBeGreaterThan(first.created_at);
  });

  it.each(dialects)(
    'on %s: a person’s follow-up for the bot comes due: a resume of a task minted for it, which the runtime reports as its own',
    async (dialect) => {
      h = await createRuntimeHarness({ dialect });
      await register(h, { kind: 'poll' });
      await h.client.call('bots.add_followup', { bot_id: BOT, in_minutes: 10, note: 'Check the comments on the launch post.' });
      await h.advance(10 * 60_000);
      h.verdict({ reason: 'the follow-up is due' });
      expect((await h.tick()).message).toMatch(/1 resumed/);
      const [d] = (await h.client.call('runtime.poll', { runtime_id: RUNTIME })).dispatches;
      expect(d).toMatchObject({
        kind: 'resume',
        bot_id: 'writer',
        task_id: expect.stringMatching(/^sc-/),
        note: expect.stringMatching(/^Woke up to follow up on/),
      });
      expect(d!.text).toContain('Check the comments on the launch post.');
      await h.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d!.id });
      const done = await h.client.call('runtime.report', {
        runtime_id: RUNTIME,
        tasks: [{ id: d!.task_id!, bot_id: 'writer', status: 'done', dispatch_id: d!.id }],
      });
      expect(done.settled_task_ids).toEqual([d!.task_id]);
      const snap = await h.client.call('bots.heartbeat_snapshot', { bot_ids: [BOT] });
      expect(snap.followups).toEqual([]);
    },
  );

  it.each(dialects)('on %s: a poll runtime gets its resume by long-poll, handed out again until acknowledged', async (dialect) => {
    h = await createRuntimeHarness({ dialect, runtimes: { ack_seconds: 30 } });
    await register(h, { kind: 'poll' });
    await cutOff(h);
    expect(await h.client.call('runtime.poll', { runtime_id: RUNTIME })).toEqual({ dispatches: [] });
    // Waiting before the dispatch exists: the poll answers as soon as the heartbeat writes it.
    const waiting = h.client.call('runtime.poll', { runtime_id: RUNTIME, wait_seconds: 30 });
    expect(await beat(h)).toMatch(/1 resumed/);
    const { dispatches } = await waiting;
    expect(dispatches).toHaveLength(1);
    expect(dispatches[0]).toMatchObject({ kind: 'resume', task_id: 'post-42', state: 'delivered', deliveries: 1 });
    expect(await h.client.call('runtime.poll', { runtime_id: RUNTIME })).toEqual({ dispatches: [] });
    await h.advance(30_000);
    const again = await h.client.call('runtime.poll', { runtime_id: RUNTIME });
    expect(again.dispatches.map((d) => [d.id, d.deliveries])).toEqual([[dispatches[0]!.id, 2]]);
    await h.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: dispatches[0]!.id });
    await h.advance(60_000);
    expect(await h.client.call('runtime.poll', { runtime_id: RUNTIME })).toEqual({ dispatches: [] });
    const done = await h.client.call('runtime.report', {
      runtime_id: RUNTIME,
      tasks: [{ id: 'post-42', bot_id: 'writer', status: 'done', dispatch_id: dispatches[0]!.id }],
    });
    expect(done.settled_task_ids).toEqual(['post-42']);
  });
});
