/**
 * The heartbeat as a module (issue 12 §8; HELPERS "Phase 2"): its `[worlds.heartbeat]` section,
 * the module checks (it needs the bots host, so it comes after it), and a real app built from
 * the product's module list (the heartbeat comes right after the bots host) — config, store,
 * registry, RPC — that resumes a failed task end to end through its own tick.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app/app.js';
import { validateConfig } from '../../../src/app/config.js';
import { checkModules } from '../../../src/app/module-checks.js';
import { productModules } from '../../../src/app/modules.js';
import { FakeClock, isSubconsciousError, silentLogger, type RpcResponse } from '../../../src/core/index.js';
import { heartbeatContract, productContracts, type ProductMethods } from '../../../src/protocol/index.js';
import type { Routine, SendResult, Task } from '../../../src/protocol/bots.js';
import type { HeartbeatSnapshot } from '../../../src/protocol/heartbeat.js';
import { heartbeatModule } from '../../../src/worlds/heartbeat/index.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import { until } from './harness.js';

/** The product's modules (the bots host among them) with the heartbeat after them, as the lead will list it. */
const modules = productModules;

describe('the heartbeat module', () => {
  it('comes after the bots host: the checks accept it there and nowhere else', () => {
    expect(() => checkModules(modules)).not.toThrow();
    const withoutBots = productModules.filter((m) => m.kind !== 'bots' && m.kind !== 'heartbeat');
    expect(() => checkModules([...withoutBots, heartbeatModule])).toThrow(/module heartbeat needs bots\.heartbeat, which no module before it provides/);
    const bots = productModules.find((m) => m.kind === 'bots')!;
    expect(() => checkModules([...withoutBots, heartbeatModule, bots])).toThrow(/needs bots\.heartbeat/);
    expect(heartbeatModule.tables!.names.every((t) => t.startsWith('heartbeat_'))).toBe(true);
    expect(Object.keys(heartbeatModule.tables!.migrations)).toEqual([
      'heartbeat/0001_init',
      'heartbeat/0002_checkin_answers',
      'heartbeat/0003_checkins_resolved_index',
    ]);
    expect(productContracts).toContain(heartbeatContract);
    const method: keyof ProductMethods = 'bots.heartbeat_now';
    expect(Object.keys(heartbeatContract.methods)).toContain(method);
  });

  it('[worlds.heartbeat]: §15’s defaults (mode resume), ranges with messages that name the key', () => {
    const c = validateConfig({}, modules);
    expect(c.worlds.heartbeat).toEqual({
      enabled: true,
      settings: {
        mode: 'resume',
        tick_seconds: 30,
        interval_seconds: 300,
        max_pulses_per_day: 48,
        max_resumes_per_day: 8,
        max_task_attempts: 3,
        resume_cooldown_seconds: 600,
        pulse_concurrency: 2,
        resume_concurrency: 2,
        quiet_hours: { enabled: false, start: '22:00', end: '08:00' },
        auto_resume_on_restart: false,
        follow_ups_enabled: true,
        pulse_max_output_tokens: 180,
        pulse_timeout_seconds: 8,
        global_pulses_per_day: 200,
        global_resumes_per_day: 24,
        model: 'local',
      },
    });
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ tick_seconds: 10 }, /worlds\.heartbeat\.tick_seconds: must be at least 15/],
      [{ tick_seconds: 121 }, /tick_seconds: must be at most 120/],
      [{ interval_seconds: 60 }, /interval_seconds: must be at least 120/],
      [{ max_pulses_per_day: 300 }, /max_pulses_per_day: must be at most 288/],
      [{ max_task_attempts: 0 }, /max_task_attempts: must be at least 1/],
      [{ resume_cooldown_seconds: 60 }, /resume_cooldown_seconds: must be at least 120/],
      [{ pulse_concurrency: 9 }, /pulse_concurrency: must be at most 8/],
      [{ resume_concurrency: 5 }, /resume_concurrency: must be at most 4/],
      [{ pulse_max_output_tokens: 50 }, /pulse_max_output_tokens: must be at least 80/],
      [{ pulse_timeout_seconds: 2 }, /pulse_timeout_seconds: must be at least 3/],
      [{ mode: 'on' }, /worlds\.heartbeat\.mode: must be one of off, triage, shadow, resume/],
      [{ quiet_hours: { enabled: true, start: '22:00', end: '8' } }, /quiet_hours\.end: must be a local time HH:MM/],
      [{ timezone: 'Nowhere/City' }, /timezone: must be an IANA time zone/],
      [{ model: 'local:' }, /model/],
      [{ pulses: 3 }, /unknown key|pulses/],
    ];
    for (const [section, why] of bad) {
      let err: unknown;
      try {
        validateConfig({ worlds: { heartbeat: section } }, modules);
      } catch (e) {
        err = e;
      }
      expect(isSubconsciousError(err, 'config_invalid'), JSON.stringify(section)).toBe(true);
      expect((err as Error).message).toMatch(why);
    }
    expect(
      validateConfig({ worlds: { heartbeat: { mode: 'off', tick_seconds: 15, interval_seconds: 3600 } } }, modules).worlds.heartbeat!.settings,
    ).toMatchObject({
      mode: 'off',
      tick_seconds: 15,
      interval_seconds: 3600,
    });
  });
});

