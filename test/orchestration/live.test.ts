/**
 * Live mode end to end, on both dialects: the quick tier on the `local` model, the reasoning tier
 * on the real agent runner, both against the scripted OpenAI-compatible server on loopback;
 * retrieval and eviction through a small in-process memory store that really searches and stores;
 * the steering world ticking through the engine's `Instance`, woken by the gate.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, sequentialIds, silentLogger, uuid, type BusEvent } from '../../src/core/index.js';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { Instance, type TickOutcome } from '../../src/engine/index.js';
import { StoreCheckpointer } from '../../src/graph/index.js';
import { createLlm, type LlmService } from '../../src/llm/index.js';
import {
  HarnessStore,
  createHarness,
  orchestrationConfigSchema,
  orchestrationMigrations,
  type HarnessService,
  type OrchestrationConfigInput,
  type OrchestrationTables,
} from '../../src/orchestration/index.js';
import type { OrchestrationEvents } from '../../src/protocol/orchestration.js';
import { DEFAULT_STEERING_LINE, type SteeringEvents } from '../../src/protocol/steering.js';
import { applyMigrations, tablesView, type DialectName } from '../../src/store/index.js';
import { createSteeringWorld, steeringConfigSchema, steeringMigrations, type SteeringTables, type SteeringWorld } from '../../src/worlds/steering/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';
import { InProcessMemory } from './support/memory.js';

const dialects = await testDialects();
const LOCAL = 'local-model';
const AGENT = 'agent-model';

const message = (r: RecordedRequest, role: 'system' | 'user') => String((r.body?.messages ?? []).find((m) => m.role === role)?.content ?? '');
const isReasoning = (r: RecordedRequest) => r.body?.model === AGENT;
/** The text inside a fence of the given label (the host JSON-escapes it). */
const fenced = (prompt: string, label: string) => {
  const m = new RegExp(`<untrusted-data label="${label}">\\n(".*")\\n</untrusted-data>`).exec(prompt);
  return m ? (JSON.parse(m[1]!) as string) : '';
};
const isCompress = (r: RecordedRequest) => message(r, 'system').startsWith("You compress an orchestration cycle's execution record");

interface Script {
  reasoning: string[];
  steering: string[];
  compress: string[];
  /** The compression call answers 500 (the model is down). */
  failCompress?: boolean;
}

interface LiveRig {
  store: TestStore;
  server: ModelServer;
  llm: LlmService;
  memory: InProcessMemory;
  harness: HarnessService;
  world: SteeringWorld;
  instance: Instance;
  script: Script;
  events: Array<{ type: string; data: unknown }>;
  reviews: Promise<TickOutcome>[];
  dispose(): Promise<void>;
}

