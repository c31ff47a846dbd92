/**
 * Seed 2 §9.1 on both dialects: per tick, routines first, then heartbeats. A routine that comes
 * due in the same tick as a bot's resumable work is dispatched before triage reads the bot, so
 * the heartbeat sees a busy bot (no pulse, no resume ahead of the routine); once the routine's
 * reply is the bot's newest message, the older cut-off work is superseded (§5.3).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Routine } from '../../../src/protocol/bots.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, gate, interruptedTask, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const NINE = Date.UTC(2026, 0, 1, 9); // the FakeClock's start

describe.each(await testDialects())('routines before heartbeats on %s', (dialect) => {
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('a routine due in the tick is dispatched first: the heartbeat finds the bot busy, pulses nothing; the routine’s reply then supersedes the cut-off task', async () => {
    const bot = await h.createBot('digest');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '*/5 * * * *', prompt: 'Summarise new leads', timezone: 'UTC' });
    expect(r.next_run_at).toBe(NINE + 5 * 60_000);
    const cut = await interruptedTask(h, bot.id);
    // 9:05 without waking the routine timer (it sleeps until its own next tick): only the heartbeat tick runs now.
    h.clock.set(NINE + 5 * 60_000);
    await h.due(bot.id);
    // Without the ordering this pulse would be asked and the cut-off task resumed ahead of the routine.
    h.verdict({ verdict: 'resume', taskId: cut.id, reason: 'the checklist was cut off' });
    // The routine's reply is held until the tick is over: its run is surely still going when
    // triage reads the bot (a fast reply could settle first and make this a `superseded` skip).
    const reply = gate();
    h.model.handle(async () => {
      await reply.wait;
      return { text: 'Two new leads.' };
    });

    // No pulse this tick: a quiet tick (its skip still written).
    expect((await h.tick()).kind).toBe('quiet');

    const routineTasks = await h.db.selectFrom('bots_tasks').selectAll().where('routine_id', '=', r.id).execute();
    expect(routineTasks.map((t) => t.source)).toEqual(['routine']);
    expect(h.pulse.chatRequests).toHaveLength(0);
    const log = await h.logOf(bot.id);
    expect(log.some((e) => e.outcome === 'resumed')).toBe(false);
    expect(log[0]).toMatchObject({ outcome: 'skipped', skip: 'busy' });
    expect(await h.task(cut.id)).toMatchObject({ status: 'failed', attempts: 0 });
    expect(h.events.filter((e) => e.type === 'bots.routine_fired')).toHaveLength(1);

    reply.open();
    // The routine's run settles. Its reply is the bot's newest message: the cut-off task is
    // superseded (§5.3), so the next check pulses nothing either — the routine went first.
    await until(async () => (await h.task(routineTasks[0]!.id)).status === 'done' && h.host.runtime.isIdle(bot.id));
    await h.due(bot.id);
    expect((await h.tick()).kind).toBe('quiet');
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'skipped', skip: 'superseded' });
    expect(h.pulse.chatRequests).toHaveLength(0);
    expect(await h.task(cut.id)).toMatchObject({ status: 'failed', attempts: 0 });
    expect(h.model.chatRequests).toHaveLength(1);
  });
});