describe('an app with the bots host and the heartbeat', () => {
  let workspace: string;
  let models: ModelServer;
  let app: App;
  let clock: FakeClock;
  let seq = 0;

  const raw = async (method: string, params: unknown = {}) => (await app.rpc.handle({ jsonrpc: '2.0', id: ++seq, method, params })) as RpcResponse;
  const call = async <T>(method: string, params: unknown = {}): Promise<T> => {
    const res = await raw(method, params);
    if ('error' in res) throw new Error(`${method}: ${res.error.message}`);
    return res.result as T;
  };

  beforeEach(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-hb-app-'));
    writeFileSync(path.join(workspace, 'subconscious.toml'), '[worlds.heartbeat]\ntick_seconds = 30\n[worlds.bots]\nnext_job_delay_ms = 0\n');
    models = await startModelServer();
    clock = new FakeClock();
    app = await createApp({
      workspace,
      modules,
      clock,
      log: silentLogger,
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
        SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: 'pulse-model',
        SUBCONSCIOUS_AGENT_MODEL: 'agent-model',
      },
    });
  });
  afterEach(async () => {
    await app.close();
    await models.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('serves the heartbeat’s methods, ticks every 30 s, and resumes a failed task through its own tick', async () => {
    expect(app.registry.get('heartbeat').world.intervalMinutes()).toBe(0.5);
    for (const name of Object.keys(heartbeatContract.methods)) expect(app.rpc.list().map((m) => m.name)).toContain(name);

    const bot = await call<{ id: string }>('bots.create', { name: 'growth' });
    models.handle((req) => {
      const body = req.body!;
      if (body.model === 'pulse-model') {
        return {
          json: { verdict: 'resume', taskId: null, reason: 'the provider failed; retry', instruction: '', etaMinutes: 0, urgency: 'normal', confidence: 0.9 },
        };
      }
      const last = body.messages!.at(-1)!.content as string;
      return last.includes('[Heartbeat wake-up') ? { text: 'Done on the second try.' } : { status: 500, message: 'upstream down' };
    });
    const sent = await call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Prepare the Q4 launch checklist' });
    const taskId = sent.dispatched[0]!.task_id;
    const task = () => call<{ tasks: Task[] }>('bots.thread', { thread_id: sent.thread_id }).then((v) => v.tasks.find((t) => t.id === taskId)!);
    await until(async () => (await task()).status === 'failed');

    // The settle marked the bot; its check comes within the interval (±20 %).
    const snap = await call<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [bot.id] });
    const next = snap.bots[0]!.next_heartbeat_at!;
    expect(next - clock.now()).toBeLessThanOrEqual(360_000);
    await clock.advance(next - clock.now());
    const [outcome] = await app.registry.tickOnce('heartbeat');
    expect(outcome!.kind).toBe('committed');
    await until(async () => (await task()).status === 'done');
    expect(await task()).toMatchObject({ attempts: 1 });
    const ledger = await app.llm.ledger.calls({ limit: 10, offset: 0 });
    expect(ledger.rows.map((r) => `${r.world}/${r.purpose}`).sort()).toEqual(['bots/bot_turn', 'bots/heartbeat_resume', 'heartbeat/heartbeat_pulse']);
    const bad = await raw('bots.heartbeat_now', { bot_id: 42 });
    expect('error' in bad && bad.error.code).toBe(-32602);
  });

  it('a one-shot tick (the app not started: no routine timer runs) fires the routines due first (§9.1), so `subconscious tick` runs them too', async () => {
    const bot = await call<{ id: string }>('bots.create', { name: 'digest' });
    models.handle(() => ({ text: 'Two new leads.' }));
    const routine = await call<Routine>('bots.routines_add', { bot_id: bot.id, schedule: '*/5 * * * *', prompt: 'Summarise new leads', timezone: 'UTC' });
    await clock.advance(routine.next_run_at! - clock.now());
    const [outcome] = await app.registry.tickOnce('heartbeat');
    expect(outcome!.kind).not.toBe('failed');
    const [fired] = await call<Routine[]>('bots.routines_list', { bot_id: bot.id });
    expect(fired).toMatchObject({ last_outcome: 'dispatched', last_run_at: clock.now(), last_task_id: expect.any(String) });
    expect(fired!.next_run_at).toBe(routine.next_run_at! + 5 * 60_000);
    const threadOf = async () => (await call<{ id: string }[]>('bots.threads_list', { bot_id: bot.id }))[0]!.id;
    const task = async () => (await call<{ tasks: Task[] }>('bots.thread', { thread_id: await threadOf() })).tasks.find((t) => t.id === fired!.last_task_id)!;
    await until(async () => (await task()).status === 'done');
    expect(await task()).toMatchObject({ source: 'routine' });
    // The same slot is not fired again by the next one-shot tick.
    await app.registry.tickOnce('heartbeat');
    expect((await call<Routine[]>('bots.routines_list', { bot_id: bot.id }))[0]!.last_task_id).toBe(fired!.last_task_id);
  });
});