async function liveRig(dialect: DialectName, settings: OrchestrationConfigInput = {}): Promise<LiveRig> {
  const store = await openTestStore(dialect);
  await applyMigrations(store.db, store.dialect, { ...orchestrationMigrations, ...steeringMigrations });
  const clock = new FakeClock();
  const server = await startModelServer({ models: [LOCAL, AGENT] });
  const llm = createLlm({
    models: { local: { baseUrl: server.baseUrl, model: LOCAL, timeoutMs: 20_000 }, agent: { baseUrl: server.baseUrl, model: AGENT, timeoutMs: 20_000 } },
    db: store.db,
    clock,
    ids: uuid,
    probeCacheMs: 0,
  });
  const bus = new EventBus(() => clock.now());
  const busEvents: BusEvent[] = [];
  bus.subscribe((e) => busEvents.push(e));
  const mcp = new McpManager({ servers: [], clock });
  const runner = new AgentRunner({ llm, mcp, approvals: new ApprovalStore({ db: store.db, clock, ids: uuid, events: bus }), clock, ids: uuid, events: bus });
  const memory = new InProcessMemory();
  await memory.store({
    namespace: 'notes',
    external_id: 'acme-billing',
    title: 'Acme billing notes',
    body: 'Acme was double-charged on invoice 1042 in March; refunds over 500 EUR go through finance.',
    metadata: {},
  });
  const events: Array<{ type: string; data: unknown }> = [];
  const harnessDb = tablesView<OrchestrationTables>(store.db);
  const world = createSteeringWorld({
    db: tablesView<SteeringTables>(store.db),
    harness: new HarnessStore(harnessDb),
    settings: steeringConfigSchema.parse({}),
    emit: <K extends keyof SteeringEvents & string>(type: K, data: SteeringEvents[K]) => void events.push({ type, data }),
  });
  const instance = new Instance(world, {
    db: store.db,
    llm,
    clock,
    ids: uuid,
    events: bus,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(store.db, clock),
  });
  const reviews: Promise<TickOutcome>[] = [];
  const harness = createHarness({
    db: harnessDb,
    clock,
    ids: sequentialIds('cycle'),
    log: silentLogger,
    emit: <K extends keyof OrchestrationEvents & string>(type: K, data: OrchestrationEvents[K]) => void events.push({ type, data }),
    settings: orchestrationConfigSchema.parse({ mode: 'live', servers: [], ...settings }),
    llm,
    agent: runner,
    retriever: memory,
    eviction: memory,
    steering: world.directives,
    checkpointer: new StoreCheckpointer(store.db, clock),
    // The event trigger: a forwarded cycle wakes the steering world at once.
    requestReview: () => void reviews.push(instance.tick()),
  });

  const script: Script = { reasoning: [], steering: [], compress: [] };
  server.handle((req) => {
    const sys = message(req, 'system');
    if (isReasoning(req))
      return { text: script.reasoning.shift() ?? 'Done.\nENTITY: acme — follow-up handled\nWORLD_DIFF: acme: follow-up handled | delta: 0.1' };
    if (sys.includes('Turn the channel message into ONE macro instruction')) return { text: `Resolve: ${fenced(message(req, 'user'), 'channel_message')}` };
    if (sys.includes('The reasoning layer has finished')) return { text: 'Done: the refund for invoice 1042 is on its way.' };
    if (isCompress(req) && script.failCompress) return { status: 500, message: 'compression model crashed' };
    if (isCompress(req)) return { text: script.compress.shift() ?? 'acme invoice 1042: refund handled' };
    if (sys.includes('deep reflection layer')) return { text: script.steering.shift() ?? 'NONE' };
    return { status: 500, message: `unexpected request: ${sys.slice(0, 80)}` };
  });

  return {
    store,
    server,
    llm,
    memory,
    harness,
    world,
    instance,
    script,
    events,
    reviews,
    async dispose() {
      await Promise.allSettled(reviews);
      await instance.stop();
      await harness.close();
      await runner.cancelAll();
      await mcp.close();
      await server.close();
      await store.dispose();
    },
  };
}

