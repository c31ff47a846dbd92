/**
 * Issue 18 §6 end to end, on both dialects, over real HTTP on loopback: an external agent
 * runtime registers its bot and reports a task its crash cut off; the heartbeat (its tick on a
 * real engine Instance, its pulse on the scripted model server, one fake clock) resumes it
 * through the runtime's webhook — signed, acknowledged once, reported done — exactly once, also
 * when the runtime crashes mid-resume: before it answers the webhook (delivered again, same
 * idempotency key, started once), and after it acknowledged (a fresh process registers: the
 * resume is cut off, and the heartbeat's rules resume it once more, never two at a time).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RegisterResult, RuntimeDispatch } from '../../src/protocol/index.js';
import { testDialects } from '../support/stores.js';
import { createRuntimeHarness, SECRET_ENV, startFakeRuntime, until, type Delivery, type FakeRuntime, type RuntimeHarness } from './harness.js';

const RUNTIME = 'acme';

async function setUp(h: RuntimeHarness, rt: FakeRuntime, instance = 'proc-1'): Promise<RegisterResult> {
  return h.client.call('runtime.register', {
    runtime_id: RUNTIME,
    name: 'Acme agents',
    instance_id: instance,
    delivery: { kind: 'webhook', url: rt.url, secret_env: SECRET_ENV },
    bots: [{ id: 'writer', name: 'writer', label: 'Writer', description: 'Drafts blog posts.' }],
  });
}

/** What the runtime reports after a crash cut its run off: the person's request, the partial reply, the task failed + interrupted. */
async function reportCrash(h: RuntimeHarness): Promise<void> {
  const t0 = h.clock.now();
  const r = await h.client.call('runtime.report', {
    runtime_id: RUNTIME,
    tasks: [
      {
        id: 'post-42',
        bot_id: 'writer',
        title: 'Draft the launch post',
        status: 'failed',
        error_kind: 'interrupted',
        error: 'the runtime crashed',
        checkpoint: 'Outline written; the intro is half done.',
      },
    ],
    messages: [
      { id: 'm1', thread_id: 'writer', role: 'user', text: 'Draft the launch post, please.', created_at: t0 - 10 * 60_000 },
      {
        id: 'm2',
        thread_id: 'writer',
        role: 'bot',
        bot_id: 'writer',
        task_id: 'post-42',
        text: 'Outline: 1. Why 2. What 3. How. Intro: We built',
        status: 'error',
        interrupted: true,
        created_at: t0 - 9 * 60_000,
      },
    ],
  });
  expect(r.tasks.created).toBe(1);
  expect(r.messages.created).toBe(2);
}

/** The runtime's side of a resume it got: acknowledge (its start), run, report done. */
async function runResume(h: RuntimeHarness, d: RuntimeDispatch, instance = 'proc-1'): Promise<void> {
  const ack = await h.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: instance });
  expect(ack.dispatch.state).toBe('acked');
  expect(ack.lease_until).toBe(h.clock.now() + 300_000);
  const done = await h.client.call('runtime.report', {
    runtime_id: RUNTIME,
    messages: [{ id: `reply-${d.id}`, thread_id: 'writer', role: 'bot', bot_id: 'writer', task_id: 'post-42', text: 'The launch post is drafted.' }],
    runs: [
      {
        id: `run-${d.id}`,
        bot_id: 'writer',
        task_id: 'post-42',
        status: 'done',
        usage: { calls: 2, input_tokens: 900, output_tokens: 120 },
        dispatch_id: d.id,
      },
    ],
    tasks: [{ id: 'post-42', bot_id: 'writer', status: 'done', dispatch_id: d.id }],
  });
  expect(done.settled_task_ids).toEqual(['post-42']);
  expect(done.stale).toEqual([]);
}

const resumes = (rt: FakeRuntime): Delivery[] => rt.received.filter((d) => d.webhook.dispatch.kind === 'resume');

