/**
 * The harness and the steering world as modules of the real app (`createApp` with the two
 * modules), on SQLite and Postgres, against the scripted model server on loopback:
 *
 * - a forwarded cycle wakes the steering world through the module registry's trigger; its
 *   directive steers the next cycles (read at cycle time through the late-bound layer) and expires;
 * - `start()` picks up a cycle a dead process left half done and resumes it from the harness's
 *   own checkpoint tables;
 * - live mode without a memory store stops the start and names the missing service; a bad
 *   `[worlds.orchestration]` key names the key;
 * - retention deletes old cycles with their world diff and history, and old expired directives;
 * - the service keys the harness declares name the real services, whose types fit.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { AgentRunnerKey, type AgentRunner } from '../../src/agent/index.js';
import { createApp, type App } from '../../src/app/app.js';
import { productModules } from '../../src/app/modules.js';
import { FakeClock, isSubconsciousError, sequentialIds, silentLogger } from '../../src/core/index.js';
import type { WorldModule } from '../../src/engine/index.js';
import { MemoryStoreKey, type MemoryStore } from '../../src/memory/index.js';
import {
  HarnessAgentKey,
  HarnessMemoryKey,
  HarnessStore,
  createHarness,
  harnessCheckpointer,
  offlineRuntime,
  orchestrationConfigSchema,
  orchestrationModule,
  type HarnessMemory,
  type HarnessRuntime,
  type OrchestrationTables,
  type ReasoningAgent,
} from '../../src/orchestration/index.js';
import type { CycleRow, SendResult } from '../../src/protocol/orchestration.js';
import { DEFAULT_STEERING_LINE, type SteeringCurrent, type SteeringDirective } from '../../src/protocol/steering.js';
import { tablesView } from '../../src/store/index.js';
import { STEERING_SYSTEM, SteeringStore, steeringModule, type SteeringTables } from '../../src/worlds/steering/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();
const MODULES: readonly WorldModule[] = [orchestrationModule, steeringModule];
const DAY = 24 * 3_600_000;

const system = (r: RecordedRequest) => String((r.body?.messages ?? []).find((m) => m.role === 'system')?.content ?? '');
const isSteering = (r: RecordedRequest) => system(r).startsWith(STEERING_SYSTEM.split('\n')[0]!);

let models: ModelServer;
/** What the steering reviewer answers next (then NONE). */
const steeringAnswers: string[] = [];

beforeAll(async () => {
  models = await startModelServer();
  models.handle((req) =>
    isSteering(req) ? { text: steeringAnswers.shift() ?? 'NONE' } : { status: 400, message: 'module test: only the steering review calls a model' },
  );
});
afterAll(async () => {
  await models.close();
});

async function openApp(store: TestStore, opts: { config?: string; clock?: FakeClock; modules?: readonly WorldModule[] } = {}): Promise<App> {
  if (opts.config !== undefined) writeFileSync(path.join(store.workspace, 'subconscious.toml'), opts.config);
  return createApp({
    workspace: store.workspace,
    modules: opts.modules ?? MODULES,
    log: silentLogger,
    ...(opts.clock ? { clock: opts.clock } : {}),
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
    // The app closes the store it is given; the test store is disposed after.
    store: { ...store, close: async () => undefined },
  });
}

const send = (app: App, text: string, channel = 'slack') => app.rpc.call('orchestration.send', { channel, text, wait: true }) as Promise<SendResult>;
const cycles = async (app: App) => ((await app.rpc.call('orchestration.cycles', { limit: 50 })) as CycleRow[]).reverse();

describe('the module list', () => {
  it('ships the harness before the steering world, which needs it', () => {
    const kinds = productModules.map((m) => m.kind);
    expect(kinds.indexOf('orchestration')).toBeGreaterThanOrEqual(0);
    expect(kinds.indexOf('orchestration')).toBeLessThan(kinds.indexOf('steering'));
    expect(steeringModule.tab).toBe('steering');
    expect(orchestrationModule.cli?.name).toBe('example');
  });

  it('the keys the harness declares for the memory store and the agent runner name the real services, and the real services fit', () => {
    expect(HarnessMemoryKey.id).toBe(MemoryStoreKey.id);
    expect(HarnessAgentKey.id).toBe(AgentRunnerKey.id);
    expectTypeOf<MemoryStore>().toExtend<HarnessMemory>();
    expectTypeOf<AgentRunner>().toExtend<ReasoningAgent>();
  });
});