describe.each(dialects)('live harness on %s', (dialect) => {
  let rig: LiveRig;
  beforeEach(async () => {
    rig = await liveRig(dialect);
  });
  afterEach(async () => {
    await rig.dispose();
  });

  it('a directive produced in one cycle steers the next cycles’ reasoning prompt, and disappears when it expires', async () => {
    const directive = 'Treat every Acme billing request as part of one duplicate-charge investigation.';
    rig.script.reasoning.push(
      'Refund approved for invoice 1042.\nENTITY: acme — refund approved for invoice 1042\nWORLD_DIFF: acme: refund approved | delta: 0.4\nESCALATE: third duplicate charge for Acme this quarter',
    );
    rig.script.steering.push(`STEERING_DIRECTIVE: ${directive}\nexpires_after_cycles: 2`);

    // Cycle 1: the reasoning tier escalates; the gate forwards; the steering world reviews at once.
    const first = await rig.harness.send('slack', 'Acme says invoice 1042 was charged twice again.', { wait: true });
    expect(first.cycle).toMatchObject({
      status: 'done',
      escalation: 'third duplicate charge for Acme this quarter',
      gate: { forwarded: true, reasons: ['escalation'] },
    });
    expect(first.cycle!.path.at(-1)).toBe('subconscious_eval');
    expect(rig.reviews).toHaveLength(1);
    expect((await rig.reviews[0]!).kind).toBe('committed');
    expect(rig.events.find((e) => e.type === 'steering.directive')?.data).toMatchObject({ text: directive, cycle: 1, expires_at_cycle: 3 });

    for (let i = 2; i <= 4; i++) await rig.harness.send('slack', `Acme follow-up number ${i} about invoice 1042.`, { wait: true });

    const reasoning = rig.server.chatRequests.filter(isReasoning);
    expect(reasoning).toHaveLength(4);
    const systems = reasoning.map((r) => message(r, 'system'));
    // Cycle 1: no directive yet — the default line.
    expect(systems[0]).toContain(DEFAULT_STEERING_LINE);
    expect(systems[0]).not.toContain(directive);
    // Cycles 2 and 3: the directive, fenced, instead of the default line.
    for (const s of [systems[1]!, systems[2]!]) {
      expect(s).toContain(`<untrusted-data label="steering_directive">\n${JSON.stringify(directive)}\n</untrusted-data>`);
      expect(s).not.toContain(DEFAULT_STEERING_LINE);
    }
    // Cycle 4: expired after 2 cycles — the default line again.
    expect(systems[3]).toContain(DEFAULT_STEERING_LINE);
    expect(systems[3]).not.toContain(directive);

    const cycles = (await rig.harness.cycles(10)).reverse();
    expect(cycles.map((c) => c.directive?.text ?? null)).toEqual([null, directive, directive, null]);
    expect(await rig.world.service.current()).toMatchObject({ directive: null, injected: DEFAULT_STEERING_LINE, current_cycle: 4 });
    const [listed] = await rig.world.service.list();
    expect(listed).toMatchObject({ text: directive, status: 'expired', remaining_cycles: 0 });

    // Retrieval came from the memory store's recall, fenced into the reasoning prompt.
    expect(rig.memory.queries[0]).toEqual({ query: 'Resolve: Acme says invoice 1042 was charged twice again.', namespace: undefined, limit: 5 });
    expect(message(reasoning[0]!, 'user')).toContain('<untrusted-data label="memory">');
    expect(message(reasoning[0]!, 'user')).toContain('double-charged on invoice 1042');
    expect(cycles[0]!.event_log.some((l) => l.includes('retrieved 1 memory trace (Acme billing notes)'))).toBe(true);

    // Every model call is in the ledger, by tier. Cycle 4's review (the gate forwarded it on the
    // threshold) may still be on its way to its steering call: let every review end first, or its
    // call can start after the ledger looked settled and be read as `pending`.
    await Promise.all(rig.reviews);
    // (A call still in flight is a `pending` row until it ends: wait for the ledger to settle.)
    const read = () => rig.store.db.selectFrom('model_calls').select(['world', 'purpose', 'role', 'outcome']).execute();
    await expect.poll(async () => (await read()).filter((r) => r.outcome === 'pending').length, { timeout: 20_000 }).toBe(0);
    const ledger = await read();
    const purposes = (world: string) => new Set(ledger.filter((r) => r.world === world).map((r) => r.purpose));
    expect(purposes('orchestration')).toEqual(new Set(['quick_instruct', 'reasoning', 'quick_respond', 'compress']));
    expect(purposes('steering')).toEqual(new Set(['steering']));
    expect(ledger.filter((r) => r.outcome !== 'ok')).toEqual([]);

    // Cycle 4 queued its third diff since the last review: the gate forwarded on the threshold.
    expect(cycles[3]!.gate).toMatchObject({ forwarded: true, reasons: ['threshold'] });
  });

  it('a quick-tier answer and the reasoning trailer lines shape the cycle; the reply stays clean', async () => {
    rig.script.reasoning.push(
      'Checked the ledger: the charge posted twice.\nENTITY: acme — duplicate charge confirmed\nENTITY: ledger — two postings for invoice 1042\nWORLD_DIFF: ledger: duplicate posting found | delta: 0.7 | critical',
    );
    const { cycle } = await rig.harness.send('email', 'Please check the Acme ledger for invoice 1042.', { wait: true });
    expect(cycle!.world_diff).toEqual([expect.objectContaining({ entity: 'ledger', mutation: 'ledger: duplicate posting found', delta: 0.7, critical: true })]);
    expect(cycle!.response).toBe('Done: the refund for invoice 1042 is on its way.');
    const state = await rig.harness.state();
    expect(state.semantic_history.map((e) => [e.entity, e.trace])).toEqual([
      ['acme', 'duplicate charge confirmed'],
      ['ledger', 'two postings for invoice 1042'],
    ]);
    // The quick tier's second pass saw the reply without the trailer lines.
    const respond = rig.server.chatRequests.find((r) => message(r, 'system').includes('The reasoning layer has finished'))!;
    expect(message(respond, 'user')).toContain('Checked the ledger: the charge posted twice.');
    expect(message(respond, 'user')).not.toContain('WORLD_DIFF');
  });

  it('compression on the local model: an over-budget summary is cut to the budget after one call', async () => {
    const long = 'acme '.repeat(2000).trim();
    rig.script.compress.push(long);
    const { cycle } = await rig.harness.send('slack', 'Acme asks about invoice 1042 again.', { wait: true });
    const calls = rig.server.chatRequests.filter(isCompress);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body?.temperature).toBe(0);
    const c = cycle!.compressed!;
    expect(c).toMatchObject({ attempts: 1, truncated: true });
    expect(c.summary_tokens).toBeLessThanOrEqual(c.budget_tokens);
    expect(c.summary_tokens).toBeLessThan(c.input_tokens);
    expect(c.summary.startsWith('acme acme')).toBe(true);
  });

  it('a short live cycle keeps its meaning after compression: at least 40 tokens, one call', async () => {
    // The model summarises faithfully: everything the record says, a little shorter.
    const meaning =
      'Acme invoice 1042 double charge: reasoning approved a refund of 120 EUR through finance; quick tier confirmed on slack; world diff acme refund approved delta 0.2; no escalation; gate held one diff.';
    rig.script.compress.push(meaning);
    const { cycle } = await rig.harness.send('slack', 'Acme?', { wait: true });
    const c = cycle!.compressed!;
    // The audit's case: a cycle record under 200 tokens (20:1 gave it 4 tokens, then asked twice and cut it to a stub).
    expect(c.input_tokens).toBeLessThan(200);
    expect(c.budget_tokens).toBeGreaterThanOrEqual(40);
    expect(rig.server.chatRequests.filter(isCompress)).toHaveLength(1);
    expect(c).toMatchObject({ attempts: 1, truncated: false, summary: meaning });
    expect(c.summary_tokens).toBeGreaterThanOrEqual(40);
    const ledger = await rig.store.db.selectFrom('model_calls').select('purpose').where('purpose', '=', 'compress').execute();
    expect(ledger).toHaveLength(1);
  });

  it('a failing reasoning run fails the cycle and leaves state and memory as they were', async () => {
    await rig.harness.send('slack', 'Acme asks about invoice 1042.', { wait: true });
    const before = await rig.harness.state();
    const writes = rig.memory.writes.length;
    rig.server.handle((req) => (isReasoning(req) ? { status: 500, message: 'agent model crashed' } : { text: 'Resolve the request.' }));
    const failed = await rig.harness.send('slack', 'Acme asks again.', { wait: true });
    expect(failed.cycle).toMatchObject({ status: 'failed', world_diff: [], compressed: null });
    expect(failed.cycle!.error).toMatch(/The reasoning run failed: .*agent model crashed/);
    expect(await rig.harness.state()).toEqual(before);
    expect(rig.memory.writes).toHaveLength(writes);
  });

  it('memory being down degrades retrieval, not the cycle', async () => {
    rig.memory.failRecall = new Error('memory store unreachable');
    const { cycle } = await rig.harness.send('slack', 'Acme asks about invoice 1042.', { wait: true });
    expect(cycle!.status).toBe('done');
    expect(cycle!.event_log.some((l) => l.includes('retrieval failed: memory store unreachable'))).toBe(true);
    const reasoning = rig.server.chatRequests.find(isReasoning)!;
    expect(message(reasoning, 'user')).toContain('Retrieved from long-term memory: nothing relevant.');
  });
});

