/**
 * `bots.send_message` with an `idempotency_key`, on both dialects: a repeat in the same thread
 * returns the first send's result (same message and task ids) and writes nothing, also after a
 * restart (a new host on the same database: the first answer was lost); a first send cut off
 * midway is refused while it may still be under way, then finished — not doubled — by a repeat;
 * a bad key is a typed `invalid_params` error that changes nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBotsHost, parseBotsConfig } from '../../src/bots/index.js';
import { SEND_KEY_UNDERWAY_MS } from '../../src/bots/service.js';
import { RpcDispatcher, silentLogger, uuid, type RpcMethod, type RpcResponse } from '../../src/core/index.js';
import { implement } from '../../src/protocol/contract.js';
import { botsContract, type SendResult, type Thread } from '../../src/protocol/bots.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, dumpTables, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

describe.each(await testDialects())('bots.send_message idempotency_key on %s', (dialect) => {
  let h: BotsHarness;
  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    h.model.handle(() => ({ text: 'On it.' }));
  });
  afterEach(async () => {
    await h.dispose();
  });

  const settledAll = () =>
    until(async () => (await h.db.selectFrom('bots_tasks').select('id').where('status', 'in', ['queued', 'working']).execute()).length === 0);

  it('a repeat returns the first send’s result and stores nothing new, also after a restart', { timeout: 60_000 }, async () => {
    const bot = await h.createBot('ops', { tools: [] });
    const first = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'check the backups', idempotency_key: 'req-1' });
    expect(first.dispatched).toHaveLength(1);
    await settledAll();
    const before = await dumpTables(h.db);
    const calls = h.model.chatRequests.length;

    const again = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'check the backups', idempotency_key: 'req-1' });
    expect(again.message.id).toBe(first.message.id);
    expect(again.dispatched).toEqual(first.dispatched);
    expect(await dumpTables(h.db)).toEqual(before);

    // The daemon restarts (the first answer was lost on the way): a new host on the same database.
    await h.host.stop();
    const coordinator = await h.newCoordinator();
    const config = parseBotsConfig({ next_job_delay_ms: 0 });
    const host = createBotsHost({
      coordinator,
      db: h.db,
      clock: h.clock,
      ids: uuid,
      runner: h.runner,
      approvals: h.approvals,
      emit: () => undefined,
      log: silentLogger,
      config,
    });
    await host.start();
    try {
      const rpc = new RpcDispatcher();
      for (const m of implement(botsContract, host.rpc)) rpc.add(m as RpcMethod);
      const res = (await rpc.handle({
        jsonrpc: '2.0',
        id: 1,
        method: 'bots.send_message',
        params: { bot_id: bot.id, text: 'check the backups', idempotency_key: 'req-1' },
      })) as RpcResponse;
      if (!('result' in res)) throw new Error(JSON.stringify(res));
      const afterRestart = res.result as SendResult;
      expect(afterRestart.message.id).toBe(first.message.id);
      expect(afterRestart.dispatched).toEqual(first.dispatched);
      expect(await dumpTables(h.db)).toEqual(before);
      expect(h.model.chatRequests).toHaveLength(calls);
    } finally {
      await host.stop();
    }
  });

  it('a key belongs to one thread; another key is another send', { timeout: 60_000 }, async () => {
    const a = await h.createBot('alpha', { tools: [] });
    const b = await h.createBot('beta', { tools: [] });
    const toA = await h.call<SendResult>('bots.send_message', { bot_id: a.id, text: 'hello', idempotency_key: 'k' });
    const toB = await h.call<SendResult>('bots.send_message', { bot_id: b.id, text: 'hello', idempotency_key: 'k' });
    const other = await h.call<SendResult>('bots.send_message', { bot_id: a.id, text: 'hello', idempotency_key: 'k2' });
    expect(new Set([toA.message.id, toB.message.id, other.message.id]).size).toBe(3);
    // In a group, the repeat is answered from the key before its mentions are read again.
    const group = await h.call<Thread>('bots.create_group', { name: 'Team', bot_ids: [a.id, b.id] });
    const inGroup = await h.call<SendResult>('bots.send_message', { thread_id: group.id, text: '@alpha @beta status?', idempotency_key: 'k' });
    expect(inGroup.dispatched.map((d) => d.bot_id).sort()).toEqual([a.id, b.id].sort());
    const repeat = await h.call<SendResult>('bots.send_message', { thread_id: group.id, text: '@alpha @beta status?', idempotency_key: 'k' });
    expect(repeat.dispatched).toEqual(inGroup.dispatched);
    await settledAll();
    expect(await h.db.selectFrom('bots_messages').select('id').where('role', '=', 'user').execute()).toHaveLength(4);
    expect(await h.db.selectFrom('bots_tasks').select('id').execute()).toHaveLength(5);
  });

  it('a first send cut off midway is refused while it may be under way, then finished once', { timeout: 60_000 }, async () => {
    const bot = await h.createBot('ops', { tools: [] });
    const thread = await h.host.heartbeat.directThread(bot.id);
    // The first send claimed its key and died before writing its message.
    await h.db
      .insertInto('bots_send_keys')
      .values({ thread_id: thread.id, idempotency_key: 'cut', message_id: 'msg-cut', dispatched: null, created_at: h.clock.now() })
      .execute();
    const before = await dumpTables(h.db);
    const res = await h.raw('bots.send_message', { bot_id: bot.id, text: 'hi', idempotency_key: 'cut' });
    expect('error' in res && res.error).toMatchObject({ message: expect.stringContaining('still under way') });
    expect('error' in res && (res.error.data as { code?: string }).code).toBe('conflict');
    expect(await dumpTables(h.db)).toEqual(before);

    await h.clock.advance(SEND_KEY_UNDERWAY_MS);
    const done = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hi', idempotency_key: 'cut' });
    expect(done.message.id).toBe('msg-cut');
    expect(done.dispatched).toHaveLength(1);
    const again = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hi', idempotency_key: 'cut' });
    expect(again.dispatched).toEqual(done.dispatched);
    await settledAll();
    expect(await h.db.selectFrom('bots_messages').select('id').where('role', '=', 'user').execute()).toEqual([{ id: 'msg-cut' }]);
    expect(await h.db.selectFrom('bots_tasks').select('id').execute()).toHaveLength(1);
  });

  it('a bad key is invalid_params and changes nothing', async () => {
    const bot = await h.createBot('ops', { tools: [] });
    const before = await dumpTables(h.db);
    for (const [key, why] of [
      ['', 'idempotency_key: must not be empty'],
      ['x'.repeat(201), 'idempotency_key: at most 200 characters'],
      [42, 'idempotency_key:'],
    ] as const) {
      const res = await h.raw('bots.send_message', { bot_id: bot.id, text: 'hi', idempotency_key: key });
      if (!('error' in res)) throw new Error('accepted a bad key');
      // -32602: JSON-RPC's invalid params (the contract's `invalid_params`), naming the field.
      expect(res.error.code).toBe(-32602);
      expect((res.error.data as { issues: { field: string }[] }).issues[0]!.field).toBe('idempotency_key');
      expect(res.error.message).toContain(why);
    }
    expect(await dumpTables(h.db)).toEqual(before);
    // 200 characters is fine.
    const ok = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hi', idempotency_key: 'y'.repeat(200) });
    expect(ok.dispatched).toHaveLength(1);
  });
});
