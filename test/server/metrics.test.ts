/**
 * /metrics over HTTP on the real app: `subconscious_tick_failures_total` counts every tick that
 * raised consecutive_failures — a model-unreachable tick (skipped by the provider gate) as well
 * as a failed one — and no other skip; `subconscious_bots` counts the built-in host's bots and
 * each external runtime's (host = its runtime id).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { FakeClock, silentLogger } from '../../src/core/index.js';
import { createHttpApp, listen, type Listening } from '../../src/server/http.js';
import { createMetrics } from '../../src/server/metrics.js';
import { ensureToken } from '../../src/server/token.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';

let workspace: string;
let app: App;
let http: Listening;
let models: ModelServer;
let disposeMetrics: () => void;
const clock = new FakeClock();

beforeAll(async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-metrics-'));
  models = await startModelServer();
  app = await createApp({
    workspace,
    clock,
    log: silentLogger,
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
  });
  const metrics = createMetrics({ ledger: app.llm.ledger, events: app.events, jobs: app.coordinator, bots: app.botStatus });
  disposeMetrics = metrics.dispose;
  http = await listen(
    createHttpApp({
      rpc: app.rpc,
      events: app.feed,
      token: ensureToken(workspace),
      metrics: metrics.registry,
      webRoot: null,
      log: silentLogger,
      health: async () => ({ worlds: app.registry.names() }),
    }),
    { host: '127.0.0.1', port: 0 },
  );
});
afterAll(async () => {
  disposeMetrics();
  await http.close();
  await app.close();
  await models.close();
  rmSync(workspace, { recursive: true, force: true });
});

const scrape = async () => (await fetch(`${http.url}/metrics`)).text();

/** The value of one sample in the Prometheus text (0 when the series is absent). */
async function sample(name: string, labels: string): Promise<number> {
  const text = await scrape();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const failures = () => sample('subconscious_tick_failures_total', 'world="tasks"');
const ticks = (outcome: string) => sample('subconscious_ticks_total', `world="tasks",outcome="${outcome}"`);

describe('/metrics: tick failures', () => {
  it('counts a model-unreachable tick (skipped by the provider gate), a failed tick, and not a disabled skip', async () => {
    const tasks = app.registry.get('tasks');
    expect(await failures()).toBe(0);

    // The model does not answer its probe: the gate skips the tick, and it counts as a failure.
    models.modelsFault = { status: 503, message: 'model loading' };
    const unreachable = await tasks.tick();
    expect(unreachable.kind, unreachable.message).toBe('skipped');
    expect(unreachable.message).toMatch(/unavailable/);
    expect((await tasks.status()).consecutive_failures).toBe(1);
    expect(await ticks('skipped')).toBe(1);
    expect(await failures()).toBe(1);

    // The model answers its probe but the evaluation fails: a failed tick, counted too.
    models.modelsFault = undefined;
    models.handle(() => ({ status: 500, message: 'boom' }));
    await clock.advance(5 * 60_000);
    const failed = await tasks.tick();
    expect(failed.kind, failed.message).toBe('failed');
    expect((await tasks.status()).consecutive_failures).toBe(2);
    expect(await failures()).toBe(2);

    // A skip that is not a failure (the world is switched off) leaves the counter alone.
    await app.registry.setEnabled('tasks', false);
    await clock.advance(5 * 60_000);
    const disabled = await tasks.tick();
    expect(disabled).toMatchObject({ kind: 'skipped', message: 'disabled' });
    expect((await tasks.status()).consecutive_failures).toBe(2);
    expect(await ticks('skipped')).toBe(2);
    expect(await failures()).toBe(2);
  });
});

describe('/metrics: what people alert on', () => {
  it('has tick-duration and model-call-latency histograms by world, jobs by queue and state, and process metrics', async () => {
    // The ticks above: every one observed in the duration histogram, by outcome.
    expect(await sample('subconscious_tick_duration_seconds_count', 'world="tasks",outcome="skipped"')).toBe(2);
    expect(await sample('subconscious_tick_duration_seconds_count', 'world="tasks",outcome="failed"')).toBe(1);
    // Their model calls (the failed evaluation answered 500) are in the latency histogram, by role and outcome.
    const text = await scrape();
    const calls = text.split('\n').filter((l) => l.startsWith('subconscious_model_call_duration_seconds_count{world="tasks",role="local"'));
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.some((l) => !l.includes('outcome="ok"'))).toBe(true);
    // A job committed to the coordinator shows as queued in its queue.
    await app.coordinator.send({ queue: 'metrics.probe', payload: { n: 1 } });
    expect(await sample('subconscious_jobs', 'queue="metrics.probe",state="queued"')).toBe(1);
    expect(await sample('subconscious_jobs', 'queue="metrics.probe",state="active"')).toBe(0);
    // Node process metrics under the product's prefix.
    expect(text).toMatch(/^subconscious_process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^subconscious_nodejs_eventloop_lag_p99_seconds \d/m);
  });

  it('has bots by host and status, read at scrape time', async () => {
    const bots = (status: string) => sample('subconscious_bots', `host="builtin",status="${status}"`);
    expect(await bots('idle')).toBe(0);
    const a = (await app.rpc.call('bots.create', { name: 'scout' })) as { id: string };
    await app.rpc.call('bots.create', { name: 'scribe' });
    expect([await bots('idle'), await bots('queued'), await bots('working')]).toEqual([2, 0, 0]);
    // A message whose model call never answers: that bot has work (queued, or working once a worker takes it) until it is stopped.
    models.handle(() => ({ hang: true }));
    await app.rpc.call('bots.send_message', { bot_id: a.id, text: 'look at the build' });
    await expect.poll(async () => (await bots('queued')) + (await bots('working')), { timeout: 10_000 }).toBe(1);
    expect(await bots('idle')).toBe(1);
    await app.rpc.call('bots.stop_bot', { bot_id: a.id });
    await expect.poll(() => bots('idle'), { timeout: 10_000 }).toBe(2);
    expect(await bots('working')).toBe(0);
    models.handle(undefined);
  });

  it('counts an external runtime’s bots under its own host, by the status its reports give', async () => {
    const ext = (status: string) => sample('subconscious_bots', `host="acme",status="${status}"`);
    await app.rpc.call('runtime.register', {
      runtime_id: 'acme',
      delivery: { kind: 'poll' },
      bots: [
        { id: 'writer', name: 'writer' },
        { id: 'checker', name: 'checker' },
      ],
    });
    expect([await ext('idle'), await ext('queued'), await ext('working')]).toEqual([2, 0, 0]);
    // A run it reports running makes that bot working (for the run's lease).
    await app.rpc.call('runtime.report', { runtime_id: 'acme', runs: [{ id: 'run-1', bot_id: 'writer', status: 'running' }] });
    expect([await ext('idle'), await ext('queued'), await ext('working')]).toEqual([1, 0, 1]);
    await app.rpc.call('runtime.report', { runtime_id: 'acme', runs: [{ id: 'run-1', bot_id: 'writer', status: 'done' }] });
    expect([await ext('idle'), await ext('working')]).toEqual([2, 0]);
    // The built-in host's counts are its own.
    expect(await sample('subconscious_bots', 'host="builtin",status="working"')).toBe(0);
    await app.rpc.call('runtime.unregister', { runtime_id: 'acme' });
    expect(await ext('idle')).toBe(0);
  });

  it('keeps the old positional form working (deprecated alias)', async () => {
    const old = createMetrics(app.llm.ledger, app.events);
    try {
      expect(await old.registry.getSingleMetricAsString('subconscious_ticks_total')).toContain('subconscious_ticks_total');
    } finally {
      old.dispose();
    }
  });
});
