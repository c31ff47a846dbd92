/**
 * Seed 5's integration list on the offline harness graph (deterministic stand-ins, no model, no
 * store), plus the guardrails around it: the second quick-tier pass, the circuit breaker, the cron
 * trigger, the reducer and the diff chain.
 */
import { describe, expect, it } from 'vitest';
import { isSubconsciousError } from '../../src/core/index.js';
import {
  EXAMPLE_PACKETS,
  GENESIS_SIGNATURE,
  applyPatch,
  buildHarnessGraph,
  initialState,
  offlineRuntime,
  orchestrationConfigSchema,
  runClosedLoopExample,
  startCycle,
  verifyChain,
  type CycleContext,
  type MemoryRecord,
  type OrchestrationConfigInput,
  type SystemState,
  type WorldDiff,
} from '../../src/orchestration/index.js';

const MEMORY: MemoryRecord[] = [
  { id: 'm-billing', title: 'Billing runbook', body: 'Invoice disputes: refund within 14 days.', cycle: 0 },
  { id: 'm-deploy', title: 'Deploy checklist', body: 'Roll back on a failing health check.', cycle: 0 },
];

const FULL_PATH = ['channel_ingestion', 'frontend_agent', 'agent_execution', 'summarization_gate', 'frontend_agent', 'context_manager_hook'];

function harness(settingsInput: OrchestrationConfigInput = {}) {
  const graph = buildHarnessGraph();
  const settings = orchestrationConfigSchema.parse(settingsInput);
  let seq = 0;
  return {
    settings,
    async send(state: SystemState, channel: string, text: string, opts: { cronDue?: boolean } = {}): Promise<SystemState> {
      seq++;
      const ctx: CycleContext = { runtime: offlineRuntime(), settings, now: () => 1_000 * seq };
      return graph.invoke(startCycle(state, { cycle_id: `c${seq}`, channel, text }, seq, opts), { ctx });
    },
  };
}

