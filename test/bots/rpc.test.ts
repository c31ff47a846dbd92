/**
 * The `bots.*` contract through a real JSON-RPC dispatcher (issue 11 §6): bad input gets a clear
 * JSON-RPC error and changes nothing (every bots_* table compared before and after); the methods
 * the page uses return what it shows.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Bot, BotWithStatus, Routine, SendResult, Snapshot, Task, Thread, ThreadSummary, ThreadView } from '../../src/protocol/bots.js';
import { MAX_MESSAGE_CHARS, botsContract } from '../../src/protocol/bots.js';
import type { HumanAction } from '../../src/bots/index.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, dumpTables, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

interface ErrorShape {
  code: number;
  message: string;
  data?: { code?: string; issues?: { field: string; message: string }[] };
}

describe.each(await testDialects())('bots RPC on %s', (dialect) => {
  let h: BotsHarness;
  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  /** Call, expect a JSON-RPC error, and prove no bots_* row changed. */
  async function refused(method: string, params: unknown): Promise<ErrorShape> {
    const before = await dumpTables(h.db);
    const eventsBefore = h.events.length;
    const res = await h.raw(method, params);
    if (!('error' in res)) throw new Error(`${method} should have failed but returned ${JSON.stringify(res.result).slice(0, 200)}`);
    expect(await dumpTables(h.db)).toEqual(before);
    expect(h.events.length).toBe(eventsBefore);
    return res.error as ErrorShape;
  }

  it('every contract method is served, and each names its params in its description', () => {
    expect(h.rpc.list().map((m) => m.name)).toEqual(Object.keys(botsContract.methods).sort());
  });

  it('bad input gets a clear JSON-RPC error and changes nothing', async () => {
    const bot = await h.createBot('growth');
    const group = await h.call<Thread>('bots.create_group', { name: 'Team', bot_ids: [bot.id, (await h.createBot('ops')).id] });
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: `${h.dir}/twice-${dialect}.txt`, content: 'x' } }] }, { text: 'Written.' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'write it' });
    await until(async () => (await h.db.selectFrom('bots_approvals').selectAll().execute()).length === 1);
    const approvalId = (await h.db.selectFrom('bots_approvals').select('approval_id').executeTakeFirstOrThrow()).approval_id;
    await h.call('bots.answer_approval', { id: approvalId, approve: true });
    await until(async () => (await h.host.heartbeat.getTask(sent.dispatched[0]!.task_id))?.status === 'done' && h.host.runtime.isIdle(bot.id));

    // Unknown bot or thread.
    let e = await refused('bots.send_message', { bot_id: 'nope', text: 'hi' });
    expect(e).toMatchObject({ code: -32000, message: 'No bot with id "nope".', data: { code: 'not_found' } });
    e = await refused('bots.send_message', { thread_id: 'nope', text: 'hi' });
    expect(e).toMatchObject({ code: -32000, message: 'No thread with id "nope".', data: { code: 'not_found' } });
    // Empty, blank, 1 MB.
    e = await refused('bots.send_message', { bot_id: bot.id, text: '' });
    expect(e).toMatchObject({ code: -32602, message: 'Invalid params for bots.send_message: text: must not be empty' });
    e = await refused('bots.send_message', { bot_id: bot.id, text: '   \n ' });
    expect(e.message).toContain('text: must not be empty');
    e = await refused('bots.send_message', { bot_id: bot.id, text: 'x'.repeat(1024 * 1024) });
    expect(e.code).toBe(-32602);
    expect(e.message).toContain(`text: at most ${MAX_MESSAGE_CHARS} characters`);
    // Both or neither target.
    e = await refused('bots.send_message', { bot_id: bot.id, thread_id: group.id, text: 'hi' });
    expect(e.message).toContain('give exactly one of bot_id');
    e = await refused('bots.send_message', { text: 'hi' });
    expect(e.message).toContain('give exactly one of bot_id');
    // A group message must say who answers, and only members.
    e = await refused('bots.send_message', { thread_id: group.id, text: 'anyone?' });
    expect(e.message).toContain('mention at least one bot of this group (@growth, @ops)');
    e = await refused('bots.send_message', { thread_id: group.id, text: '@growth and @stranger please' });
    expect(e.message).toContain('@stranger is not in this group');
    // An approval answered twice, or unknown.
    e = await refused('bots.answer_approval', { id: approvalId, approve: false });
    expect(e).toMatchObject({ code: -32000, data: { code: 'conflict' } });
    expect(e.message).toContain('it is already approved');
    e = await refused('bots.answer_approval', { id: 'nope', approve: true });
    expect(e.data?.code).toBe('not_found');
    // Unknown fields, wrong types.
    e = await refused('bots.send_message', { bot_id: bot.id, text: 'hi', urgent: true });
    expect(e.code).toBe(-32602);
    expect(e.message).toContain('urgent');
    e = await refused('bots.thread', { thread_id: group.id, limit: 10_000 });
    expect(e.message).toContain('limit: at most 500');
  });

  it('creating and updating bots: names are unique @handles, models and tools are checked', async () => {
    const bot = await h.call<Bot>('bots.create', { name: '  Growth ', label: 'Growth lead', model: 'local:llama3.2', tools: ['fs', 'fs'] });
    expect(bot).toMatchObject({ name: 'growth', label: 'Growth lead', model_role: 'local', model: 'llama3.2', tools: ['fs'] });
    expect((await h.call<Bot>('bots.create', { name: 'ops', model: 'qwen2.5:14b' })).model_role).toBe('agent');

    let e = await refused('bots.create', { name: 'growth' });
    expect(e).toMatchObject({ data: { code: 'conflict' } });
    expect(e.message).toContain('a bot named "growth" already exists');
    e = await refused('bots.create', { name: '9lives' });
    expect(e.message).toContain('name: must be 1-32 lower-case letters');
    e = await refused('bots.create', { name: 'mailer', tools: ['mail'] });
    expect(e.message).toBe('tools: "mail" is not a configured MCP server');
    e = await refused('bots.create', { name: 'mailer', model: 'agent:' });
    expect(e.message).toContain('names no model');
    e = await refused('bots.update', { bot_id: bot.id });
    expect(e.message).toContain('give at least one of');
    e = await refused('bots.update', { bot_id: bot.id, name: 'ops' });
    expect(e.data?.code).toBe('conflict');

    const renamed = await h.call<Bot>('bots.update', { bot_id: bot.id, name: 'growth-lead', persona: 'Be brief.' });
    expect(renamed).toMatchObject({ name: 'growth-lead', persona: 'Be brief.', label: 'Growth lead' });
    const threads = await h.call<ThreadSummary[]>('bots.threads_list', { bot_id: bot.id });
    expect(threads.map((t) => [t.kind, t.name])).toEqual([['direct', 'growth-lead']]);
    expect(h.events.filter((x) => x.type === 'bots.bot_changed').map((x) => x.data.bot?.name)).toEqual(['growth', 'ops', 'growth-lead']);
  });

  it('the snapshot: bot status, unread and needs-attention counts; mark_read clears unread', async () => {
    const bot = await h.createBot('growth');
    const actions: HumanAction[] = [];
    h.host.heartbeat.onHumanAction((a) => void actions.push(a));
    h.model.enqueue({ text: 'Here is my plan.\nRECOMMENDED ACTION: email the three leads' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'plan the week' });
    await until(async () => (await h.host.heartbeat.getTask(sent.dispatched[0]!.task_id))?.status === 'review' && h.host.runtime.isIdle(bot.id));
    await h.clock.advance(1000);

    let snap = await h.call<Snapshot>('bots.snapshot');
    expect(snap.bots).toEqual([expect.objectContaining({ id: bot.id, status: 'idle', queued: 0, needs_attention: 1 } satisfies Partial<BotWithStatus>)]);
    // The bot's reply came after the person's read mark (sending reads the thread).
    expect(snap.threads).toEqual([expect.objectContaining({ id: sent.thread_id, unread: 0, needs_attention: 1 })]);
    expect(snap.threads[0]!.last_message?.text).toBe('Here is my plan.');
    const task = (await h.host.heartbeat.getTask(sent.dispatched[0]!.task_id))!;
    expect(task.review_note).toBe('email the three leads');

    // Attention from another module (the heartbeat's check-ins) adds up.
    h.host.heartbeat.registerAttention(async () => [{ thread_id: sent.thread_id, bot_id: bot.id, count: 2 }]);
    snap = await h.call<Snapshot>('bots.snapshot');
    expect(snap.bots[0]!.needs_attention).toBe(3);
    expect(snap.threads[0]!.needs_attention).toBe(3);

    const dismissed = await h.call<Task>('bots.dismiss_task', { task_id: task.id });
    expect(dismissed.status).toBe('dismissed');
    const e = await refused('bots.dismiss_task', { task_id: task.id });
    expect(e.message).toContain('already dismissed');
    const c = await refused('bots.cancel_intent', { task_id: task.id });
    expect(c.message).toContain('already dismissed');
    snap = await h.call<Snapshot>('bots.snapshot');
    expect(snap.bots[0]!.needs_attention).toBe(2);
    expect(actions.map((a) => [a.kind, a.threadId, a.botIds, a.taskId])).toEqual([
      ['message', sent.thread_id, [bot.id], null],
      ['dismiss', sent.thread_id, [bot.id], task.id],
    ]);
  });

  it('unread counts bot messages after the read mark; mark_read clears them', async () => {
    const bot = await h.createBot('growth');
    const thread = await h.host.heartbeat.directThread(bot.id);
    h.model.enqueue({ text: 'routine report' });
    await h.clock.advance(10);
    const d = await h.host.runtime.dispatchToBot(bot.id, thread.id, 'report', { source: 'routine', note: 'Routine: report' });
    await until(async () => (await h.host.heartbeat.getTask(d.taskId))?.status === 'done' && h.host.runtime.isIdle(bot.id));
    let [summary] = await h.call<ThreadSummary[]>('bots.threads_list', { bot_id: bot.id });
    expect(summary!.unread).toBe(2); // the routine's note and the reply
    await h.clock.advance(10);
    expect(await h.call<{ read_at: number }>('bots.mark_read', { thread_id: thread.id })).toMatchObject({ read_at: h.clock.now() });
    [summary] = await h.call<ThreadSummary[]>('bots.threads_list', { bot_id: bot.id });
    expect(summary!.unread).toBe(0);
    expect((await h.host.heartbeat.userActivity(thread.id)).userActiveAt).toBe(h.clock.now());
    expect(h.events.filter((e) => e.type === 'bots.user_activity').map((e) => e.data)).toEqual([{ thread_id: thread.id, at: h.clock.now(), read: true }]);
  });

  it('thread pages: newest first page, `before` pages back, tasks and approvals come along', async () => {
    const bot = await h.createBot('growth');
    h.model.handle((req) => ({ text: `re: ${String(req.body!.messages!.at(-1)!.content).slice(-6)}` }));
    let last: SendResult | undefined;
    for (let i = 1; i <= 5; i++) {
      last = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: `msg ${i}` });
      await until(async () => (await h.host.heartbeat.getTask(last!.dispatched[0]!.task_id))?.status === 'done' && h.host.runtime.isIdle(bot.id));
    }
    const page = await h.call<ThreadView>('bots.thread', { thread_id: last!.thread_id, limit: 4 });
    expect(page.messages.map((m) => m.seq)).toEqual([7, 8, 9, 10]);
    expect(page.has_more).toBe(true);
    expect(page.tasks).toHaveLength(2);
    const back = await h.call<ThreadView>('bots.thread', { thread_id: last!.thread_id, before: 7, limit: 50 });
    expect(back.messages.map((m) => m.text)).toEqual(['msg 1', 're: msg 1', 'msg 2', 're: msg 2', 'msg 3', 're: msg 3']);
    expect(back.has_more).toBe(false);
    expect(back.bots.map((b) => b.id)).toEqual([bot.id]);
  });

  it('routines: add, update, list, remove; a bad schedule or zone is refused', async () => {
    const bot = await h.createBot('digest');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '0 9 * * 1-5', prompt: 'Send the digest', timezone: 'Europe/Paris' });
    expect(r).toMatchObject({ schedule: '0 9 * * 1-5', timezone: 'Europe/Paris', enabled: true, last_outcome: null });
    expect(r.next_run_at).toBe(Date.UTC(2026, 0, 2, 8)); // Jan 1st 2026 is a Thursday; 9:00 in Paris is 8:00 UTC
    let e = await refused('bots.routines_add', { bot_id: bot.id, schedule: '0 25 * * *', prompt: 'x' });
    expect(e.message).toContain('schedule: "0 25 * * *" is not a valid cron expression');
    e = await refused('bots.routines_add', { bot_id: bot.id, schedule: '0 9 * * *', prompt: 'x', timezone: 'Mars/Olympus' });
    expect(e.message).toContain('timezone: "Mars/Olympus" is not an IANA time zone');
    e = await refused('bots.routines_add', { bot_id: 'nope', schedule: '0 9 * * *', prompt: 'x' });
    expect(e.data?.code).toBe('not_found');
    const off = await h.call<Routine>('bots.routines_update', { id: r.id, enabled: false });
    expect(off).toMatchObject({ enabled: false, next_run_at: null });
    const on = await h.call<Routine>('bots.routines_update', { id: r.id, enabled: true, schedule: 'cron:30 7 * * *' });
    expect(on).toMatchObject({ enabled: true, schedule: '30 7 * * *', next_run_at: Date.UTC(2026, 0, 2, 6, 30) });
    expect((await h.call<Routine[]>('bots.routines_list', { bot_id: bot.id })).map((x) => x.id)).toEqual([r.id]);
    await h.call('bots.routines_remove', { id: r.id });
    expect(await h.call<Routine[]>('bots.routines_list', {})).toEqual([]);
    e = await refused('bots.routines_remove', { id: r.id });
    expect(e.data?.code).toBe('not_found');
  });

  it('deleting a bot stops it and removes its direct thread, tasks and routines; its group keeps its messages', async () => {
    const a = await h.createBot('alpha');
    const b = await h.createBot('beta');
    const group = await h.call<Thread>('bots.create_group', { name: 'Pair', bot_ids: [a.id, b.id] });
    h.model.handle(() => ({ text: 'hello' }));
    const sent = await h.call<SendResult>('bots.send_message', { thread_id: group.id, text: '@alpha hi' });
    await until(async () => (await h.host.heartbeat.getTask(sent.dispatched[0]!.task_id))?.status === 'done' && h.host.runtime.isIdle(a.id));
    await h.call('bots.routines_add', { bot_id: a.id, schedule: '0 9 * * *', prompt: 'x' });
    expect(await h.call('bots.delete', { bot_id: a.id })).toEqual({ id: a.id, deleted: true });
    expect((await h.call<BotWithStatus[]>('bots.list')).map((x) => x.name)).toEqual(['beta']);
    expect(await h.db.selectFrom('bots_routines').selectAll().execute()).toEqual([]);
    expect(await h.db.selectFrom('bots_tasks').selectAll().execute()).toEqual([]);
    const view = await h.call<ThreadView>('bots.thread', { thread_id: group.id });
    expect(view.thread.bot_ids).toEqual([b.id]);
    expect(view.messages.map((m) => m.text)).toEqual(['@alpha hi', 'hello']);
    const e = await refused('bots.delete', { bot_id: a.id });
    expect(e.data?.code).toBe('not_found');
  });
});