describe.each(dialects)('orchestration and steering modules in the app on %s', (dialect) => {
  let store: TestStore;
  let app: App | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await store?.dispose();
    steeringAnswers.length = 0;
    models.reset();
    models.handle((req) =>
      isSteering(req) ? { text: steeringAnswers.shift() ?? 'NONE' } : { status: 400, message: 'module test: only the steering review calls a model' },
    );
  });

  it('a forwarded cycle wakes the steering world; its directive steers the next cycles through the late-bound layer, then expires', async () => {
    store = await openTestStore(dialect);
    app = await openApp(store);
    const directive = 'Stabilise the billing deploy before taking on new requests.';
    steeringAnswers.push(`STEERING_DIRECTIVE: ${directive}\nexpires_after_cycles: 2`);

    // Offline mode (the default): the first message holds one diff; no review, no model call.
    const first = await send(app, 'Acme asks why invoice 1042 was charged twice.');
    expect(first.cycle).toMatchObject({ status: 'done', mode: 'offline', gate: { forwarded: false, queued: 1, threshold: 3 }, directive: null });
    expect(models.chatRequests).toHaveLength(0);

    // A critical one: the gate forwards, the module's layer triggers the steering world's tick.
    const made = app.events.next('steering.directive');
    const second = await send(app, 'Critical outage: the billing deploy health check is failing.');
    expect(second.cycle).toMatchObject({ gate: { forwarded: true, reasons: ['escalation'] } });
    expect(second.cycle!.path.at(-1)).toBe('subconscious_eval');
    // In the app the subconscious layer is the steering world, in offline mode too (not the stand-in).
    expect(second.cycle!.event_log.at(-1)).toMatch(/subconscious_eval: forwarded to the steering world \(escalation\); steering: none; triggers cleared$/);
    const { data } = await made;
    expect(data).toMatchObject({ text: directive, cycle: 2, expires_at_cycle: 4, expires_after_cycles: 2 });
    expect(models.chatRequests.filter(isSteering)).toHaveLength(1);

    const current = (await app.rpc.call('steering.current', {})) as SteeringCurrent;
    expect(current).toMatchObject({
      directive: { text: directive, status: 'active', remaining_cycles: 2 },
      injected: directive,
      current_cycle: 2,
      reviewed_seq: 2,
    });

    // Cycles 3 and 4 are steered by it; cycle 5 is not. Cycle 5 is the third held diff since the
    // review: the gate forwards on the threshold and the steering world reviews again (NONE: idle).
    const idle = app.events.next('steering.reviewed', (d) => d.outcome === 'none');
    for (const n of [3, 4, 5]) await send(app, `Acme follow-up number ${n} about the refund.`);
    const all = await cycles(app);
    expect(all.map((c) => c.directive?.text ?? null)).toEqual([null, null, directive, directive, null]);
    expect(all.map((c) => c.status)).toEqual(['done', 'done', 'done', 'done', 'done']);
    expect(all[4]!.gate).toMatchObject({ forwarded: true, reasons: ['threshold'] });
    expect((await idle).data).toMatchObject({ rows: 3, reviewed_seq: 5 });

    const after = (await app.rpc.call('steering.current', {})) as SteeringCurrent;
    expect(after).toMatchObject({
      directive: null,
      injected: DEFAULT_STEERING_LINE,
      remaining_cycles: null,
      current_cycle: 5,
      reviewed_seq: 5,
      last_review: { outcome: 'none', rows: 3 },
    });
    const [listed] = (await app.rpc.call('steering.list', {})) as SteeringDirective[];
    expect(listed).toMatchObject({ text: directive, status: 'expired', remaining_cycles: 0 });
    expect(models.chatRequests.filter(isSteering)).toHaveLength(2);

    // The steering world ran as a registered world (its status is the engine's); the harness is a host, not a world.
    await vi.waitFor(async () => {
      const status = (await app!.rpc.call('subconscious.status', {})) as { instances: { world: string; total_ticks: number; running: boolean }[] };
      expect(status.instances.find((i) => i.world === 'steering')).toMatchObject({ total_ticks: 2, running: false });
      expect(status.instances.map((i) => i.world)).not.toContain('orchestration');
    });
  });

  it('start() resumes a cycle a dead process left half done, from the harness’s own checkpoint tables', async () => {
    store = await openTestStore(dialect);
    const db = tablesView<OrchestrationTables>(store.db);
    // An hour before this run's real clock: within retention. A clock months back let the retention
    // pass that follows the resumed cycle delete it before the test could list it (a CI flake).
    const earlier = new FakeClock(Date.now() - 3_600_000);
    const offline = offlineRuntime();
    let reached!: () => void;
    const inExecution = new Promise<void>((r) => (reached = r));
    // "The previous process": its reasoning tier is still running when it goes away.
    const blocked: HarnessRuntime = {
      ...offline,
      execute: async (_input, ctx) => {
        reached();
        return new Promise((_, reject) => ctx.signal?.addEventListener('abort', () => reject(ctx.signal!.reason as Error), { once: true }));
      },
    };
    const previous = createHarness({
      db,
      clock: earlier,
      ids: sequentialIds('old'),
      log: silentLogger,
      emit: () => undefined,
      settings: orchestrationConfigSchema.parse({}),
      runtime: blocked,
      checkpointer: harnessCheckpointer(db, earlier),
      ownerTag: 'previous',
    });
    const sent = await previous.send('slack', 'Prepare the Acme renewal summary.');
    await inExecution;
    await previous.close();
    const threads = await store.db.selectFrom('orchestration_graph_threads').selectAll().execute();
    expect(threads).toEqual([expect.objectContaining({ thread_id: `orchestration:${sent.cycle_id}`, status: 'running', next_node: 'agent_execution' })]);
    expect(await store.db.selectFrom('graph_threads').selectAll().execute()).toEqual([]); // not the engine's tables

    app = await openApp(store);
    const done = app.events.next('orchestration.cycle', (d) => d.cycle_id === sent.cycle_id && d.status === 'done');
    await app.start();
    await done;
    const [c] = await cycles(app);
    expect(c).toMatchObject({ id: sent.cycle_id, status: 'done' });
    // Resumed, not restarted: ingestion ran in the previous process (its clock), not again now.
    const state = (await new HarnessStore(db).loadState())!.state;
    expect(state.messages.find((m) => m.role === 'user')?.at).toBe(earlier.now());
    expect(await store.db.selectFrom('orchestration_graph_threads').selectAll().execute()).toEqual([]);
    // The scheduler started too: let the steering world's first tick finish before the app closes.
    await vi.waitFor(async () => {
      const status = (await app!.rpc.call('subconscious.status', {})) as { instances: { world: string; total_ticks: number; running: boolean }[] };
      expect(status.instances.find((i) => i.world === 'steering')).toMatchObject({ running: false });
      expect(status.instances.find((i) => i.world === 'steering')!.total_ticks).toBeGreaterThan(0);
    });
  });

  it('the harness checkpointer keeps the whole checkpoint contract in the harness’s own tables', async () => {
    store = await openTestStore(dialect);
    const clock = new FakeClock();
    const cp = harnessCheckpointer(tablesView<OrchestrationTables>(store.db), clock);
    await cp.start({ threadId: 't1', graph: 'g', next: 'a', stateJson: '{"n":0}' });
    await cp.put({ threadId: 't1', seq: 1, node: 'a', updateJson: '{"n":1}', stateJson: '{"n":1}', next: 'b' });
    await expect(cp.put({ threadId: 't1', seq: 1, node: 'a', updateJson: '{}', stateJson: '{}', next: 'b' })).rejects.toThrow(); // a stale writer
    expect(await cp.load('t1')).toMatchObject({ status: 'running', next: 'b', seq: 1, state: { n: 1 } });
    expect((await cp.unfinished('g')).map((t) => t.threadId)).toEqual(['t1']);
    expect(await cp.checkpoints('t1')).toEqual([expect.objectContaining({ seq: 1, node: 'a', update: { n: 1 } })]);
    expect(await cp.markFailed('t1', new Error('stopped'))).toBe(true);
    await cp.start({ threadId: 't2', graph: 'g', next: 'a', stateJson: '{}' });
    await clock.advance(1000);
    expect(await cp.pruneFinished(500)).toBe(1); // the failed one, not the running one
    expect(await cp.prune('t2')).toBe(true);
    const rows = async (t: string) => Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(t)}`.execute(store.db)).rows[0]!.n);
    expect([await rows('orchestration_graph_threads'), await rows('orchestration_graph_checkpoints')]).toEqual([0, 0]);
    // The engine's tables were never touched.
    expect([await rows('graph_threads'), await rows('graph_checkpoints')]).toEqual([0, 0]);
  });

  it('live mode without a memory store does not start, and names the missing service and the key', async () => {
    store = await openTestStore(dialect);
    const err = await openApp(store, { config: '[worlds.orchestration]\nmode = "live"\n' }).then(
      (a) => {
        app = a;
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(isSubconsciousError(err, 'config_invalid')).toBe(true);
    expect((err as Error).message).toContain('worlds.orchestration.mode = "live" needs the memory store');
    expect((err as Error).message).toContain('"memory.store"');
    expect((err as { hint?: string }).hint).toMatch(/mode = "offline"/);
  });

  it('a bad [worlds.orchestration] or [worlds.steering] key stops the start, naming it', async () => {
    store = await openTestStore(dialect);
    for (const [config, key] of [
      ['[worlds.orchestration]\nmode = "fast"\n', 'worlds.orchestration.mode'],
      ['[worlds.orchestration]\nretention_days = 0\n', 'worlds.orchestration.retention_days'],
      ['[worlds.steering]\ninterval_minutes = 0\n', 'worlds.steering.interval_minutes'],
      ['[worlds.steering]\nbogus = 1\n', 'worlds.steering: unknown key "bogus"'],
    ] as const) {
      const err = await openApp(store, { config }).then(
        async (a) => {
          await a.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(isSubconsciousError(err, 'config_invalid'), config).toBe(true);
      expect((err as Error).message, config).toContain(key);
    }
  });

  it('[worlds.steering] enabled = false: the harness runs, forwarded cycles wake nothing, and the reasoning tier gets no directive', async () => {
    store = await openTestStore(dialect);
    app = await openApp(store, { config: '[worlds.steering]\nenabled = false\n' });
    const r = await send(app, 'Critical incident: payments are failing.');
    expect(r.cycle).toMatchObject({ status: 'done', gate: { forwarded: true }, directive: null });
    await vi.waitFor(async () => {
      const status = (await app!.rpc.call('subconscious.status', {})) as { instances: { world: string; enabled: boolean; total_ticks: number }[] };
      expect(status.instances.find((i) => i.world === 'steering')).toMatchObject({ enabled: false, total_ticks: 0 });
    });
    expect(models.chatRequests).toEqual([]);
  });

  it('retention: a cycle committed a month later deletes older cycles with their world diff and history rows', async () => {
    store = await openTestStore(dialect);
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 9, 0, 0));
    app = await openApp(store, { clock });
    for (let i = 1; i <= 3; i++) await send(app, `Acme request ${i} about invoices.`);
    const count = async (table: 'orchestration_cycles' | 'orchestration_world_diff' | 'orchestration_history') =>
      Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(store.db)).rows[0]!.n);
    expect([await count('orchestration_cycles'), await count('orchestration_world_diff'), await count('orchestration_history')]).toEqual([3, 3, 3]);

    await clock.advance(31 * DAY);
    await send(app, 'Acme request 4, a month later.');
    expect((await cycles(app)).map((c) => c.seq)).toEqual([4]);
    expect([await count('orchestration_cycles'), await count('orchestration_world_diff'), await count('orchestration_history')]).toEqual([1, 1, 1]);
    // The harness state (its queued diffs, semantic history) is not retention's business.
    expect(((await app.rpc.call('orchestration.state', {})) as { cycle: number }).cycle).toBe(4);
  });

  it('retention by count keeps the newest cycles, never an open one; expired directives go after retention_days', async () => {
    store = await openTestStore(dialect);
    const db = tablesView<OrchestrationTables>(store.db);
    const h = new HarnessStore(db);
    for (let i = 1; i <= 5; i++) await h.queue({ id: `c${i}`, channel: 'slack', text: `m${i}`, mode: 'offline', owner: 'test', cronDue: false, at: i });
    for (const id of ['c1', 'c3', 'c4', 'c5']) await store.db.updateTable('orchestration_cycles').set({ status: 'done' }).where('id', '=', id).execute();
    // c2 is still queued: it survives even though it is past the bound.
    expect(await h.prune({ before: 0, keep: 2 })).toMatchObject({ up_to_seq: 3, cycles: 2 });
    expect((await store.db.selectFrom('orchestration_cycles').select('id').orderBy('seq').execute()).map((r) => r.id)).toEqual(['c2', 'c4', 'c5']);
    expect(await h.prune({ before: 0, keep: 2 })).toMatchObject({ cycles: 0 });

    const steering = new SteeringStore(tablesView<SteeringTables>(store.db));
    const directive = (tick: string, cycle: number, expires: number, at: number) =>
      steering.commitReview({
        tickId: tick,
        newId: tick,
        fromSeq: cycle,
        toSeq: cycle,
        rows: 1,
        cycle,
        directive: { text: tick, expires_after_cycles: expires },
        at,
      });
    await directive('old-expired', 1, 2, 0);
    await directive('old-running', 8, 20, 0);
    await directive('new-expired', 2, 1, 50 * DAY);
    expect(await steering.prune({ before: 30 * DAY, currentCycle: 10 })).toBe(1);
    expect((await steering.list(10, 10)).map((d) => d.id).sort()).toEqual(['new-expired', 'old-running']);
  });
});