describe('closed-loop harness, offline (seed 5)', () => {
  it('a normal run retrieves memory and holds a single diff below the gate', async () => {
    const h = harness();
    const s = await h.send(initialState({ long_term_memory: MEMORY }), 'slack', 'Acme wants a refund for a duplicate invoice.');

    expect(s.retrieved_context.map((r) => r.id)).toEqual(['m-billing']);
    expect(s.retrieved_context[0]!.snippet).toContain('refund within 14 days');
    expect(s.sequential_diffs).toHaveLength(1);
    expect(s.gate).toEqual({ forwarded: false, reasons: [], queued: 1, threshold: 3 });
    expect(s.gated_world_summary).toBeNull();
    expect(s.trigger_subconscious).toBe(false);
    expect(s.path).toEqual(FULL_PATH);
    expect(s.event_log.some((l) => /summarization_gate: held 1 diff \(forwards at 3\)/.test(l))).toBe(true);
    // The reasoning stand-in used what it retrieved.
    expect(s.agent_reply).toContain('Recalled 1 trace: Billing runbook');
  });

  it('runs the quick tier twice: instructions first, then the channel response from the reply', async () => {
    const h = harness();
    const s = await h.send(initialState(), 'telegram', 'Book the team offsite venue for March.');
    expect(s.path.filter((n) => n === 'frontend_agent')).toHaveLength(2);
    expect(s.agent_instructions).toBe('Resolve the telegram request: Book the team offsite venue for March.');
    expect(s.agent_reply).toMatch(/^Handled /);
    expect(s.channel_response).toBe(`[telegram] ${s.agent_reply!.split('. ')[0]!.replace(/\.$/, '')}.`);
    const frontend = s.event_log.filter((l) => l.includes('frontend_agent'));
    expect(frontend[0]).toMatch(/deferred to reasoning/);
    expect(frontend[1]).toMatch(/compiled the channel response/);
    expect(s.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(s.messages[1]!.text).toBe(s.channel_response);
  });

  it('a critical escalation forces the gate and routes through subconscious_eval', async () => {
    const h = harness();
    const s = await h.send(initialState(), 'pagerduty', 'Critical anomaly: the payment ledger totals drifted overnight.');

    expect(s.escalation).toMatch(/critical, anomaly/);
    expect(s.gate).toEqual({ forwarded: true, reasons: ['escalation'], queued: 1, threshold: 3 });
    expect(s.gated_world_summary).toMatchObject({ critical_event_count: 1, diff_count: 1, reasons: ['escalation'] });
    expect(s.sequential_diffs).toEqual([]);
    expect(s.path).toEqual([...FULL_PATH, 'subconscious_eval']);
    expect(s.subconscious_steering).toBe('Stabilise first: investigate the payment anomaly before taking on new work.');
    // The circuit breaker: the review cleared the trigger it answered.
    expect(s.trigger_subconscious).toBe(false);
    expect(s.cron_due).toBe(false);
  });

  it('three sequential diffs trigger the gate without an anomaly', async () => {
    const h = harness();
    let s = initialState();
    const gates = [];
    const diffs: WorldDiff[] = [];
    for (const text of ['Order more coffee beans.', 'Renew the domain name.', 'Schedule the quarterly review.']) {
      s = await h.send(s, 'slack', text);
      gates.push(s.gate);
      diffs.push(...s.cycle_diffs);
      expect(s.escalation).toBeNull();
    }
    expect(gates.map((g) => g?.forwarded)).toEqual([false, false, true]);
    expect(gates[2]).toEqual({ forwarded: true, reasons: ['threshold'], queued: 3, threshold: 3 });
    expect(s.gated_world_summary).toMatchObject({ diff_count: 3, critical_event_count: 0, reasons: ['threshold'] });
    expect(s.gated_world_summary!.first_signature).toBe(diffs[0]!.signature);
    expect(s.gated_world_summary!.last_signature).toBe(diffs[2]!.signature);
    expect(s.path.at(-1)).toBe('subconscious_eval');
    expect(s.sequential_diffs).toEqual([]);
    // The timeline is one unbroken chain from the genesis signature.
    expect(verifyChain(GENESIS_SIGNATURE, diffs)).toBe(true);
    expect(verifyChain(GENESIS_SIGNATURE, [diffs[0]!, diffs[2]!])).toBe(false);

    // Cleared triggers and an empty queue: the next ordinary cycle ends without a review.
    s = await h.send(s, 'slack', 'Water the office plants.');
    expect(s.path.at(-1)).toBe('context_manager_hook');
    expect(s.gate).toMatchObject({ forwarded: false, queued: 1 });
  });

  it('a due cron review forwards whatever the queue holds, and is cleared by the review', async () => {
    const h = harness();
    const s = await h.send(initialState(), 'email', 'Summarise the week for the team.', { cronDue: true });
    expect(s.gate).toEqual({ forwarded: true, reasons: ['cron'], queued: 1, threshold: 3 });
    expect(s.subconscious_steering).toMatch(/^Consolidate: /);
    expect(s.cron_due).toBe(false);
  });

  it('context pressure evicts semantic history into long-term memory, keeping the 2 newest', async () => {
    const h = harness({ context_window_tokens: 128 });
    let s = initialState();
    let before: SystemState | undefined;
    const names = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark', 'Wayne', 'Tyrell', 'Cyberdyne', 'Soylent', 'Wonka', 'Gringotts'];
    for (const name of names) {
      before = s;
      const text = `${name} contract renewal questions about pricing tiers and support hours.`;
      s = await h.send(s, 'slack', text);
      if (s.evictions.length) break;
    }
    expect(s.evictions.length).toBeGreaterThan(0);
    const tracesBefore = [
      ...before!.semantic_history.filter((e) => e.kind === 'trace'),
      ...s.semantic_history.filter((e) => e.cycle === s.cycle && e.kind === 'trace'),
    ];
    const evicted = tracesBefore.slice(0, -2);
    // The marker replaces the evicted traces; the two newest stay active.
    expect(s.semantic_history[0]).toMatchObject({ kind: 'eviction_marker', cycle: s.cycle });
    expect(s.semantic_history.slice(1)).toEqual(tracesBefore.slice(-2));
    expect(s.evictions.map((e) => e.external_id)).toEqual(evicted.map((e) => `semantic:${e.id}`));
    expect(s.long_term_memory.map((r) => r.body)).toEqual(evicted.map((e) => e.trace));
    const line = s.event_log.find((l) => l.includes('evicted'))!;
    const [, was, now] = /utilisation ([\d.]+) ≥ 0\.85: evicted .* now ([\d.]+)/.exec(line)!;
    expect(Number(was)).toBeGreaterThanOrEqual(0.85);
    expect(Number(now)).toBeLessThan(Number(was));
    expect(s.context_utilization).toBe(Number(now));

    // The bi-directional loop: an evicted trace is retrieved again on a later run.
    const entity = evicted[0]!.entity;
    s = await h.send(s, 'slack', `Any news on ${entity}?`);
    expect(s.retrieved_context.map((r) => r.id)).toContain(`semantic:${evicted[0]!.id}`);
  });

  it('clamps the eviction threshold into 0.8–0.9', () => {
    expect(orchestrationConfigSchema.parse({ eviction_threshold: 0.5 }).eviction_threshold).toBe(0.8);
    expect(orchestrationConfigSchema.parse({ eviction_threshold: 0.99 }).eviction_threshold).toBe(0.9);
    expect(orchestrationConfigSchema.parse({}).eviction_threshold).toBe(0.85);
    expect(orchestrationConfigSchema.safeParse({ eviction_threshold: 'high' }).success).toBe(false);
    expect(orchestrationConfigSchema.safeParse({ eviction: 0.85 }).success).toBe(false);
  });

  it('refuses a cycle without an inbound packet', async () => {
    const graph = buildHarnessGraph();
    const ctx: CycleContext = { runtime: offlineRuntime(), settings: orchestrationConfigSchema.parse({}), now: () => 0 };
    const err = await graph.invoke(initialState(), { ctx }).catch((e: unknown) => e);
    expect(isSubconsciousError(err, 'invalid_params')).toBe(true);
  });

  it('the reducer appends messages, the event log and the path, and replaces everything else', () => {
    const s = initialState({ event_log: ['a'], path: ['channel_ingestion'], cycle: 3 });
    const next = applyPatch(s, { event_log: ['b'], path: ['frontend_agent'], cycle: 4, agent_reply: 'x', semantic_history: [] });
    expect(next.event_log).toEqual(['a', 'b']);
    expect(next.path).toEqual(['channel_ingestion', 'frontend_agent']);
    expect(next.cycle).toBe(4);
    expect(next.agent_reply).toBe('x');
    expect(s.event_log).toEqual(['a']); // pure
    const many = applyPatch(s, { event_log: Array.from({ length: 500 }, (_, i) => `l${i}`) });
    expect(many.event_log).toHaveLength(200);
    expect(many.event_log.at(-1)).toBe('l499');
  });
});

describe('runClosedLoopExample (the `example closed-loop` entry point)', () => {
  it('runs the seeded scenario and renders every cycle and the final state', async () => {
    const { state, cycles, rendering } = await runClosedLoopExample();
    expect(cycles).toHaveLength(EXAMPLE_PACKETS.length);
    expect(state.cycle).toBe(EXAMPLE_PACKETS.length);
    expect(cycles[0]!.retrieved.length).toBeGreaterThan(0);
    expect(cycles[0]!.gate).toMatchObject({ forwarded: false, queued: 1 });
    expect(cycles[1]!.gate).toMatchObject({ forwarded: true, reasons: ['escalation'] });
    expect(cycles[1]!.path.at(-1)).toBe('subconscious_eval');
    expect(cycles.at(-1)!.gate?.reasons).toContain('cron');
    expect(cycles.some((c) => c.evictions.length > 0)).toBe(true);
    for (const c of cycles) expect(rendering).toContain(`Cycle ${c.seq} · ${c.channel}`);
    expect(rendering).toContain('Final state');
    expect(rendering).toContain(`subconscious_steering  ${state.subconscious_steering}`);
    expect(rendering).toContain('channel_ingestion → frontend_agent → agent_execution → summarization_gate → frontend_agent → context_manager_hook → END');
    // Deterministic: the same output every run.
    expect((await runClosedLoopExample()).rendering).toBe(rendering);
  });

  it('takes its own packets and memory', async () => {
    const { cycles } = await runClosedLoopExample({
      packets: [{ channel: 'cli', text: 'Where is the deploy checklist?' }],
      longTermMemory: MEMORY,
    });
    expect(cycles).toHaveLength(1);
    expect(cycles[0]!.retrieved).toEqual(['Deploy checklist']);
  });
});
