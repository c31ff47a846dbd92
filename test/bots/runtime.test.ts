/**
 * The bots host end to end (issue 11 "Tests"), on both dialects: real store, the scripted model
 * server on loopback, the real filesystem MCP server.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message, SendResult, StopResult, Task, ThreadView } from '../../src/protocol/bots.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, dumpTables, gate, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

async function task(h: BotsHarness, id: string): Promise<Task> {
  return (await h.host.heartbeat.getTask(id))!;
}

async function message(h: BotsHarness, id: string): Promise<Message> {
  const row = await h.db.selectFrom('bots_messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return { ...row, text: row.text, status: row.status } as unknown as Message;
}

/** The task reached `status` and its bot is idle again (settle, control lines and listeners finished). */
const done = (h: BotsHarness, taskId: string, status: Task['status'] = 'done') =>
  until(async () => {
    const t = await task(h, taskId);
    return t.status === status && h.host.runtime.isIdle(t.bot_id);
  });

describe.each(await testDialects())('bots host on %s', (dialect) => {
  let h: BotsHarness;
  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('a message runs and settles done: persona, history and tools reach the model, text streams into the bot message', async () => {
    const bot = await h.createBot('growth', { label: 'Growth lead', description: 'Owns outbound experiments.', persona: 'Answer in one short paragraph.' });
    h.model.enqueue({ text: 'Three experiments are running; the best converts at 4%.\nMEMORY: the user tracks conversion weekly' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'How are the experiments going?' });
    expect(sent.dispatched).toHaveLength(1);
    const { task_id, message_id } = sent.dispatched[0]!;
    await done(h, task_id);

    const t = await task(h, task_id);
    expect(t).toMatchObject({ status: 'done', source: 'user', error_kind: null, interrupted: false, message_id, title: 'How are the experiments going?' });
    expect(t.checkpoint?.summary).toBe('Three experiments are running; the best converts at 4%.');
    const m = await message(h, message_id);
    expect(m).toMatchObject({ status: 'done', text: 'Three experiments are running; the best converts at 4%.', role: 'bot', bot_id: bot.id });

    // Deltas: the streamed text is the message's text, with the control line never shown.
    const deltas = h.events.filter((e) => e.type === 'bots.message_delta' && e.data.message_id === message_id).map((e) => (e.data as { delta: string }).delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).not.toContain('MEMORY');
    expect(deltas.join('').trim()).toBe(m.text);
    const notes = await h.db.selectFrom('bots_notes').selectAll().execute();
    expect(notes.map((n) => [n.kind, n.text])).toEqual([['memory', 'the user tracks conversion weekly']]);

    const body = h.model.chatRequests[0]!.body!;
    const system = body.messages!.find((x) => x.role === 'system')!.content as string;
    expect(system).toContain('Growth lead (@growth)');
    expect(system).toContain('Owns outbound experiments.');
    expect(system).toContain('Answer in one short paragraph.');
    expect(body.messages!.filter((x) => x.role !== 'system').map((x) => [x.role, x.content])).toEqual([['user', 'How are the experiments going?']]);
    expect((body.tools ?? []).map((x) => x.function.name)).toContain('fs__read_text_file');

    // Status events went idle → queued/working → idle, and the ledger has the call under world "bots".
    const statuses = h.events.filter((e) => e.type === 'bots.status_changed' && e.data.bot_id === bot.id).map((e) => (e.data as { status: string }).status);
    expect(statuses).toContain('working');
    expect(statuses.at(-1)).toBe('idle');
    const ledger = await h.store.db.selectFrom('model_calls').select(['world', 'purpose']).execute();
    expect(ledger).toEqual([{ world: 'bots', purpose: 'bot_turn' }]);
    expect(h.host.runtime.isIdle(bot.id)).toBe(true);
  });

  it('two messages to a busy bot queue and run in order, each seeing the reply before it', async () => {
    const bot = await h.createBot('ops');
    const first = gate();
    let n = 0;
    h.model.handle(async () => {
      n++;
      if (n === 1) {
        await first.wait;
        return { text: 'first answer' };
      }
      return { text: 'second answer' };
    });
    const a = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'first question' });
    await until(() => h.model.chatRequests.length === 1);
    expect((await task(h, a.dispatched[0]!.task_id)).status).toBe('working');
    const b = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'second question' });
    expect((await task(h, b.dispatched[0]!.task_id)).status).toBe('queued');
    expect(h.host.runtime.statusOf(bot.id)).toMatchObject({ status: 'working', queued: 1, taskId: a.dispatched[0]!.task_id });
    expect(h.model.chatRequests).toHaveLength(1);

    first.open();
    await done(h, b.dispatched[0]!.task_id);
    expect((await task(h, a.dispatched[0]!.task_id)).status).toBe('done');
    const second = h.model.chatRequests[1]!.body!.messages!.filter((x) => x.role !== 'system');
    expect(second.map((x) => [x.role, x.content])).toEqual([
      ['user', 'first question'],
      ['assistant', 'first answer'],
      ['user', 'second question'],
    ]);
    const view = await h.call<ThreadView>('bots.thread', { thread_id: a.thread_id });
    expect(view.messages.map((x) => `${x.role}:${x.text}`)).toEqual(['user:first question', 'bot:first answer', 'user:second question', 'bot:second answer']);
    expect(view.tasks.map((x) => x.status)).toEqual(['done', 'done']);
  });

  it('a stop on an idle bot answers nothing_to_stop, and changes and records nothing', async () => {
    const bot = await h.createBot('resting');
    h.model.enqueue({ text: 'Done already.' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'quick one' });
    await done(h, sent.dispatched[0]!.task_id);
    const before = await dumpTables(h.db);
    const events = h.events.length;
    const r = await h.call<StopResult>('bots.stop_bot', { bot_id: bot.id });
    expect(r).toEqual({
      bot_id: bot.id,
      outcome: 'nothing_to_stop',
      cancelled_task_ids: [],
      message: '@resting is idle with no unfinished work: nothing to stop.',
    });
    expect(await dumpTables(h.db)).toEqual(before);
    expect(h.events.slice(events)).toEqual([]);
  });

  it('a stop on an idle bot with unfinished work stops that work (it will not be resumed) and says so', async () => {
    const bot = await h.createBot('stalled');
    h.model.enqueue({ status: 500, message: 'upstream down' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'try this' });
    await done(h, sent.dispatched[0]!.task_id, 'failed');
    const seen: string[] = [];
    h.host.service.onHumanAction((a) => void seen.push(a.kind));
    const r = await h.call<StopResult>('bots.stop_bot', { bot_id: bot.id });
    expect(r).toEqual({
      bot_id: bot.id,
      outcome: 'stopped',
      cancelled_task_ids: [],
      message: 'Stopped @stalled: nothing was running; 1 unfinished task will not be resumed.',
    });
    expect(seen).toEqual(['stop']);
  });

  it('a stop during a run cancels it and its queue for good; a claim on the task is refused afterwards', async () => {
    const bot = await h.createBot('writer');
    h.model.handle(() => ({ hang: true }));
    const a = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'write a long report' });
    await until(() => h.model.chatRequests.length === 1);
    const b = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'and then another' });

    const stopped = await h.call<StopResult>('bots.stop_bot', { bot_id: bot.id });
    expect(stopped).toMatchObject({ outcome: 'stopped', message: `Stopped @writer: 2 tasks cancelled.` });
    expect(stopped.cancelled_task_ids.sort()).toEqual([a.dispatched[0]!.task_id, b.dispatched[0]!.task_id].sort());
    for (const d of [a, b]) {
      const t = await task(h, d.dispatched[0]!.task_id);
      expect(t).toMatchObject({ status: 'cancelled', error_kind: 'cancelled', interrupted: false });
      expect((await message(h, d.dispatched[0]!.message_id)).status).toBe('stopped');
    }
    expect(h.host.runtime.isIdle(bot.id)).toBe(true);
    expect(h.model.chatRequests).toHaveLength(1);

    // Never resumed: the heartbeat cannot claim it, and a dispatch with a made-up claim is refused.
    const t = await task(h, a.dispatched[0]!.task_id);
    expect(await h.host.heartbeat.claimTask(t.id, { version: t.version, token: 'tok', by: 'heartbeat' })).toBeUndefined();
    await expect(h.host.heartbeat.dispatchToBot(bot.id, a.thread_id, 'resume', { heartbeat: true, taskId: t.id, claimToken: 'tok' })).rejects.toThrow(
      /not claimed/,
    );
    expect((await h.host.heartbeat.openWork({ botIds: [bot.id] })).map((x) => x.id)).toEqual([]);
  });

  it('an unattended run (a routine) that needs an approval: nobody answers for 10 minutes → failed / approval_expired, the tool never ran', async () => {
    const bot = await h.createBot('digest');
    const target = path.join(h.dir, `digest-${dialect}.txt`);
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'digest' } }] }, { text: 'never asked' });
    const thread = await h.host.heartbeat.directThread(bot.id);
    const d = await h.host.runtime.dispatchToBot(bot.id, thread.id, 'Write the digest file.', { source: 'routine' });
    await until(async () => (await h.db.selectFrom('bots_approvals').selectAll().execute()).length === 1);
    const [link] = await h.db.selectFrom('bots_approvals').selectAll().execute();
    expect(link).toMatchObject({ bot_id: bot.id, thread_id: thread.id, task_id: d.taskId, state: 'pending', tool: 'write_file', server: 'fs' });
    expect(Number(link!.expires_at)).toBe(h.clock.now() + 10 * 60_000);

    await h.clock.advance(10 * 60_000);
    await done(h, d.taskId, 'failed');
    const t = await task(h, d.taskId);
    expect(t).toMatchObject({ status: 'failed', error_kind: 'approval_expired', interrupted: false });
    expect(t.error).toContain('write_file');
    expect(existsSync(target)).toBe(false);
    expect(h.model.chatRequests).toHaveLength(1);
    const after = await h.db.selectFrom('bots_approvals').selectAll().executeTakeFirstOrThrow();
    expect(after.state).toBe('expired');
    expect(Number(after.expired_at)).toBe(h.clock.now());
    // Seed 2 rule 5 finds it by an indexed query; answering it now is refused.
    expect((await h.host.heartbeat.expiredApprovals(bot.id, 0)).map((a) => a.id)).toEqual([link!.approval_id]);
    const res = await h.raw('bots.answer_approval', { id: link!.approval_id, approve: true });
    expect('error' in res && res.error.message).toMatch(/already expired/);
  });

  it('an unattended approval with no page or client connected still waits its 10 minutes: a page that opens meanwhile can approve it', async () => {
    h.present.value = false;
    const bot = await h.createBot('nightly');
    const target = path.join(h.dir, `nightly-${dialect}.txt`);
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'x' } }] }, { text: 'Wrote the nightly file.' });
    const thread = await h.host.heartbeat.directThread(bot.id);
    const d = await h.host.runtime.dispatchToBot(bot.id, thread.id, 'Write the nightly file.', { source: 'routine' });
    await until(async () => (await h.db.selectFrom('bots_approvals').selectAll().execute()).length === 1);
    const link = await h.db.selectFrom('bots_approvals').selectAll().executeTakeFirstOrThrow();
    expect(Number(link.expires_at)).toBe(h.clock.now() + 10 * 60_000);
    await h.clock.advance(9 * 60_000);
    expect((await h.db.selectFrom('bots_approvals').selectAll().executeTakeFirstOrThrow()).state).toBe('pending');
    expect((await task(h, d.taskId)).status).toBe('working');
    // A person opens the page and approves: the tool runs, the task is done.
    h.present.value = true;
    await h.call('bots.answer_approval', { id: link.approval_id, approve: true });
    await done(h, d.taskId);
    expect(existsSync(target)).toBe(true);
    expect((await message(h, d.messageId)).status).toBe('done');
  });

  it('an attended approval (a person’s message) waits, is answered once from the thread, and the tool runs', async () => {
    const bot = await h.createBot('clerk');
    const target = path.join(h.dir, `clerk-${dialect}.txt`);
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'filed' } }] }, { text: 'Filed it.' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'File the note.' });
    await until(async () => (await h.db.selectFrom('bots_approvals').selectAll().execute()).length === 1);
    const view = await h.call<ThreadView>('bots.thread', { thread_id: sent.thread_id });
    expect(view.approvals).toHaveLength(1);
    expect(view.approvals[0]).toMatchObject({ state: 'pending', expires_at: null, tool: 'write_file', arguments: { path: target, content: 'filed' } });
    await h.clock.advance(19 * 60_000); // attended: no expiry (only the 20-minute run cap bounds the wait)
    expect((await h.db.selectFrom('bots_approvals').selectAll().executeTakeFirstOrThrow()).state).toBe('pending');
    const answered = await h.call<{ state: string }>('bots.answer_approval', { id: view.approvals[0]!.id, approve: true });
    expect(answered.state).toBe('approved');
    await done(h, sent.dispatched[0]!.task_id);
    expect(readFileSync(target, 'utf8')).toBe('filed');
  });
});
