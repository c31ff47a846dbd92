/**
 * Work a clean daemon shutdown cut off (a run, a job waiting behind it) resumes right after the
 * restart: the restarted heartbeat marks its bot due at once and asks for a one-shot tick, so the
 * resume does not wait for the cadence nor for the two-tick stagger a crash's work gets.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SHUTDOWN_INTERRUPTED, type BotsHost } from '../../../src/bots/index.js';
import type { Instance } from '../../../src/engine/index.js';
import type { SendResult } from '../../../src/protocol/bots.js';
import type { Heartbeat } from '../../../src/worlds/heartbeat/index.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, gate, otherDaemon, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

interface Restarted {
  host: BotsHost;
  hb: Heartbeat;
  instance: Instance;
  triggers: { count: number };
  close(): Promise<void>;
}

/** The daemon started again on the same database (same model servers, same clock). */
async function restart(h: HeartbeatHarness): Promise<Restarted> {
  const triggers = { count: 0 };
  const other = await otherDaemon(h, mcpHolder.value!.mcp, { config: {}, seed: 3, holderTag: 'restarted', trigger: () => void triggers.count++ });
  await other.host.start();
  await other.hb.start();
  return { ...other, triggers };
}

describe.each(await testDialects())('work cut off by a shutdown on %s', (dialect) => {
  let h: HeartbeatHarness;
  let again: Restarted | undefined;
  let hold: ReturnType<typeof gate>;
  beforeEach(async () => {
    hold = gate();
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
    again = undefined;
  });
  afterEach(async () => {
    hold.open();
    await again?.close();
    await h.dispose();
  });

  it('is due at the restart and resumed by the one-shot tick the restart asks for, without advancing the clock', async () => {
    const bot = await h.createBot('worker');
    let calls = 0;
    h.model.handle(async () => {
      if (++calls === 1) await hold.wait; // the first run lasts until the daemon stops
      return { text: 'Finished the checklist.' };
    });
    const first = (await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Prepare the Q4 launch checklist' })).dispatched[0]!;
    await until(async () => (await h.task(first.task_id)).status === 'working');
    const second = (await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Then draft the announcement' })).dispatched[0]!;
    expect((await h.task(second.task_id)).status).toBe('queued');
    await h.advance(120_000); // the person has stepped away (a person active < 90 s ago is left alone)

    // A clean shutdown, in the app's order: the heartbeat closes, then the host settles its work.
    await h.hb.close();
    await h.host.stop();
    hold.open(); // the cut-off request is answered into the void
    const t = await h.task(first.task_id);
    expect(t).toMatchObject({ status: 'failed', error_kind: 'interrupted', interrupted: true, attempts: 0 });
    expect(t.error).toContain(SHUTDOWN_INTERRUPTED);
    // Issue 17: the second never started, so it is not "cut off": its job stays queued and runs after the restart.
    expect(await h.task(second.task_id)).toMatchObject({ status: 'queued', interrupted: false, attempts: 0 });

    again = await restart(h);
    const now = h.clock.now();
    const row = await again.hb.core.bots.get(bot.id);
    expect(Number(row!.next_heartbeat_at)).toBe(now);
    expect(again.triggers.count).toBe(1);

    // The tick the trigger runs: same instant, a pulse, then the resume.
    h.pulse.handle((req) => {
      const prompt = req.body!.messages!.at(-1)!.content as string;
      const taskId = prompt.includes(first.task_id) ? first.task_id : second.task_id;
      return { json: { verdict: 'resume', taskId, reason: 'cut off by the shutdown', instruction: '', etaMinutes: 0, urgency: 'normal', confidence: 0.9 } };
    });
    // The queued job runs first on its own (no pulse, no resume); then the bot is idle for the heartbeat.
    await until(async () => (await again!.host.heartbeat.getTask(second.task_id))?.status === 'done' && again!.host.runtime.isIdle(bot.id));
    const outcome = await again.instance.tick();
    expect(outcome.kind).toBe('committed');
    expect(h.clock.now()).toBe(now);
    await until(async () => {
      const tasks = await Promise.all([first.task_id, second.task_id].map((id) => again!.host.heartbeat.getTask(id)));
      return tasks.some((t) => t?.status === 'done') && again!.host.runtime.isIdle(bot.id);
    });
    const resumed = (await again.hb.core.logs.list({ botId: bot.id, limit: 50 })).filter((e) => e.outcome === 'resumed');
    expect(resumed).toHaveLength(1);
    expect((await again.host.heartbeat.getTask(resumed[0]!.task_id!))!.attempts).toBe(1);
  });

  it('a crash’s interrupted work is not due at once and asks for no extra tick (it is staggered over two ticks)', async () => {
    const bot = await h.createBot('crashed');
    const { interruptedTask } = await import('./harness.js');
    await interruptedTask(h, bot.id);
    await h.hb.close();
    await h.host.stop();
    again = await restart(h);
    const row = await again.hb.core.bots.get(bot.id);
    const next = Number(row!.next_heartbeat_at);
    expect(next).toBeGreaterThanOrEqual(h.clock.now());
    expect(next).toBeLessThan(h.clock.now() + 60_000);
    expect(again.triggers.count).toBe(0);
  });
});
