/**
 * Two daemons sharing one database (issue 12 §3 "Several workers"): each with its own bots host,
 * runtime, model layer and heartbeat, on its own connection (Postgres; on SQLite, which one process
 * owns, on the same connection). However their ticks interleave —
 * racing each other stage for stage with no lease between them, or through the engine's tick
 * lease — every interrupted task is resumed exactly once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Instance } from '../../../src/engine/index.js';
import type { Task } from '../../../src/protocol/bots.js';
import { commitTick, observe, runPulses, type Heartbeat } from '../../../src/worlds/heartbeat/index.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, interruptedTask, otherDaemon, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

/** Four bots, four resumes at once: resume_concurrency does not hold any back in one tick. */
const CONFIG = { resume_concurrency: 4 };
const BOTS = 4;

const mcpHolder = sharedMcpForFile();

interface Daemon {
  hb: Heartbeat;
  instance: Instance;
  isIdle(botId: string): boolean;
  close(): Promise<void>;
}

/** A second daemon on its own connection to the same database, the same model servers, the same clock. */
async function secondDaemon(h: HeartbeatHarness, dialect: string): Promise<Daemon> {
  // SQLite: one process owns the file, so the two daemons share its connection (see `otherDaemon`).
  const other = await otherDaemon(h, mcpHolder.value!.mcp, { config: CONFIG, seed: 7, holderTag: 'daemon-b', sharedConnection: dialect === 'sqlite' });
  return { hb: other.hb, instance: other.instance, isIdle: (botId) => other.host.runtime.isIdle(botId), close: other.close };
}

describe.each(await testDialects())('two daemons on one %s database', (dialect) => {
  let h: HeartbeatHarness;
  let b: Daemon;
  let tasks: Task[];
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value!, config: CONFIG });
    b = await secondDaemon(h, dialect);
    tasks = [];
    for (let i = 0; i < BOTS; i++) {
      const bot = await h.createBot(`worker${i}`);
      tasks.push(await interruptedTask(h, bot.id));
      await h.due(bot.id);
    }
    h.pulse.handle((req) => {
      const prompt = req.body!.messages!.at(-1)!.content as string;
      const t = tasks.find((x) => prompt.includes(x.id))!;
      return { json: { verdict: 'resume', taskId: t.id, reason: 'cut off', instruction: '', etaMinutes: 0, urgency: 'normal', confidence: 0.9 } };
    });
    h.model.handle(() => ({ text: 'Finished the work.' }));
  });
  afterEach(async () => {
    await b.close();
    await h.dispose();
  });

  const allDone = () =>
    until(async () => {
      for (const t of tasks) {
        if ((await h.task(t.id)).status !== 'done' || !h.host.runtime.isIdle(t.bot_id) || !b.isIdle(t.bot_id)) return false;
      }
      return true;
    });

  async function expectOncePerTask(): Promise<void> {
    await allDone();
    for (const t of tasks) expect(await h.task(t.id)).toMatchObject({ status: 'done', attempts: 1 });
    expect(h.model.chatRequests).toHaveLength(tasks.length);
    expect(await h.db.selectFrom('bots_tasks').selectAll().execute()).toHaveLength(tasks.length);
    const notes = await h.db.selectFrom('bots_messages').select('task_id').where('role', '=', 'system').execute();
    expect(notes.map((n) => n.task_id).sort()).toEqual(tasks.map((t) => t.id).sort());
    const resumed = (await h.hb.core.logs.list({ limit: 200 })).filter((e) => e.outcome === 'resumed');
    expect(resumed.map((e) => e.task_id).sort()).toEqual(tasks.map((t) => t.id).sort());
  }

  it('racing stage for stage with no lease between them: each task claimed and resumed once, the loser told so', async () => {
    const [oa, ob] = await Promise.all([observe(h.hb.core, 20), observe(b.hb.core, 20)]);
    expect(oa.plans.filter((p) => p.pulse)).toHaveLength(BOTS);
    expect(ob.plans.filter((p) => p.pulse)).toHaveLength(BOTS);
    const [ra, rb] = await Promise.all([runPulses(h.hb.core, oa, new AbortController().signal), runPulses(b.hb.core, ob, new AbortController().signal)]);
    const [ca, cb] = await Promise.all([commitTick(h.hb.core, oa, ra, 'tick-a'), commitTick(b.hb.core, ob, rb, 'tick-b')]);
    expect(ca.resumed + cb.resumed).toBe(BOTS);
    await expectOncePerTask();
    const lost = (await h.hb.core.logs.list({ limit: 200 })).filter((e) => e.outcome === 'claim_lost' || e.skip === 'busy' || e.skip === 'budget');
    expect(lost.length).toBeGreaterThan(0);
  });

  it('through the engine: both daemons tick at once, the tick lease lets one run, and later ticks find the work done or running', async () => {
    const [x, y] = await Promise.all([h.tick(), b.instance.tick()]);
    expect([x.kind, y.kind].sort()).toEqual(['committed', 'skipped']);
    await allDone();
    // More ticks from both, every 30 s for a quarter of an hour: nothing is resumed again.
    for (let i = 0; i < 30; i++) {
      await h.advance(30_000);
      await Promise.all(i % 2 ? [h.tick(), b.instance.tick()] : [b.instance.tick(), h.tick()]);
    }
    await expectOncePerTask();
  });
});
