/**
 * Rollout modes (§14), the restart fast path (§5.6), scheduling (§9: quiet hours in the bot's
 * own zone, user activity, the adaptive interval, catch-up once after a sleep, restart
 * staggering, resume concurrency) and the RPC surface, on both dialects.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BotHeartbeat, HeartbeatLogEntry, HeartbeatSettings, HeartbeatSnapshot, HeartbeatUsage } from '../../../src/protocol/heartbeat.js';
import type { SendResult } from '../../../src/protocol/bots.js';
import { PERSONA_FOLLOWUPS } from '../../../src/worlds/heartbeat/index.js';
import { testDialects } from '../../support/stores.js';
import { dumpTables } from '../../bots/harness.js';
import { createHeartbeatHarness, interruptedTask, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

const settled = (h: HeartbeatHarness, taskId: string, status: string) =>
  until(async () => {
    const t = await h.task(taskId);
    return t.status === status && h.host.runtime.isIdle(t.bot_id);
  });

async function heartbeatRows(h: HeartbeatHarness): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const t of ['heartbeat_bots', 'heartbeat_settings', 'heartbeat_log', 'heartbeat_checkins', 'heartbeat_followups', 'heartbeat_budgets'] as const) {
    out[t] = (await h.hdb.selectFrom(t).selectAll().execute()).map((r) => JSON.stringify(r, Object.keys(r).sort())).sort();
  }
  return out;
}

describe.each(await testDialects())('modes, scheduling and RPC on %s', (dialect) => {
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('off: a tick reads no bot, logs nothing, calls nothing; no persona lines, no follow-ups kept', async () => {
    await h.call('bots.set_heartbeat_settings', { mode: 'off' });
    const bot = await h.createBot('offbot');
    await interruptedTask(h, bot.id);
    await h.due(bot.id);
    expect((await h.tick()).kind).toBe('quiet');
    expect(await h.logOf(bot.id)).toEqual([]);
    expect(h.pulse.chatRequests).toHaveLength(0);
    h.model.enqueue({ text: 'ok\nFOLLOWUP: 5m — look again' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hello' });
    await settled(h, sent.dispatched[0]!.task_id, 'done');
    expect(h.model.chatRequests[0]!.body!.messages![0]!.content as string).not.toContain(PERSONA_FOLLOWUPS);
    expect(await h.hdb.selectFrom('heartbeat_followups').selectAll().execute()).toHaveLength(0);
  });

  it('triage: the candidate is logged with its rule, nothing more (no model, no run)', async () => {
    await h.call('bots.set_heartbeat_settings', { mode: 'triage' });
    const bot = await h.createBot('triager');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    expect((await h.tick()).kind).toBe('quiet');
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'candidate', rule: 'interrupted_task', task_id: t.id, mode: 'triage', tier: 0 });
    expect(h.pulse.chatRequests).toHaveLength(0);
    expect(h.model.chatRequests).toHaveLength(0);
    expect((await h.beat(bot.id)).next_heartbeat_at).toBeGreaterThan(h.clock.now());
  });

  it('shadow: the pulse is made and its verdict logged, never acted on', async () => {
    await h.call('bots.set_heartbeat_settings', { mode: 'shadow' });
    const bot = await h.createBot('shadowy');
    const t = await interruptedTask(h, bot.id);
    await h.due(bot.id);
    h.verdict({ taskId: t.id, verdict: 'resume' });
    expect((await h.tick()).kind).toBe('committed');
    const entry = (await h.logOf(bot.id))[0]!;
    expect(entry).toMatchObject({ outcome: 'verdict', verdict: 'resume', mode: 'shadow', escalated: false });
    expect(entry.reason).toMatch(/shadow \(logged only\): would resume/);
    expect(h.model.chatRequests).toHaveLength(0);
    expect(await h.task(t.id)).toMatchObject({ attempts: 0, claimed_by: null });
    h.verdict({ taskId: t.id, verdict: 'ask_user' });
    await h.due(bot.id);
    await h.tick();
    expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toHaveLength(0);
  });

  it('restart fast path (auto_resume_on_restart): an interrupted task with a checkpoint and no attempts resumes without a pulse; otherwise it pulses', async () => {
    await h.call('bots.set_heartbeat_settings', { auto_resume_on_restart: true });
    const bot = await h.createBot('fast');
    const t = await interruptedTask(h, bot.id, { checkpoint: 'Wrote 3 of 7 items.' });
    await h.due(bot.id);
    h.model.enqueue({ text: 'Finished.' });
    await h.tick();
    await settled(h, t.id, 'done');
    expect(h.pulse.chatRequests).toHaveLength(0);
    const resumed = (await h.logOf(bot.id)).find((e) => e.outcome === 'resumed')!;
    expect(resumed).toMatchObject({ verdict: null, rule: 'interrupted_task' });
    expect(resumed.reason).toMatch(/restart fast path/);

    const other = await h.createBot('slow');
    await interruptedTask(h, other.id, { attempts: 1, checkpoint: 'x' });
    await h.due(other.id);
    h.verdict({ verdict: 'idle' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
  });

  it('after a restart, interrupted work is checked within two ticks; other open work within its interval', async () => {
    const a = await h.createBot('restarted');
    const b = await h.createBot('flaky');
    await interruptedTask(h, a.id);
    await interruptedTask(h, b.id, { kind: 'provider' });
    const { scheduled } = await h.hb.start();
    expect(scheduled).toBe(2);
    const now = h.clock.now();
    expect((await h.beat(a.id)).next_heartbeat_at).toBeLessThanOrEqual(now + 60_000);
    const nb = (await h.beat(b.id)).next_heartbeat_at!;
    expect(nb).toBeGreaterThanOrEqual(now);
    expect(nb).toBeLessThanOrEqual(now + 300_000);
  });

  it('quiet hours are the bot’s own local time; the next check is when they end; Check now passes them (budgets still apply)', async () => {
    const bot = await h.createBot('sleepy');
    // 2026-01-01 09:00 UTC is 18:00 in Tokyo: quiet 17:00–08:00 there.
    await h.call('bots.set_heartbeat_settings', { bot_id: bot.id, timezone: 'Asia/Tokyo', quiet_hours: { enabled: true, start: '17:00', end: '08:00' } });
    await interruptedTask(h, bot.id);
    await h.due(bot.id);
    await h.tick();
    const beat = await h.beat(bot.id);
    expect(beat.last_outcome).toBe('skipped: quiet_hours');
    expect(beat.next_heartbeat_at).toBe(Date.UTC(2026, 0, 1, 23, 0, 0)); // 08:00 in Tokyo
    expect(h.pulse.chatRequests).toHaveLength(0);

    const now = await h.call<BotHeartbeat>('bots.heartbeat_now', { bot_id: bot.id });
    expect(now.next_heartbeat_at).toBe(h.clock.now());
    expect(h.triggered.count).toBe(1);
    h.verdict({ verdict: 'idle' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
    expect((await h.beat(bot.id)).last_outcome).toBe('verdict: idle');
  });

  it('a person active in the thread defers the bot until 90 s after it (bots.mark_user_active); an unknown thread is not_found', async () => {
    const bot = await h.createBot('active');
    await interruptedTask(h, bot.id);
    const thread = await h.host.heartbeat.directThread(bot.id);
    await h.advance(5 * 60_000);
    const marked = await h.call<{ at: number }>('bots.mark_user_active', { thread_id: thread.id });
    expect(marked.at).toBe(h.clock.now());
    await h.advance(30_000);
    await h.due(bot.id);
    await h.tick();
    expect(await h.beat(bot.id)).toMatchObject({ last_outcome: 'skipped: user_active', next_heartbeat_at: marked.at + 90_000 });
    const res = await h.raw('bots.mark_user_active', { thread_id: 'no-such-thread' });
    expect('error' in res && res.error.message).toMatch(/No thread/);
  });

  it('the adaptive interval: idle verdicts back off ×1.5 to the 1-hour cap; a person’s message brings the base back', async () => {
    const bot = await h.createBot('adaptive');
    await interruptedTask(h, bot.id);
    await h.advance(5 * 60_000);
    await h.due(bot.id);
    const seen: number[] = [];
    for (let i = 0; i < 7; i++) {
      h.verdict({ verdict: 'idle' });
      await h.tick();
      const beat = await h.beat(bot.id);
      seen.push(beat.current_interval_seconds);
      await h.advance(beat.next_heartbeat_at! - h.clock.now());
    }
    expect(seen).toEqual([450, 675, 1013, 1519, 2278, 3417, 3600]);
    h.model.enqueue({ text: 'Hi.' });
    const sent = await h.call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'hello' });
    await settled(h, sent.dispatched[0]!.task_id, 'done');
    expect((await h.beat(bot.id)).current_interval_seconds).toBe(300);
  });

  it('a missed slot during a sleep catches up once (no burst)', async () => {
    const bot = await h.createBot('sleeper');
    await h.call('bots.add_followup', { bot_id: bot.id, in_minutes: 10, note: 'look at the queue' });
    // The machine sleeps for 5 hours: no tick ran.
    await h.advance(5 * 3600_000);
    h.verdict({ verdict: 'idle' });
    await h.tick();
    await h.tick();
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(1);
  });

  it('resume_concurrency: at most that many heartbeat resumes at once; the rest wait a tick', async () => {
    await h.call('bots.set_heartbeat_settings', { resume_concurrency: 1 });
    const a = await h.createBot('one');
    const b = await h.createBot('two');
    const ta = await interruptedTask(h, a.id);
    const tb = await interruptedTask(h, b.id);
    await h.due(a.id);
    await h.due(b.id);
    h.pulse.handle((req) => {
      const prompt = req.body!.messages!.at(-1)!.content as string;
      const taskId = prompt.includes(ta.id) ? ta.id : tb.id;
      return { json: { verdict: 'resume', taskId, reason: 'cut off', instruction: '', etaMinutes: 0, urgency: 'normal', confidence: 0.9 } };
    });
    h.model.handle(() => ({ hang: true }));
    await h.tick();
    const logs = [...(await h.logOf(a.id)), ...(await h.logOf(b.id))];
    expect(logs.filter((e) => e.outcome === 'resumed')).toHaveLength(1);
    expect(logs.filter((e) => e.skip === 'resume_concurrency')).toHaveLength(1);
    await h.runner.cancelAll();
  });

  it('bots.set_heartbeat: off stops checks (skip: disabled), on again checks soon; settings per bot and store-wide, null inherits again', async () => {
    const bot = await h.createBot('switch');
    await interruptedTask(h, bot.id);
    const off = await h.call<BotHeartbeat>('bots.set_heartbeat', { bot_id: bot.id, enabled: false });
    expect(off).toMatchObject({ enabled: false, state: 'disabled', next_heartbeat_at: null });
    await h.due(bot.id);
    await h.tick();
    expect((await h.logOf(bot.id))[0]).toMatchObject({ skip: 'disabled' });
    const on = await h.call<BotHeartbeat>('bots.set_heartbeat', { bot_id: bot.id, enabled: true });
    expect(on).toMatchObject({ enabled: true, next_heartbeat_at: h.clock.now() });

    const per = await h.call<{ bot: BotHeartbeat }>('bots.set_heartbeat_settings', { bot_id: bot.id, interval_seconds: 900, max_task_attempts: 5 });
    expect(per.bot).toMatchObject({ interval_seconds: 900, max_task_attempts: 5, overridden: ['interval_seconds', 'max_task_attempts'] });
    const back = await h.call<{ bot: BotHeartbeat }>('bots.set_heartbeat_settings', { bot_id: bot.id, interval_seconds: null });
    expect(back.bot).toMatchObject({ interval_seconds: 300, overridden: ['max_task_attempts'] });
    const global = await h.call<{ settings: HeartbeatSettings }>('bots.set_heartbeat_settings', { global_pulses_per_day: 500, mode: 'shadow' });
    expect(global.settings).toMatchObject({ global_pulses_per_day: 500, mode: 'shadow', overridden: ['global_pulses_per_day', 'mode'] });
    const reset = await h.call<{ settings: HeartbeatSettings }>('bots.set_heartbeat_settings', { mode: null });
    expect(reset.settings).toMatchObject({ mode: 'resume', overridden: ['global_pulses_per_day'] });
    expect(h.hbEvents.filter((e) => e.type === 'heartbeat.settings_changed')).toHaveLength(2);
  });

  it('bad params are JSON-RPC errors that name the field, and change nothing', async () => {
    const bot = await h.createBot('strict');
    const before = [await dumpTables(h.db), await heartbeatRows(h)];
    const bad: Array<[string, unknown, RegExp]> = [
      ['bots.set_heartbeat', { bot_id: bot.id }, /enabled/],
      ['bots.set_heartbeat', { bot_id: bot.id, enabled: 'yes' }, /enabled/],
      ['bots.set_heartbeat', { bot_id: 'ghost', enabled: true }, /No bot/],
      ['bots.heartbeat_now', { bot_id: 'ghost' }, /No bot/],
      ['bots.set_heartbeat_settings', {}, /at least one setting/],
      ['bots.set_heartbeat_settings', { bot_id: bot.id, mode: 'resume' }, /store-wide/],
      ['bots.set_heartbeat_settings', { enabled: false }, /enabled is per bot/],
      ['bots.set_heartbeat_settings', { tick_seconds: 5 }, /at least 15/],
      ['bots.set_heartbeat_settings', { interval_seconds: 7200 }, /at most 3600/],
      ['bots.set_heartbeat_settings', { bot_id: bot.id, max_resumes_per_day: 49 }, /at most 48/],
      ['bots.set_heartbeat_settings', { bot_id: bot.id, quiet_hours: { enabled: true, start: '25:00', end: '08:00' } }, /HH:MM/],
      ['bots.set_heartbeat_settings', { bot_id: bot.id, timezone: 'Mars/Olympus' }, /IANA/],
      ['bots.set_heartbeat_settings', { mode: 'loud' }, /mode/],
      ['bots.set_heartbeat_settings', { pulse_timeout_seconds: 60 }, /at most 30/],
      ['bots.set_heartbeat_settings', { unknown_key: 1 }, /unknown_key|Unrecognized/],
      ['bots.resolve_checkin', { id: 'x', resolution: 'maybe' }, /resolution/],
      ['bots.heartbeat_log', { limit: 500 }, /at most 200/],
      ['bots.heartbeat_snapshot', { bot_ids: 'all' }, /bot_ids/],
      ['bots.heartbeat_usage', { days: 0 }, /days/],
      ['bots.add_followup', { bot_id: bot.id, in_minutes: 0, note: 'x' }, /at least 1/],
      ['bots.add_followup', { bot_id: bot.id, in_minutes: 5, note: '  ' }, /must not be empty/],
      ['bots.mark_user_active', {}, /thread_id/],
    ];
    for (const [method, params, why] of bad) {
      const res = await h.raw(method, params);
      expect('error' in res, `${method} ${JSON.stringify(params)}`).toBe(true);
      if ('error' in res) expect(`${res.error.message} ${JSON.stringify(res.error.data ?? '')}`, method).toMatch(why);
    }
    expect([await dumpTables(h.db), await heartbeatRows(h)]).toEqual(before);
  });

  it('the log: newest first, per bot or all, `before` pages back; a repeated skip folds into one entry', async () => {
    const bot = await h.createBot('logged');
    await interruptedTask(h, bot.id);
    const thread = await h.host.heartbeat.directThread(bot.id);
    for (let i = 0; i < 3; i++) {
      await h.host.heartbeat.markUserActive(thread.id);
      await h.due(bot.id);
      await h.tick();
      await h.advance(1000);
    }
    const log = await h.call<HeartbeatLogEntry[]>('bots.heartbeat_log', { bot_id: bot.id });
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ skip: 'user_active', repeats: 3 });
    expect(log[0]!.last_at).toBeGreaterThan(log[0]!.at);
    await h.advance(120_000);
    h.verdict({ verdict: 'wait', etaMinutes: 30 });
    await h.due(bot.id);
    await h.tick();
    const all = await h.call<HeartbeatLogEntry[]>('bots.heartbeat_log', {});
    expect(all.map((e) => e.outcome)).toEqual(['verdict', 'skipped']);
    expect(all[0]!.reason).toMatch(/interrupted_task → wait/);
    const older = await h.call<HeartbeatLogEntry[]>('bots.heartbeat_log', { before: all[0]!.last_at });
    expect(older.map((e) => e.outcome)).toEqual(['skipped']);
    expect((await h.beat(bot.id)).next_heartbeat_at).toBe(h.clock.now() + 30 * 60_000);
  });

  it('the snapshot (§10.4): a bot the heartbeat never saw has the defaults; checking while a pulse is in flight; usage beside an interval heartbeat', async () => {
    const fresh = await h.createBot('fresh');
    const snap = await h.call<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [fresh.id] });
    expect(snap.bots[0]).toMatchObject({
      bot_id: fresh.id,
      enabled: true,
      mode: 'resume',
      checking: false,
      state: 'idle',
      next_heartbeat_at: null,
      interval_seconds: 300,
      max_pulses_per_day: 48,
      max_resumes_per_day: 8,
      max_task_attempts: 3,
      pulses_today: 0,
      resumes_today: 0,
      follow_ups_enabled: true,
      auto_resume_on_restart: false,
      quiet_hours: { enabled: false, start: '22:00', end: '08:00' },
    });
    expect(snap.settings).toMatchObject({ mode: 'resume', tick_seconds: 30, pulse_concurrency: 2, resume_concurrency: 2, global_pulses_per_day: 200 });
    expect(snap.today).toMatchObject({ pulses: 0, resumes: 0, max_pulses: 200, max_resumes: 24 });

    const t = await interruptedTask(h, fresh.id);
    await h.due(fresh.id);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    h.pulse.handle(async () => {
      await held;
      return { json: { verdict: 'resume', taskId: t.id, reason: 'cut off', instruction: '', etaMinutes: 0, urgency: 'normal', confidence: 0.9 } };
    });
    h.model.enqueue({ text: 'Finished.' });
    const ticking = h.tick();
    await until(() => h.pulse.chatRequests.length === 1);
    const during = await h.call<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [fresh.id] });
    expect(during.bots[0]).toMatchObject({ checking: true, state: 'checking' });
    expect((await h.call<{ checking: boolean }[]>('bots.list'))[0]!.checking).toBe(true);
    release();
    await ticking;
    await settled(h, t.id, 'done');
    const after = await h.call<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [fresh.id] });
    expect(after.bots[0]).toMatchObject({ checking: false, pulses_today: 1, resumes_today: 1, last_verdict: 'resume' });
    expect(after.today).toMatchObject({ pulses: 1, resumes: 1 });
    expect(after.log.map((e) => e.outcome)).toContain('resumed');

    const usage = await h.call<HeartbeatUsage>('bots.heartbeat_usage', {});
    expect(usage.bots).toBe(1);
    expect(usage.pulses.calls).toBe(1);
    expect(usage.pulses.input_tokens).toBeGreaterThan(0);
    expect(usage.resumes).toMatchObject({ runs: 1, calls: 1 });
    expect(usage.full_calls_measured).toBe(1);
    expect(usage.measured_prompt_tokens).toBeGreaterThan(0);
    expect(usage.interval.calls).toBe(Math.round((h.clock.now() - usage.from) / (30 * 60_000)));
    expect(usage.ratio).toBeCloseTo(usage.heartbeat_tokens / usage.interval.tokens!, 10);
  });

  it('pulse_concurrency: at most that many pulses in flight; a bot’s own pulse model (role:model) is the one called', async () => {
    await h.call('bots.set_heartbeat_settings', { pulse_concurrency: 2 });
    const bots = [];
    for (const n of ['p1', 'p2', 'p3', 'p4']) {
      const bot = await h.createBot(n);
      await interruptedTask(h, bot.id);
      await h.due(bot.id);
      bots.push(bot);
    }
    await h.call('bots.set_heartbeat_settings', { bot_id: bots[0]!.id, model: 'local:tiny-pulse' });
    let inFlight = 0;
    let most = 0;
    let arrived = 0;
    // Each pulse is held 1 s on the fake clock (well inside its 8 s timeout): only the test moves it, so what is in flight is exact.
    h.pulse.handle(async () => {
      arrived++;
      inFlight++;
      most = Math.max(most, inFlight);
      await h.clock.sleep(1000);
      inFlight--;
      return { json: { verdict: 'idle', taskId: null, reason: 'later', instruction: '', etaMinutes: 0, urgency: 'low', confidence: 0.5 } };
    });
    const ticking = h.tick();
    await until(() => arrived === 2);
    expect(inFlight).toBe(2);
    await h.clock.advance(1000); // the first two answer; the next two start
    await until(() => arrived === 4);
    await h.clock.advance(1000);
    await ticking;
    expect(h.pulse.chatRequests).toHaveLength(4);
    expect(most).toBe(2);
    expect(h.pulse.chatRequests.map((r) => r.body!.model).sort()).toEqual(['pulse-model', 'pulse-model', 'pulse-model', 'tiny-pulse']);
    for (const r of h.pulse.chatRequests) expect(r.body).toMatchObject({ temperature: 0, max_tokens: 180 });
    // One attempt: a 429 is not retried.
    const one = await h.createBot('once');
    await interruptedTask(h, one.id);
    await h.due(one.id);
    h.pulse.handle(undefined);
    h.pulse.enqueue({ status: 429, retryAfter: 1, message: 'slow down' });
    await h.tick();
    expect(h.pulse.chatRequests).toHaveLength(5);
    expect((await h.logOf(one.id))[0]).toMatchObject({ outcome: 'pulse_error' });
  });

  it('Check now is a person’s reset: attempts back to 0 and pending check-ins superseded, then a check at once', async () => {
    const bot = await h.createBot('resetme');
    const t = await interruptedTask(h, bot.id, { attempts: 3 });
    await h.hb.core.checkIn({
      id: 'ci-reset',
      botId: bot.id,
      threadId: t.thread_id,
      taskId: t.id,
      source: 'exhausted',
      question: 'Try again?',
      mode: 'resume',
      reason: 'test',
    });
    const beat = await h.call<BotHeartbeat>('bots.heartbeat_now', { bot_id: bot.id });
    expect(beat.next_heartbeat_at).toBe(h.clock.now());
    expect((await h.task(t.id)).attempts).toBe(0);
    expect((await h.hdb.selectFrom('heartbeat_checkins').select('state').where('id', '=', 'ci-reset').executeTakeFirstOrThrow()).state).toBe('superseded');
    expect((await h.logOf(bot.id))[0]).toMatchObject({ outcome: 'reset' });
    h.verdict({ taskId: t.id });
    h.model.enqueue({ text: 'Done after the reset.' });
    await h.tick();
    await settled(h, t.id, 'done');
    expect((await h.task(t.id)).attempts).toBe(1);
    const off = await h.call<BotHeartbeat>('bots.set_heartbeat', { bot_id: bot.id, enabled: false });
    expect(off.enabled).toBe(false);
    const refused = await h.raw('bots.heartbeat_now', { bot_id: bot.id });
    expect('error' in refused && refused.error.message).toMatch(/switched off/);
  });

  it('Check now with the mode off is refused (conflict, the mode named) and changes nothing: attempts and check-ins stay', async () => {
    const bot = await h.createBot('offmode');
    const t = await interruptedTask(h, bot.id, { attempts: 2 });
    await h.call('bots.set_heartbeat_settings', { mode: 'off' });
    const before = await h.beat(bot.id);
    const refused = await h.raw('bots.heartbeat_now', { bot_id: bot.id });
    expect('error' in refused && refused.error).toMatchObject({ data: expect.objectContaining({ code: 'conflict', mode: 'off' }) });
    expect('error' in refused && refused.error.message).toMatch(/mode is off/);
    expect((await h.task(t.id)).attempts).toBe(2);
    expect(await h.beat(bot.id)).toEqual(before);
    expect(h.triggered.count).toBe(0);
  });
});