describe.each(dialects)('live eviction on %s', (dialect) => {
  let rig: LiveRig;
  beforeEach(async () => {
    rig = await liveRig(dialect, { context_window_tokens: 128 });
  });
  afterEach(async () => {
    await rig.dispose();
  });

  it('context pressure evicts semantic history into memory documents, and a later cycle recalls it', async () => {
    const vendors = ['Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark'];
    for (const v of vendors) {
      rig.script.reasoning.push(
        `Reviewed ${v}.\nENTITY: ${v.toLowerCase()} — ${v} renewal terms reviewed: net-60 payment, 3% uplift, auto-renew clause flagged\nWORLD_DIFF: ${v.toLowerCase()}: renewal reviewed | delta: 0.2`,
      );
    }
    let evictedAt = 0;
    for (const [i, v] of vendors.entries()) {
      const { cycle } = await rig.harness.send('slack', `Review the ${v} renewal.`, { wait: true });
      if (cycle!.evictions.length) {
        evictedAt = i + 1;
        break;
      }
    }
    expect(evictedAt).toBeGreaterThan(0);
    const [cycle] = await rig.harness.cycles(1);
    const state = await rig.harness.state();
    // Into the memory store (namespace `orchestration`), not the state.
    expect(state.long_term_memory).toBe(0);
    const evicted = cycle!.evictions;
    expect(evicted.length).toBe(evictedAt - 2);
    for (const e of evicted) {
      const [, id] = /^semantic:(.+)$/.exec(e.external_id)!;
      const doc = rig.memory.get('orchestration', e.external_id)!;
      expect(doc).toMatchObject({
        namespace: 'orchestration',
        title: e.title,
        metadata: expect.objectContaining({ kind: 'semantic_trace', source: 'orchestration' }),
      });
      expect(doc.body).toMatch(/renewal terms reviewed/);
      expect(id).toMatch(/^c\d+-1$/);
    }
    expect(state.semantic_history[0]).toMatchObject({ kind: 'eviction_marker' });
    expect(state.semantic_history).toHaveLength(3);
    expect(state.context_utilization).toBeLessThan(0.85);

    // A later cycle about the first vendor recalls its evicted trace from the memory store.
    rig.memory.queries.length = 0;
    await rig.harness.send('slack', 'What were the Globex renewal terms?', { wait: true });
    const last = rig.server.chatRequests.filter(isReasoning).at(-1)!;
    expect(message(last, 'user')).toContain('Globex renewal terms reviewed: net-60 payment');
  });

  it('a cycle that fails after eviction (compression down) writes nothing to memory; its successful retry does', async () => {
    const vendors = ['Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark'];
    let evicted = 0;
    for (const v of vendors) {
      const reply = `Reviewed ${v}.\nENTITY: ${v.toLowerCase()} — ${v} renewal terms reviewed: net-60 payment, 3% uplift, auto-renew clause flagged\nWORLD_DIFF: ${v.toLowerCase()}: renewal reviewed | delta: 0.2`;
      // First the cycle fails at compression, which runs after the eviction decision in the same node.
      const before = await rig.harness.state();
      const writes = rig.memory.writes.length;
      rig.script.failCompress = true;
      rig.script.reasoning.push(reply);
      const failed = await rig.harness.send('slack', `Review the ${v} renewal.`, { wait: true });
      expect(failed.cycle!.status).toBe('failed');
      expect(rig.memory.writes).toHaveLength(writes);
      expect(await rig.harness.state()).toEqual(before);
      // Then the same message succeeds.
      rig.script.failCompress = false;
      rig.script.reasoning.push(reply);
      const { cycle } = await rig.harness.send('slack', `Review the ${v} renewal.`, { wait: true });
      expect(cycle!.status).toBe('done');
      if (cycle!.evictions.length) {
        evicted = cycle!.evictions.length;
        for (const e of cycle!.evictions) expect(rig.memory.get('orchestration', e.external_id)).toMatchObject({ title: e.title });
        expect(rig.memory.writes.slice(writes).map((w) => w.external_id)).toEqual(cycle!.evictions.map((e) => e.external_id));
        break;
      }
    }
    expect(evicted).toBeGreaterThan(0);
  });

  it('memory down at eviction: the cycle commits, the traces wait in the state and the next cycle stores them', async () => {
    const vendors = ['Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark'];
    rig.memory.failStore = new Error('memory store unreachable');
    let evictions: { external_id: string }[] = [];
    for (const v of vendors) {
      rig.script.reasoning.push(
        `Reviewed ${v}.\nENTITY: ${v.toLowerCase()} — ${v} renewal terms reviewed: net-60 payment, 3% uplift, auto-renew clause flagged\nWORLD_DIFF: ${v.toLowerCase()}: renewal reviewed | delta: 0.2`,
      );
      const { cycle } = await rig.harness.send('slack', `Review the ${v} renewal.`, { wait: true });
      expect(cycle!.status).toBe('done');
      evictions = cycle!.evictions;
      if (evictions.length) break;
    }
    expect(evictions.length).toBeGreaterThan(0);
    for (const e of evictions) expect(rig.memory.get('orchestration', e.external_id)).toBeUndefined();
    rig.memory.failStore = undefined;
    const { cycle } = await rig.harness.send('slack', 'Acme asks about invoice 1042.', { wait: true });
    expect(cycle!.status).toBe('done');
    for (const e of evictions) expect(rig.memory.get('orchestration', e.external_id)).toBeDefined();
    // Written once: a further cycle does not store them again.
    const writes = rig.memory.writes.length;
    await rig.harness.send('slack', 'Acme asks again.', { wait: true });
    expect(rig.memory.writes.slice(writes).filter((w) => evictions.some((e) => e.external_id === w.external_id))).toEqual([]);
  });
});

