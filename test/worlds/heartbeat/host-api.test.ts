/**
 * What this issue added to the bots host's heartbeat API (src/bots/host.ts), on both dialects,
 * and the two rules that depend on it end to end: an orphaned open task (rule 2, repaired before
 * its claim) and a reply left streaming with no run (rule 7, reconciled and acknowledged).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { triageWorkOf } from '../../../src/bots/index.js';
import { TaskStore } from '../../../src/bots/task-store.js';
import { ThreadStore } from '../../../src/bots/thread-store.js';
import { processOwner, uuid } from '../../../src/core/index.js';
import type { Routine, SendResult } from '../../../src/protocol/bots.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

describe.each(await testDialects())('the host’s heartbeat API on %s', (dialect) => {
  let h: HeartbeatHarness;
  let tasks: TaskStore;
  let threads: ThreadStore;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
    tasks = new TaskStore({ db: h.db, clock: h.clock, ids: uuid });
    threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
  });
  afterEach(async () => {
    await h.dispose();
  });

  /** An open task left behind: `owner` ran it, its reply streaming, last touched `ageMs` ago. */
  async function leftOpen(botId: string, owner: string | null, ageMs: number, status: 'working' | 'queued' = 'working') {
    const thread = await h.host.heartbeat.directThread(botId);
    await threads.addMessage({ threadId: thread.id, role: 'user', text: 'Compile the board report', status: 'done' });
    const t = await tasks.create({ botId, threadId: thread.id, title: 'Compile the board report', prompt: 'Compile the board report', source: 'user', owner });
    const m = await threads.addMessage({ threadId: thread.id, role: 'bot', botId, taskId: t.id, text: 'Gathering the figures', status: 'streaming' });
    await tasks.update(t.id, { status, message_id: m.id, started_at: h.clock.now() });
    await h.advance(ageMs);
    return { task: t, message: m, thread };
  }

  it('settled runs report their calls and tokens; bots, countBots and thread read what exists', async () => {
    const bot = await h.createBot('counted');
    const seen: number[] = [];
    h.host.heartbeat.onSettled((i) => void seen.push(i.usage.calls, i.usage.inputTokens > 0 ? 1 : 0));
    h.model.enqueue({ text: 'Hello.', usage: { prompt_tokens: 321, completion_tokens: 7 } });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hi' });
    await until(() => seen.length === 2);
    expect(seen).toEqual([1, 1]);
    expect((await h.host.heartbeat.bots([bot.id, 'ghost'])).map((b) => b.id)).toEqual([bot.id]);
    expect(await h.host.heartbeat.countBots()).toBe(1);
    expect((await h.host.heartbeat.thread(sent.thread_id))?.kind).toBe('direct');
    expect(await h.host.heartbeat.thread('ghost')).toBeUndefined();
  });

  it('leftovers: one read says which sweeps could find something, and whether a routine is due, exactly as their own reads', async () => {
    const seen = { claims: false, open: false, streaming: false, routines: false };
    const agrees = async () => {
      const now = h.clock.now();
      const probe = await h.host.heartbeat.leftovers();
      const routines = await h.call<Routine[]>('bots.routines_list', {});
      expect(probe).toEqual({
        claims: (await tasks.staleClaims()).length > 0,
        open: (await tasks.openSince(now - 120_000)).length > 0,
        streaming: (await threads.staleBotMessages(now - 60_000)).length > 0,
        routines: routines.some((r) => r.enabled && r.next_run_at !== null && r.next_run_at <= now),
      });
      for (const k of ['claims', 'open', 'streaming', 'routines'] as const) seen[k] ||= probe[k]!;
      return probe;
    };
    const none = { claims: false, open: false, streaming: false, routines: false };
    expect(await agrees()).toEqual(none);
    const bot = await h.createBot('leftover');
    const { task } = await leftOpen(bot.id, null, 0);
    // A claim taken by a worker that then died (its claim is never released).
    expect(await tasks.update(task.id, { claim_token: 'gone-worker-token', claim_at: h.clock.now() })).toBeDefined();
    // A routine, disabled: never due.
    await h.call('bots.routines_add', { bot_id: bot.id, schedule: '*/5 * * * *', prompt: 'Check the build', enabled: false });
    expect(await agrees()).toEqual(none);
    await h.advance(61_000); // the reply is left streaming
    await agrees();
    await h.advance(60_000); // the task is open, unleased and untouched for over 2 minutes
    await agrees();
    await h.advance(5 * 60_000); // the claim is stale
    await agrees();
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '0 0 1 1 *', prompt: 'Once a year', timezone: 'UTC' });
    h.clock.set(r.next_run_at!); // its slot came (set, not advanced: the routine timer must not fire it first)
    await agrees();
    expect(seen).toEqual({ claims: true, open: true, streaming: true, routines: true });
  });

  it('orphans: open work with no run, of this process or a dead one and old enough; never another live daemon’s', async () => {
    const bot = await h.createBot('orphaned');
    const mine = await leftOpen(bot.id, processOwner(), 0);
    const other = await h.createBot('elsewhere');
    const live = await leftOpen(other.id, 'some-other-host:4242', 0);
    const gone = await h.createBot('gone');
    const dead = await leftOpen(gone.id, 'a-dead-host:77', 0);
    expect(await h.host.heartbeat.orphans({ olderThanMs: 120_000 })).toEqual([]);
    await h.advance(121_000);
    // The live daemon renews its lease every host tick; the dead one (another host: no pid to ask) stopped.
    await tasks.renewOwnerLease('some-other-host:4242', [live.task.id]);
    expect((await h.host.heartbeat.orphans({ olderThanMs: 120_000 })).map((t) => t.id).sort()).toEqual([mine.task.id, dead.task.id].sort());
    expect((await h.host.heartbeat.orphans({ olderThanMs: 120_000, botIds: [other.id] })).map((t) => t.id)).toEqual([]);
    // Triage's one read of open work tells the same orphans from its rows; cut by its limit, it reads them on their own.
    const botIds = [bot.id, other.id, gone.id];
    for (const limit of [1000, 2]) {
      const work = await h.host.heartbeat.triageWork!({ botIds, orphanOlderThanMs: 120_000, limit });
      expect([...work.orphanIds].sort()).toEqual([mine.task.id, dead.task.id].sort());
      expect(work.tasks).toHaveLength(Math.min(limit, 3));
    }
    expect((await h.host.heartbeat.triageWork!({ botIds: [other.id], orphanOlderThanMs: 120_000 })).orphanIds.size).toBe(0);
    // A host without it (an older implementation of the interface) is asked openWork and orphans.
    const { triageWork: _, ...withoutIt } = h.host.heartbeat;
    const older = await triageWorkOf(withoutIt, { botIds, orphanOlderThanMs: 120_000 });
    expect([...older.orphanIds].sort()).toEqual([mine.task.id, dead.task.id].sort());
    expect(older.tasks).toHaveLength(3);
    expect(await h.host.heartbeat.repairOrphan(live.task.id)).toBeUndefined();
    const repaired = await h.host.heartbeat.repairOrphan(mine.task.id);
    expect(repaired).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'interrupted', attempts: 0 });
    expect((await threads.getMessage(mine.message.id))!).toMatchObject({ status: 'error', interrupted: true, text: 'Gathering the figures' });
    expect(await h.host.heartbeat.repairOrphan(mine.task.id)).toBeUndefined();
  });

  it('the owner lease: renewed (every host tick) on the tasks this process runs, no version or updated_at moved', async () => {
    const bot = await h.createBot('leased');
    h.model.handle(() => ({ hang: true }));
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'A long job' });
    const id = sent.dispatched[0]!.task_id;
    await until(() => h.model.chatRequests.length === 1);
    const before = await h.db.selectFrom('bots_tasks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(before.owner).toBe(processOwner());
    await h.advance(150_000);
    // What the host's timer runs on every tick (driven here, so the instant is known).
    expect(await h.host.runtime.renewLease()).toBe(1);
    const after = await h.db.selectFrom('bots_tasks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(Number(after.owner_seen_at)).toBe(h.clock.now());
    expect([after.version, after.updated_at]).toEqual([before.version, before.updated_at]);
    // Still running and leased: never an orphan, though untouched for longer than the orphan age.
    expect(await h.host.heartbeat.orphans({ olderThanMs: 120_000 })).toEqual([]);
    await h.call('bots.stop_bot', { bot_id: bot.id });
  });

  it('openWork lists newest first, so a limit drops the oldest failures, never recent work', async () => {
    const bot = await h.createBot('busyday');
    const thread = await h.host.heartbeat.directThread(bot.id);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const t = await tasks.create({ botId: bot.id, threadId: thread.id, title: `job ${i}`, prompt: `job ${i}`, source: 'user' });
      await tasks.update(t.id, { status: 'failed', error_kind: 'provider', error: 'down', finished_at: h.clock.now() });
      ids.push(t.id);
      await h.advance(60_000);
    }
    expect((await h.host.heartbeat.openWork({ botIds: [bot.id], limit: 2 })).map((t) => t.id)).toEqual([ids[3], ids[2]]);
    // Triage's read sorts here: newest first too, whether the limit cuts (read again in order) or not.
    for (const [limit, expected] of [
      [2, [ids[3], ids[2]]],
      [10, [...ids].reverse()],
    ] as const)
      expect((await h.host.heartbeat.triageWork!({ botIds: [bot.id], limit })).tasks.map((t) => t.id)).toEqual(expected);
  });

  it('the pulse digest counts the thread’s pending approvals (one query for the tick’s threads), not a constant', async () => {
    const bot = await h.createBot('waiting');
    const { interruptedTask } = await import('./harness.js');
    const t = await interruptedTask(h, bot.id);
    const thread = await h.host.heartbeat.directThread(bot.id);
    const approval = (id: string, state: 'pending' | 'approved') => ({
      approval_id: id,
      bot_id: bot.id,
      thread_id: thread.id,
      task_id: t.id,
      message_id: null,
      run_id: 'run-1',
      tool: 'write_file',
      server: 'fs',
      arguments: '{}',
      reason: 'writes a file',
      state,
      created_at: h.clock.now(),
      expires_at: null,
      answered_at: null,
      expired_at: null,
    });
    await h.db
      .insertInto('bots_approvals')
      .values([approval('ap-1', 'pending'), approval('ap-2', 'pending'), approval('ap-3', 'approved')])
      .execute();
    expect(await h.host.heartbeat.pendingApprovalsOf([thread.id, 'ghost'])).toEqual(new Map([[thread.id, 2]]));
    await h.due(bot.id);
    h.verdict({ verdict: 'idle', taskId: null });
    await h.tick();
    const prompt = h.pulse.chatRequests[0]!.body!.messages!.at(-1)!.content as string;
    const fenced = prompt.split('\n').find((l) => l.startsWith('"{'))!;
    expect((JSON.parse(JSON.parse(fenced) as string) as { pendingApprovals: number }).pendingApprovals).toBe(2);
  });

  it('batched reads: each thread’s newest messages, the person’s activity, expired approvals of many bots', async () => {
    const a = await h.createBot('aa');
    const b = await h.createBot('bb');
    const ta = await h.host.heartbeat.directThread(a.id);
    const tb = await h.host.heartbeat.directThread(b.id);
    for (let i = 1; i <= 5; i++) await threads.addMessage({ threadId: ta.id, role: 'user', text: `a${i}`, status: 'done' });
    await threads.addMessage({ threadId: tb.id, role: 'user', text: 'b1', status: 'done' });
    const recent = await h.host.heartbeat.recentMessages([ta.id, tb.id], 3);
    expect(recent.get(ta.id)!.map((m) => m.text)).toEqual(['a3', 'a4', 'a5']);
    expect(recent.get(tb.id)!.map((m) => m.text)).toEqual(['b1']);
    await h.host.heartbeat.markUserActive(tb.id);
    const act = await h.host.heartbeat.userActivities([ta.id, tb.id]);
    expect(act.get(tb.id)?.userActiveAt).toBe(h.clock.now());
    expect(act.has(ta.id)).toBe(false);
    expect(await h.host.heartbeat.expiredApprovalsOf([a.id, b.id], 0)).toEqual([]);
  });

  it('triage reads of a thread only what the rules can look at: from the last turn and the bot’s last settled reply on, live and cut-off replies; the digest’s whole window stays with recentMessages', async () => {
    const bot = await h.createBot('tail');
    const t = await h.host.heartbeat.directThread(bot.id);
    const add = (role: 'user' | 'bot', text: string, status: 'done' | 'error' | 'streaming', heartbeat = false) =>
      threads.addMessage({ threadId: t.id, role, botId: role === 'bot' ? bot.id : undefined, text, status, heartbeat });
    await add('user', 'old question', 'done');
    await add('bot', 'old answer', 'done');
    const cut = await add('bot', 'cut off', 'error');
    await threads.updateMessage(cut.id, { interrupted: true });
    await add('user', 'newer', 'done');
    await add('bot', 'writing', 'streaming');
    await add('bot', 'Any news?', 'done', true); // a possible check-in question: the rules may skip it, so what is behind it is read too
    const tail = await h.host.heartbeat.triageMessages([{ threadId: t.id, botId: bot.id }], 20);
    expect(tail.get(t.id)!.map((m) => m.text)).toEqual(['cut off', 'newer', 'writing', 'Any news?']);
    // Asked about a bot that is not the thread's own: its whole window (a superset is as exact).
    const other = await h.host.heartbeat.triageMessages([{ threadId: t.id, botId: 'someone-else' }], 20);
    expect(other.get(t.id)!.map((m) => m.text)).toEqual(['old question', 'old answer', 'cut off', 'newer', 'writing', 'Any news?']);
    expect((await h.host.heartbeat.recentMessages([t.id], 20)).get(t.id)).toHaveLength(6);
  });

  it('triage reads many threads in one statement, each thread’s messages oldest first, a window of the newest only', async () => {
    const bots = [await h.createBot('one'), await h.createBot('two'), await h.createBot('three')];
    const ts = await Promise.all(bots.map((b) => h.host.heartbeat.directThread(b.id)));
    // Written in turn, so no thread's rows are together in the table.
    for (let i = 1; i <= 4; i++)
      for (const [k, t] of ts.entries()) {
        const m = await threads.addMessage({ threadId: t.id, role: 'bot', botId: bots[k]!.id, text: `${k}:${i}`, status: 'error' });
        await threads.updateMessage(m.id, { interrupted: true });
      }
    const tail = await h.host.heartbeat.triageMessages(ts.map((t, k) => ({ threadId: t.id, botId: bots[k]!.id })).reverse(), 3);
    for (const [k, t] of ts.entries()) expect(tail.get(t.id)!.map((m) => m.text)).toEqual([`${k}:2`, `${k}:3`, `${k}:4`]);
  });

  it('rule 2 end to end: an orphaned run is found by the sweep, repaired, claimed and resumed once', async () => {
    const bot = await h.createBot('lost');
    const { task } = await leftOpen(bot.id, processOwner(), 3 * 60_000);
    h.verdict({ taskId: task.id, reason: 'its run was lost' });
    h.model.enqueue({ text: 'Report compiled.' });
    await h.tick();
    await until(async () => (await h.task(task.id)).status === 'done' && h.host.runtime.isIdle(bot.id));
    expect(h.pulse.chatRequests[0]!.body!.messages!.at(-1)!.content as string).toContain('orphan_working');
    expect(await h.task(task.id)).toMatchObject({ attempts: 1, status: 'done' });
    expect((await h.logOf(bot.id)).find((e) => e.outcome === 'resumed')).toMatchObject({ rule: 'orphan_working' });
  });

  it('rule 7 end to end: a reply left streaming with no run is reconciled and the person asked (there is no task to continue)', async () => {
    const bot = await h.createBot('stale');
    const { task, message } = await leftOpen(bot.id, processOwner(), 0);
    await tasks.update(task.id, { status: 'done', finished_at: h.clock.now() }); // its task moved on, the reply did not
    expect(await h.host.heartbeat.staleMessages({ olderThanMs: 60_000 })).toEqual([]);
    await h.advance(61_000);
    expect((await h.host.heartbeat.staleMessages({ olderThanMs: 60_000 })).map((m) => m.id)).toEqual([message.id]);
    h.verdict({ taskId: `message:${message.id}`, reason: 'a reply was left hanging' });
    await h.tick();
    expect(h.pulse.chatRequests[0]!.body!.messages!.at(-1)!.content as string).toContain('stale_streaming');
    expect(await threads.getMessage(message.id)).toMatchObject({ status: 'error', interrupted: true });
    const [c] = await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute();
    expect(c).toMatchObject({ source: 'interrupted_message', message_id: message.id, state: 'pending' });
    expect(h.model.chatRequests).toHaveLength(0);
  });
});