describe('an external runtime’s interrupted task, resumed through its webhook', async () => {
  const dialects = await testDialects();
  let h: RuntimeHarness | undefined;
  let rt: FakeRuntime | undefined;
  let rt2: FakeRuntime | undefined;
  afterEach(async () => {
    for (const r of [rt, rt2]) {
      await r?.close();
      expect(r?.errors ?? []).toEqual([]);
    }
    await h?.dispose();
    h = rt = rt2 = undefined;
  });

  it.each(dialects)('on %s: pulse, claim, a signed webhook, one ack, reported done — exactly once', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    rt = await startFakeRuntime({ now: () => h!.clock.now() });
    const reg = await setUp(h, rt);
    const botId = reg.bots[0]!.subconscious_id;
    expect(reg.bots[0]).toMatchObject({ id: 'writer', runtime_id: RUNTIME, subconscious_id: 'ext:acme:writer', thread_id: 'writer' });
    expect(reg.runtime.delivery).toEqual({ kind: 'webhook', url: rt.url, secret_env: SECRET_ENV, secret_file: null });
    await reportCrash(h);

    // The settle marked the bot due at the next tick, as a built-in bot's resumable failure does.
    await h.advance(30_000);
    h.verdict();
    const tick = await h.tick();
    expect(tick.kind).toBe('committed');
    expect(tick.message).toMatch(/1 resumed/);

    await until(() => resumes(rt!).length === 1);
    const [delivery] = resumes(rt);
    expect(delivery!.valid).toBe(true);
    const d = delivery!.webhook.dispatch;
    expect(delivery!.headers['idempotency-key']).toBe(d.id);
    expect(delivery!.headers['x-subconscious-event']).toBe('dispatch.resume');
    expect(delivery!.headers['x-subconscious-delivery-attempt']).toBe('1');
    expect(delivery!.webhook).toMatchObject({ type: 'runtime.dispatch', delivery: 1 });
    expect(d).toMatchObject({ kind: 'resume', runtime_id: RUNTIME, bot_id: 'writer', thread_id: 'writer', task_id: 'post-42', attempt: 1 });
    expect(d.subconscious).toEqual({ bot_id: botId, thread_id: 'ext:acme:writer', task_id: 'ext:acme:post-42' });
    expect(d.text).toMatch(/^\[Heartbeat wake-up — not a new user message\]/);
    expect(d.text).toContain('Outline written; the intro is half done.');
    expect(d.note).toMatch(/^Woke up to continue “Draft the launch post”/);
    await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'delivered');

    await runResume(h, d);
    const [final] = await h.dispatches(RUNTIME);
    expect(final).toMatchObject({ id: d.id, state: 'done', deliveries: 1 });
    const task = await h.runtimes.heartbeat.getTask('ext:acme:post-42');
    expect(task).toMatchObject({ status: 'done', attempts: 1, claimed_by: null });
    const log = await h.logOf(botId);
    expect(log.map((e) => e.outcome)).toEqual(['settled', 'resumed']); // newest first
    expect(log[1]).toMatchObject({ tier: 2, rule: 'interrupted_task', verdict: 'resume', dispatched: { task_id: 'ext:acme:post-42' } });
    expect(log.find((e) => e.outcome === 'settled')!.reason).toMatch(/the resume ended done/);
    expect((await h.hb.service.botHeartbeat(botId)).state).toBe('cooldown');
    // The person sees the wake note in the thread (the heartbeat's note, written before the dispatch).
    const thread = await h.runtimes.heartbeat.messages('ext:acme:writer', { limit: 10 });
    expect(thread.filter((m) => m.role === 'system').map((m) => m.text)).toEqual([d.note]);

    // Nothing more: no redelivery after the ack, no second resume after the cooldown.
    for (let i = 0; i < 25; i++) {
      await h.advance(30_000);
      await h.tick();
    }
    expect(rt.received).toHaveLength(1);
    expect(await h.dispatches(RUNTIME)).toHaveLength(1);
    expect(h.pulse.chatRequests).toHaveLength(1);
  });

  it.each(dialects)(
    'on %s: the runtime dies before it answers the webhook — retried with backoff, the same idempotency key to its new process, started once',
    async (dialect) => {
      h = await createRuntimeHarness({ dialect });
      rt = await startFakeRuntime({ now: () => h!.clock.now() });
      await setUp(h, rt);
      await reportCrash(h);
      rt.answer = 'hang';
      await h.advance(30_000);
      h.verdict();
      await h.tick();
      await until(() => resumes(rt!).length === 1);
      // Its process dies with the request open: the post fails; the next try comes after the backoff.
      await rt.close();
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.last_error !== null);
      const [failed] = await h.dispatches(RUNTIME);
      expect(failed).toMatchObject({ state: 'pending', deliveries: 1 });
      expect(failed!.last_error).toMatch(/could not be reached|did not answer/);
      expect(failed!.next_attempt_at).toBe(h.clock.now() + 2000);

      // A fresh process (nothing remembered) listens on the same port; it registers again.
      rt2 = await startFakeRuntime({ now: () => h!.clock.now(), port: rt.port });
      const started: string[] = [];
      rt2.onDispatch = async (got) => {
        const d = got.webhook.dispatch;
        if (d.kind !== 'resume') return;
        started.push(d.id);
        await runResume(h!, d, 'proc-2');
      };
      const again = await setUp(h, rt2, 'proc-2');
      expect(again).toMatchObject({ restarted: true, interrupted_task_ids: [] }); // nothing of it had started
      await h.advance(2000);
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'done');
      expect(resumes(rt2)).toHaveLength(1);
      expect(resumes(rt2)[0]!.headers['idempotency-key']).toBe(failed!.id);
      expect(resumes(rt2)[0]!.headers['x-subconscious-delivery-attempt']).toBe('2');
      expect(started).toEqual([failed!.id]);
      expect(await h.runtimes.heartbeat.getTask('ext:acme:post-42')).toMatchObject({ status: 'done', attempts: 1 });
      expect(await h.dispatches(RUNTIME)).toHaveLength(1);
    },
  );

  it.each(dialects)(
    'on %s: the runtime dies after it acknowledged — its new process cuts the resume off; the heartbeat resumes once more, never two at a time',
    async (dialect) => {
      h = await createRuntimeHarness({ dialect });
      rt = await startFakeRuntime({ now: () => h!.clock.now() });
      const botId = (await setUp(h, rt)).bots[0]!.subconscious_id;
      await reportCrash(h);
      rt.onDispatch = async (got) => {
        // It starts the resume, then its process dies (no report ever comes from it).
        await h!.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: got.webhook.dispatch.id, instance_id: 'proc-1' });
      };
      await h.advance(30_000);
      h.verdict();
      await h.tick();
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'acked');
      expect(h.runtimes.heartbeat.isIdle(botId)).toBe(false);
      expect(h.runtimes.heartbeat.statusOf(botId)).toEqual({ status: 'working', queued: 0, taskId: 'ext:acme:post-42' });
      const first = (await h.dispatches(RUNTIME))[0]!;
      await rt.close();

      // While it is live, the heartbeat leaves the bot alone: nothing is resumed twice.
      await h.advance(30_000);
      await h.tick();
      expect(await h.dispatches(RUNTIME)).toHaveLength(1);

      rt2 = await startFakeRuntime({ now: () => h!.clock.now(), port: rt.port });
      const started: string[] = [];
      rt2.onDispatch = async (got) => {
        if (got.webhook.dispatch.kind !== 'resume') return;
        started.push(got.webhook.dispatch.id);
        await runResume(h!, got.webhook.dispatch, 'proc-2');
      };
      const again = await setUp(h, rt2, 'proc-2');
      expect(again).toMatchObject({ restarted: true, interrupted_task_ids: ['post-42'] });
      expect(await h.runtimes.heartbeat.getTask('ext:acme:post-42')).toMatchObject({
        status: 'failed',
        error_kind: 'interrupted',
        interrupted: true,
        attempts: 1,
      });
      expect((await h.dispatches(RUNTIME))[0]).toMatchObject({ id: first.id, state: 'expired' });
      // The old process's late word is refused: it names a dispatch that no longer holds the task.
      const late = await h.client.call('runtime.report', {
        runtime_id: RUNTIME,
        tasks: [{ id: 'post-42', bot_id: 'writer', status: 'done', dispatch_id: first.id }],
      });
      expect(late.stale).toEqual([{ kind: 'task', id: 'post-42', reason: expect.stringMatching(/is expired/) }]);
      expect(late.tasks).toEqual({ created: 0, updated: 0, unchanged: 0 });

      // The heartbeat's normal rules: the cut-off resume settled (cooldown), then one more resume.
      expect((await h.hb.service.botHeartbeat(botId)).state).toBe('cooldown');
      let resumed = 0;
      for (let i = 0; i < 30 && resumed === 0; i++) {
        await h.advance(30_000);
        h.pulse.reset();
        h.verdict();
        const out = await h.tick();
        if (/resumed/.test(out.message)) resumed++;
      }
      expect(resumed).toBe(1);
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'done');
      const all = await h.dispatches(RUNTIME);
      expect(all.map((d) => [d.state, d.attempt])).toEqual([
        ['done', 2],
        ['expired', 1],
      ]);
      // The second was written after the first had ended: never two live at once.
      expect(all[0]!.created_at).toBeGreaterThanOrEqual(all[1]!.finished_at!);
      expect(started).toEqual([all[0]!.id]);
      expect(await h.runtimes.heartbeat.getTask('ext:acme:post-42')).toMatchObject({ status: 'done', attempts: 2 });
    },
  );
});