describe.each(dialects)('mode "auto" (the default) on %s', (dialect) => {
  let rig: LiveRig;
  beforeEach(async () => {
    rig = await liveRig(dialect, { mode: 'auto' });
  });
  afterEach(async () => {
    await rig.dispose();
  });

  it('runs live while the local model answers, the stand-ins while it does not, and says why', async () => {
    expect(orchestrationConfigSchema.parse({}).mode).toBe('auto');
    expect(await rig.harness.state()).toMatchObject({ mode: 'live', configured_mode: 'auto', mode_reason: null });
    const live = await rig.harness.send('slack', 'Acme asks about invoice 1042.', { wait: true });
    expect(live.cycle).toMatchObject({ status: 'done', mode: 'live' });
    const reasoningCalls = rig.server.chatRequests.filter(isReasoning).length;
    expect(reasoningCalls).toBe(1);

    // The model server goes away: the next cycle answers from the stand-ins, and the state says why.
    rig.server.modelsFault = { status: 503, message: 'model loading' };
    const state = await rig.harness.state();
    expect(state).toMatchObject({ mode: 'offline', configured_mode: 'auto' });
    expect(state.mode_reason).toMatch(/the local model does not answer .*offline stand-ins/);
    const offline = await rig.harness.send('slack', 'Acme asks again.', { wait: true });
    expect(offline.cycle).toMatchObject({ status: 'done', mode: 'offline' });
    expect(rig.server.chatRequests.filter(isReasoning)).toHaveLength(reasoningCalls);

    // Back: live again.
    rig.server.modelsFault = undefined;
    expect((await rig.harness.send('slack', 'Acme, third time.', { wait: true })).cycle).toMatchObject({ status: 'done', mode: 'live' });
  });
});
