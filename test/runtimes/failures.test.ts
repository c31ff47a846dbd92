/**
 * Issue 18 §6's failure cases, over real HTTP on loopback, both dialects: a secret that is not
 * there (or too short) refuses the registration; a runtime that verifies with another secret
 * answers 401 and the dispatch is retried, never taken as delivered; a webhook answering 500 is
 * retried with exponential backoff on the daemon's clock, then delivered, with one idempotency
 * key throughout; a delivery not acknowledged in time is delivered again; bad params are typed
 * errors, and a refused call changes nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SubconsciousClientError, verifyWebhookSignature } from '../../src/client/index.js';
import { signatureHeader, signatureValid } from '../../src/runtimes/index.js';
import { testDialects } from '../support/stores.js';
import { createRuntimeHarness, SECRET, SECRET_ENV, startFakeRuntime, until, type FakeRuntime, type RuntimeHarness } from './harness.js';

const RUNTIME = 'acme';

async function refused(p: Promise<unknown>): Promise<SubconsciousClientError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SubconsciousClientError) return err;
    throw err;
  }
  throw new Error('expected a typed error, got a result');
}

async function interrupted(h: RuntimeHarness, rt: FakeRuntime): Promise<void> {
  await h.client.call('runtime.register', {
    runtime_id: RUNTIME,
    delivery: { kind: 'webhook', url: rt.url, secret_env: SECRET_ENV },
    bots: [{ id: 'writer', name: 'writer' }],
  });
  await h.client.call('runtime.report', {
    runtime_id: RUNTIME,
    tasks: [{ id: 't1', bot_id: 'writer', title: 'Write the changelog', status: 'failed', error_kind: 'interrupted', checkpoint: 'Half of it.' }],
  });
  await h.advance(30_000);
  h.verdict();
  expect((await h.tick()).message).toMatch(/1 resumed/);
}

describe('failures on the wire', async () => {
  const dialects = await testDialects();
  let h: RuntimeHarness | undefined;
  let rt: FakeRuntime | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await rt?.close();
    expect(rt?.errors ?? []).toEqual([]);
    await h?.dispose();
    h = rt = undefined;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('the signature: HMAC-SHA256 over "<t>.<body>", checked by the client in constant time, replays and tampering refused', async () => {
    const body = JSON.stringify({ type: 'runtime.dispatch', dispatch: { id: 'dsp_1' } });
    const now = Date.UTC(2026, 0, 1, 9, 0, 0);
    const header = signatureHeader(SECRET, body, now);
    expect(header).toMatch(/^t=\d{10},v1=[0-9a-f]{64}$/);
    expect(await verifyWebhookSignature({ secret: SECRET, body, header, now })).toBe(true);
    expect(await verifyWebhookSignature({ secret: SECRET, body: new TextEncoder().encode(body), header, now: now + 299_000 })).toBe(true);
    expect(signatureValid(SECRET, body, header, now)).toBe(true);
    expect(await verifyWebhookSignature({ secret: 'another-secret-of-16+chars', body, header, now })).toBe(false);
    expect(await verifyWebhookSignature({ secret: SECRET, body: body.replace('dsp_1', 'dsp_2'), header, now })).toBe(false);
    expect(await verifyWebhookSignature({ secret: SECRET, body, header, now: now + 301_000 })).toBe(false); // a replay, too old
    expect(await verifyWebhookSignature({ secret: SECRET, body, header: undefined, now })).toBe(false);
    expect(await verifyWebhookSignature({ secret: SECRET, body, header: header.replace(/v1=./, 'v1=0'), now })).toBe(false);
    expect(signatureValid(SECRET, body, header.replace(/v1=./, 'v1=0'), now)).toBe(false);
  });

  it.each(dialects)(
    'on %s: a secret the daemon cannot read is refused at registration; one the runtime does not share is a 401, retried, never delivered',
    async (dialect) => {
      h = await createRuntimeHarness({ dialect, env: { SHORT_SECRET: 'abc' } });
      rt = await startFakeRuntime({ now: () => h!.clock.now() });
      const webhook = (extra: Record<string, string>) => ({ kind: 'webhook' as const, url: rt!.url, ...extra });
      const bots = [{ id: 'writer', name: 'writer' }];
      const unset = await refused(h.client.call('runtime.register', { runtime_id: RUNTIME, delivery: webhook({ secret_env: 'NOT_SET_ANYWHERE' }), bots }));
      expect(unset.code).toBe('invalid_params');
      expect(unset.message).toMatch(/delivery\.secret_env: the daemon's environment variable NOT_SET_ANYWHERE holds no secret/);
      const short = await refused(h.client.call('runtime.register', { runtime_id: RUNTIME, delivery: webhook({ secret_env: 'SHORT_SECRET' }), bots }));
      expect(short.message).toMatch(/shorter than 16 characters/);
      const missing = await refused(
        h.client.call('runtime.register', { runtime_id: RUNTIME, delivery: webhook({ secret_file: '/nonexistent/secret' }), bots }),
      );
      expect(missing.message).toMatch(/delivery\.secret_file: the file \/nonexistent\/secret cannot be read by the daemon \(ENOENT\)/);
      const both = await refused(
        h.client.call('runtime.register', { runtime_id: RUNTIME, delivery: webhook({ secret_env: SECRET_ENV, secret_file: '/x' }), bots }),
      );
      expect(both).toMatchObject({ code: 'invalid_params', details: { rpcCode: -32602 } });
      expect(both.message).toMatch(/delivery: give exactly one of secret_env .* or secret_file/);
      const inline = await refused(h.client.call('runtime.register', { runtime_id: RUNTIME, delivery: { ...webhook({}), secret: SECRET } as never, bots }));
      expect(inline.message).toMatch(/delivery/);
      expect(await h.client.call('runtime.list')).toEqual([]); // nothing was written

      // A secret file works the same (read at each delivery, never stored); here the runtime holds another secret.
      const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-rt-secret-'));
      dirs.push(dir);
      const file = path.join(dir, 'webhook-secret');
      writeFileSync(file, `${SECRET}\n`);
      await h.client.call('runtime.register', { runtime_id: RUNTIME, delivery: webhook({ secret_file: file }), bots });
      expect(JSON.stringify(await h.db.selectFrom('runtimes_hosts').selectAll().execute())).not.toContain(SECRET);
      rt.secret = 'the-runtime-has-another-secret';
      await h.client.call('runtime.report', {
        runtime_id: RUNTIME,
        tasks: [{ id: 't1', bot_id: 'writer', title: 'Write the changelog', status: 'failed', error_kind: 'interrupted', checkpoint: 'Half of it.' }],
      });
      await h.advance(30_000);
      h.verdict();
      await h.tick();
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.last_error != null);
      const [d] = await h.dispatches(RUNTIME);
      expect(rt.received[0]!.valid).toBe(false);
      expect(d).toMatchObject({ state: 'pending', deliveries: 1, last_error: 'the webhook answered HTTP 401 Unauthorized' });
      expect((await h.client.call('runtime.list'))[0]!.last_delivery_error).toMatch(/HTTP 401.*next try in 2 s/);
      // The runtime gets the secret (rotated in place, both sides): the next try is delivered.
      rt.secret = SECRET;
      await h.advance(2000);
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'delivered');
      expect(rt.received.map((r) => r.valid)).toEqual([false, true]);
      expect((await h.client.call('runtime.list'))[0]!.last_delivery_error).toBeNull();
    },
  );

  it.each(dialects)(
    'on %s: a webhook answering 500 is retried with backoff on the daemon’s clock (2, 4, 8 s), then delivered; no ack in time, delivered again',
    async (dialect) => {
      h = await createRuntimeHarness({ dialect, runtimes: { retry_base_seconds: 2, ack_seconds: 60 } });
      rt = await startFakeRuntime({ now: () => h!.clock.now() });
      rt.answer = 500;
      await interrupted(h, rt);
      const t0 = h.clock.now();
      const tries = async (n: number) =>
        until(async () => rt!.received.length === n && (await h!.dispatches(RUNTIME))[0]!.deliveries === n && !!(await h!.dispatches(RUNTIME))[0]!.last_error);
      await tries(1);
      for (const [wait, n] of [
        [2000, 2],
        [4000, 3],
        [8000, 4],
      ] as const) {
        await h.advance(wait - 1000);
        expect(rt.received).toHaveLength(n - 1); // not before its time
        await h.advance(1000);
        await tries(n);
      }
      rt.answer = 200;
      await h.advance(16_000);
      await until(async () => (await h!.dispatches(RUNTIME))[0]?.state === 'delivered');
      expect(rt.received.map((r) => r.webhook.sent_at - t0)).toEqual([0, 2000, 6000, 14000, 30000]);
      expect(new Set(rt.received.map((r) => r.headers['idempotency-key'])).size).toBe(1);
      expect(rt.received.map((r) => r.headers['x-subconscious-delivery-attempt'])).toEqual(['1', '2', '3', '4', '5']);
      // Delivered, and no ack within ack_seconds: delivered again (at least once), then acknowledged.
      await h.advance(60_000);
      await until(() => rt!.received.length === 6);
      const d = rt.received[5]!.webhook.dispatch;
      await h.client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: 'p1' });
      await h.advance(120_000);
      expect(rt.received).toHaveLength(6);
      expect((await h.dispatches(RUNTIME))[0]).toMatchObject({ state: 'acked', deliveries: 6 });
    },
  );

  it.each(dialects)('on %s: bad params are typed errors, and a refused call changes nothing', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    rt = await startFakeRuntime({ now: () => h!.clock.now() });
    const c = h.client;
    const badId = await refused(c.call('runtime.register', { runtime_id: 'Bad Id', delivery: { kind: 'poll' } }));
    expect(badId).toMatchObject({ code: 'invalid_params', details: { rpcCode: -32602 } });
    expect(badId.message).toMatch(/runtime_id: must be 1-64 lower-case letters/);
    const badUrl = await refused(c.call('runtime.register', { runtime_id: RUNTIME, delivery: { kind: 'webhook', url: 'ftp://x/y', secret_env: SECRET_ENV } }));
    expect(badUrl.message).toMatch(/delivery\.url: must be an http:\/\/ or https:\/\/ URL/);
    expect((await refused(c.call('runtime.report', { runtime_id: 'nobody', tasks: [] }))).code).toBe('invalid_params'); // nothing to report
    expect(await refused(c.call('runtime.report', { runtime_id: 'nobody', tasks: [{ id: 't', bot_id: 'b', title: 'x', status: 'done' }] }))).toMatchObject({
      code: 'not_found',
    });
    await c.call('runtime.register', {
      runtime_id: RUNTIME,
      delivery: { kind: 'webhook', url: rt.url, secret_env: SECRET_ENV },
      bots: [
        { id: 'writer', name: 'writer' },
        { id: 'editor', name: 'editor' },
      ],
    });
    const before = await counts(h);
    const unknownBot = await refused(
      c.call('runtime.report', {
        runtime_id: RUNTIME,
        messages: [{ id: 'm1', thread_id: 'writer', role: 'user', text: 'hi' }],
        tasks: [{ id: 't1', bot_id: 'nobody', title: 'x', status: 'working' }],
      }),
    );
    expect(unknownBot).toMatchObject({ code: 'not_found', message: expect.stringMatching(/^tasks\.0\.bot_id: your runtime registered no bot "nobody"/) });
    const noTitle = await refused(c.call('runtime.report', { runtime_id: RUNTIME, tasks: [{ id: 't1', bot_id: 'writer', status: 'working' }] }));
    expect(noTitle).toMatchObject({ code: 'invalid_params', message: expect.stringMatching(/tasks\.0\.title: required when a task is first reported/) });
    const noAuthor = await refused(c.call('runtime.report', { runtime_id: RUNTIME, messages: [{ id: 'm1', thread_id: 'writer', role: 'bot', text: 'hi' }] }));
    expect(noAuthor.message).toMatch(/messages\.0\.bot_id: a bot message names its bot/);
    const noThread = await refused(
      c.call('runtime.report', { runtime_id: RUNTIME, messages: [{ id: 'm1', thread_id: 'elsewhere', role: 'user', text: 'hi' }] }),
    );
    expect(noThread).toMatchObject({ code: 'not_found' });
    const notDirect = await refused(
      c.call('runtime.report', { runtime_id: RUNTIME, threads: [{ id: 'writer', kind: 'group', bot_ids: ['writer', 'editor'] }] }),
    );
    expect(notDirect).toMatchObject({ code: 'conflict', message: expect.stringMatching(/a bot’s direct thread, not a group/) });
    const badStatus = await refused(
      c.call('runtime.report', { runtime_id: RUNTIME, tasks: [{ id: 't1', bot_id: 'writer', title: 'x', status: 'sleeping' as never }] }),
    );
    expect(badStatus.details.rpcCode).toBe(-32602);
    expect(await counts(h)).toEqual(before);

    const taken = await refused(c.call('runtime.register', { runtime_id: RUNTIME, delivery: { kind: 'poll' }, bots: [{ id: 'critic', name: 'editor' }] }));
    expect(taken).toMatchObject({ code: 'conflict', message: expect.stringMatching(/bots\.0\.name: "editor" is the name of your bot "editor"/) });
    expect(await refused(c.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: 'dsp_nothing' }))).toMatchObject({ code: 'not_found' });
    expect(await refused(c.call('runtime.poll', { runtime_id: 'nobody' }))).toMatchObject({ code: 'not_found' });
    expect(await refused(c.call('runtime.poll', { runtime_id: RUNTIME, wait_seconds: 31 }))).toMatchObject({ code: 'invalid_params' });
    expect(await refused(c.call('runtime.dispatches', { bot_id: 'writer', limit: 10 }))).toMatchObject({
      code: 'invalid_params',
      message: expect.stringMatching(/bot_id: give runtime_id too/),
    });
    expect(await refused(c.call('runtime.unregister', { runtime_id: 'nobody' }))).toMatchObject({ code: 'not_found' });
    // The heartbeat's own methods take the daemon's ids of external bots, and check them.
    expect(await c.call('bots.set_heartbeat', { bot_id: 'ext:acme:writer', enabled: false })).toMatchObject({ bot_id: 'ext:acme:writer', enabled: false });
    expect(await refused(c.call('bots.heartbeat_now', { bot_id: 'ext:acme:nobody' }))).toMatchObject({ code: 'not_found' });
    // A dispatch acknowledged by one process is refused to another (it must not run twice).
    await c.call('runtime.report', {
      runtime_id: RUNTIME,
      tasks: [{ id: 't9', bot_id: 'editor', title: 'Edit the post', status: 'failed', error_kind: 'interrupted', checkpoint: 'Para 1 edited.' }],
    });
    await h.advance(30_000);
    h.verdict();
    await h.tick();
    await until(() => rt!.received.length === 1);
    const d = rt.received[0]!.webhook.dispatch;
    await c.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: 'p1' });
    expect((await c.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: 'p1' })).dispatch.state).toBe('acked'); // the same process: idempotent
    const twice = await refused(c.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: 'p2' }));
    expect(twice).toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/acknowledged by another process of your runtime \(p1\); do not run it here/),
    });
    expect(await refused(c.call('runtime.ack', { runtime_id: 'other', dispatch_id: d.id }))).toMatchObject({ code: 'not_found' });
  });
});

async function counts(h: RuntimeHarness): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ['runtimes_threads', 'runtimes_messages', 'runtimes_tasks', 'runtimes_runs', 'runtimes_approvals', 'runtimes_dispatches'] as const) {
    const row = await h.db
      .selectFrom(t)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    out[t] = Number(row?.n ?? 0);
  }
  return out;
}
