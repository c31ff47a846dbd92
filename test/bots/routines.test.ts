/**
 * Routines (issue 11 §3): the host timer on the injected clock, one run for missed slots, a
 * still-running previous run skips the slot, and two hosts on one database fire a slot once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBotsHost, parseBotsConfig } from '../../src/bots/index.js';
import { silentLogger, uuid } from '../../src/core/index.js';
import type { Routine } from '../../src/protocol/bots.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, gate, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const NINE = Date.UTC(2026, 0, 1, 9); // the FakeClock's start

describe.each(await testDialects())('routines on %s', (dialect) => {
  let h: BotsHarness;
  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  /**
   * Move the clock one routine tick (30 s) at a time, each only while the timer sleeps: a tick
   * still at work when the clock moves on would sleep from the later time and miss a slot.
   */
  const advance = async (ms: number) => {
    for (let moved = 0; moved < ms; moved += 30_000) {
      await h.host.routineTimerAsleep();
      await h.clock.advance(Math.min(30_000, ms - moved));
    }
    await h.host.routineTimerAsleep();
  };
  const routineTasks = (routineId: string) => h.db.selectFrom('bots_tasks').selectAll().where('routine_id', '=', routineId).execute();

  it('a routine due twice during a simulated sleep runs once, as unattended routine work, then waits for its next slot', async () => {
    const bot = await h.createBot('digest');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '*/5 * * * *', prompt: 'Summarise new leads', timezone: 'UTC' });
    expect(r.next_run_at).toBe(NINE + 5 * 60_000);
    h.model.handle(() => ({ text: 'Two new leads.' }));

    // The machine sleeps from 9:00 to 9:12: the 9:05 and 9:10 slots are missed, nobody is woken.
    h.clock.set(NINE + 12 * 60_000);
    await advance(30_000); // the next routine tick
    await until(async () => (await routineTasks(r.id)).some((t) => t.status === 'done') && h.host.runtime.isIdle(bot.id));
    await advance(30_000);
    await advance(30_000);

    const tasks = await routineTasks(r.id);
    expect(tasks.map((t) => [t.source, t.status])).toEqual([['routine', 'done']]);
    const after = (await h.call<Routine[]>('bots.routines_list', { bot_id: bot.id }))[0]!;
    expect(after).toMatchObject({ last_outcome: 'dispatched', last_task_id: tasks[0]!.id, next_run_at: NINE + 15 * 60_000 });
    expect(h.events.filter((e) => e.type === 'bots.routine_fired')).toHaveLength(1);
    const thread = await h.host.heartbeat.directThread(bot.id);
    const msgs = await h.host.heartbeat.messages(thread.id);
    expect(msgs.map((m) => `${m.role}:${m.text}`)).toEqual(['system:Routine: Summarise new leads', 'bot:Two new leads.']);
    const last = h.model.chatRequests[0]!.body!.messages!.at(-1)!.content as string;
    expect(last).toContain('Summarise new leads');
    expect(await h.store.db.selectFrom('model_calls').select('purpose').execute()).toEqual([{ purpose: 'bot_routine' }]);

    // The next slot fires again: 9:15 is reached by the timer on the clock.
    await advance(2 * 60_000);
    await until(async () => (await routineTasks(r.id)).length === 2);
  });

  it('a slot that comes while the previous run still works is skipped (once), not stacked', async () => {
    const bot = await h.createBot('digest');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '* * * * *', prompt: 'Check the queue', timezone: 'UTC' });
    const slow = gate();
    h.model.handle(async () => {
      await slow.wait;
      return { text: 'Queue is empty.' };
    });
    // Explicit ticks at set times (the timer itself is covered above): no race with its sleep.
    h.clock.set(NINE + 60_000); // 9:01: fires
    await h.host.tickRoutines();
    await until(async () => (await routineTasks(r.id)).some((t) => t.status === 'working'));
    h.clock.set(NINE + 2 * 60_000); // 9:02: the first is still working
    const skipped = await h.host.tickRoutines();
    expect(skipped).toEqual([{ routineId: r.id, taskId: null, skipped: expect.stringMatching(/^skipped: the previous run \(task .+\) is still working$/) }]);
    expect((await h.call<Routine[]>('bots.routines_list'))[0]!).toMatchObject({ last_outcome: skipped[0]!.skipped, next_run_at: NINE + 3 * 60_000 });
    expect(await routineTasks(r.id)).toHaveLength(1);
    slow.open();
    await until(async () => (await routineTasks(r.id))[0]!.status === 'done' && h.host.runtime.isIdle(bot.id));
    h.clock.set(NINE + 3 * 60_000); // 9:03: free again
    await h.host.tickRoutines();
    expect(await routineTasks(r.id)).toHaveLength(2);
    const fired = h.events.filter((e) => e.type === 'bots.routine_fired').map((e) => (e.data.skipped ? 'skipped' : 'dispatched'));
    expect(fired).toEqual(['dispatched', 'skipped', 'dispatched']);
  });

  it('two hosts on one database (two daemons) fire a slot once', async () => {
    await h.host.stop(); // only explicit ticks below
    const bot = await h.createBot('digest');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '*/10 * * * *', prompt: 'Report', timezone: 'UTC' });
    h.model.handle(() => ({ text: 'ok' }));
    const other = createBotsHost({
      coordinator: await h.newCoordinator(),
      db: h.db,
      clock: h.clock,
      ids: uuid,
      runner: h.runner,
      approvals: h.approvals,
      emit: () => undefined,
      log: silentLogger,
      presence: () => true,
      config: parseBotsConfig({ next_job_delay_ms: 0 }),
    });
    const fresh = createBotsHost({
      coordinator: await h.newCoordinator(),
      db: h.db,
      clock: h.clock,
      ids: uuid,
      runner: h.runner,
      approvals: h.approvals,
      emit: () => undefined,
      log: silentLogger,
      presence: () => true,
      config: parseBotsConfig({ next_job_delay_ms: 0 }),
    });
    h.clock.set(NINE + 10 * 60_000);
    const [a, b] = await Promise.all([fresh.tickRoutines(), other.tickRoutines()]);
    expect([...a, ...b].map((f) => f.routineId)).toEqual([r.id]);
    await until(async () => (await routineTasks(r.id))[0]?.status === 'done');
    expect(await routineTasks(r.id)).toHaveLength(1);
    await fresh.stop();
    await other.stop();
  });

  it('a disabled routine never fires; re-enabled, it waits for its next slot (no catch-up of the time it was off)', async () => {
    const bot = await h.createBot('digest');
    const r = await h.call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '0 * * * *', prompt: 'Hourly', timezone: 'UTC', enabled: false });
    expect(r.next_run_at).toBeNull();
    await h.clock.advance(2 * 3600_000);
    expect(await routineTasks(r.id)).toEqual([]);
    const on = await h.call<Routine>('bots.routines_update', { id: r.id, enabled: true });
    expect(on.next_run_at).toBe(NINE + 3 * 3600_000);
  });
});
