/**
 * The heartbeat world's probe (`World.probe`, issue 22): a tick it calls quiet ends before the
 * tick lease with nothing written, so it must never call a tick quiet that has work — a bot due (a
 * candidate, an expired check-in), a routine due, a sweep's leftovers, the day's budgets to prune.
 * Each case: the probe says not quiet (the full tick runs), on both dialects, on a fake clock.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Routine } from '../../../src/protocol/bots.js';
import { ThreadStore } from '../../../src/bots/thread-store.js';
import { uuid } from '../../../src/core/index.js';
import type { TickContext } from '../../../src/engine/index.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, interruptedTask, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const DAY_MS = 24 * 3600_000;

describe.each(await testDialects())('heartbeat world probe on %s', (dialect) => {
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
    // The first tick prunes the day's budgets (a full tick); from then on nothing is left to do.
    expect(await probe()).toBeNull();
    expect(await h.tick()).toMatchObject({ kind: 'quiet', message: 'no bot due' });
  });
  afterEach(async () => {
    await h.dispose();
  });

  const probe = () => h.hb.world.probe!({ startedAt: h.clock.now(), signal: new AbortController().signal } as unknown as TickContext);
  const generation = async () =>
    Number((await h.store.db.selectFrom('tick_leases').select('generation').where('world', '=', 'heartbeat').executeTakeFirst())?.generation ?? 0);
  const nextMidnight = (at: number) => Math.floor(at / DAY_MS) * DAY_MS + DAY_MS; // the harness's zone is UTC

  it('a quiet tick ends before the lease, writes nothing, and calls no model', async () => {
    await h.createBot('idle');
    const before = await generation();
    const rows = async () => {
      const out: string[] = [];
      for (const t of ['heartbeat_bots', 'heartbeat_log', 'heartbeat_budgets', 'heartbeat_checkins'] as const)
        out.push(...(await h.hdb.selectFrom(t).selectAll().execute()).map((r) => JSON.stringify(r)));
      out.push(...(await h.store.db.selectFrom('instance_state').selectAll().where('key', 'like', 'heartbeat:%').execute()).map((r) => JSON.stringify(r)));
      return out;
    };
    const stored = await rows();
    for (let i = 0; i < 10; i++) {
      h.clock.set(h.clock.now() + 30_000);
      expect(await h.tick()).toMatchObject({ kind: 'quiet', message: 'no bot due' });
    }
    expect(await generation()).toBe(before); // no lease taken
    expect(await rows()).toEqual(stored);
    expect(h.pulse.chatRequests).toHaveLength(0);
  });

  it('a bot with a candidate is not quiet, and the full tick triages it', async () => {
    const bot = await h.createBot('cutoff');
    await interruptedTask(h, bot.id);
    await h.due(bot.id);
    expect(await probe()).toBeNull();
    const before = await generation();
    h.verdict({});
    await h.tick();
    expect(await generation()).toBe(before + 1);
    expect((await h.logOf(bot.id)).length).toBeGreaterThan(0);
  });

  it('a routine whose slot came is not quiet (also with the heartbeat off); the tick fires it', async () => {
    const bot = await h.createBot('routined');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '0 * * * *', prompt: 'Summarise new leads', timezone: 'UTC' });
    expect(await probe()).toBe('no bot due');
    await h.call('bots.set_heartbeat_settings', { mode: 'off' });
    expect(await probe()).toBe('heartbeat off');
    h.clock.set(r.next_run_at!);
    expect(await probe()).toBeNull();
    h.model.enqueue({ text: 'Summary: nothing new.' });
    await h.tick();
    const fired = await h.call<Routine[]>('bots.routines_list', { bot_id: bot.id });
    expect(fired[0]!.next_run_at).toBeGreaterThan(h.clock.now());
    expect(await probe()).toBe('heartbeat off');
  });

  it('a check-in whose wait ran out is not quiet; nor is a new day (its budgets to prune)', async () => {
    const bot = await h.createBot('asked');
    const thread = await h.host.heartbeat.directThread(bot.id);
    // Start just after midnight, the day's prune done: the check-in's 24 h wait ends a day later.
    h.clock.set(nextMidnight(h.clock.now()) + 1000);
    expect(await probe()).toBeNull(); // a new day
    await h.tick();
    expect(await probe()).toBe('no bot due');
    await h.hb.core.checkIn({
      id: 'ci-1',
      botId: bot.id,
      threadId: thread.id,
      taskId: null,
      source: 'ask_user',
      question: 'Which one?',
      mode: 'resume',
      reason: 'test',
    });
    const until = Number((await h.hb.core.bots.get(bot.id))!.next_heartbeat_at);
    expect(until).toBe(h.clock.now() + DAY_MS);
    h.clock.set(until - 500); // past the next midnight, before the wait ends
    expect(await probe()).toBeNull();
    await h.tick();
    expect(await probe()).toBe('no bot due');
    h.clock.set(until);
    expect(await probe()).toBeNull();
  });

  it('a reply left streaming (a sweep would find it) is not quiet', async () => {
    const bot = await h.createBot('streamer');
    const thread = await h.host.heartbeat.directThread(bot.id);
    const threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
    await threads.addMessage({ threadId: thread.id, role: 'bot', botId: bot.id, text: 'Half a reply', status: 'streaming' });
    expect(await probe()).toBe('no bot due'); // still being written, as far as anyone knows
    h.clock.set(h.clock.now() + 61_000);
    expect(await probe()).toBeNull();
  });
});
