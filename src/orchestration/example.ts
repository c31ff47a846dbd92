/**
 * The runnable, fully offline example (seed 5's `main.rs`): seed channel packets and a small
 * long-term memory, run the graph once per packet on the deterministic stand-ins, and return the
 * final state with a printable rendering. No model, no network, no database; the same output on
 * every run. `subconscious example closed-loop` prints `rendering`.
 */
import { orchestrationConfigSchema, type OrchestrationConfigInput } from './config.js';
import { buildHarnessGraph } from './graph.js';
import { offlineRuntime } from './offline.js';
import { renderExample } from './render.js';
import type { CycleContext } from './runtime.js';
import { initialState, startCycle } from './state.js';
import type { CompressedSummary, EvictionRecord, GateDecision, HarnessNode, MemoryRecord, SystemState, WorldDiff } from './types.js';

export interface ExamplePacket {
  channel: string;
  text: string;
  /** Seed `cron_due` before this cycle: a scheduled review whatever the diffs. */
  cronDue?: boolean | undefined;
}

export interface ClosedLoopExampleOptions {
  packets?: readonly ExamplePacket[] | undefined;
  /** The mock vector database the reasoning stand-in retrieves from. */
  longTermMemory?: readonly MemoryRecord[] | undefined;
  settings?: OrchestrationConfigInput | undefined;
  /** Epoch ms of the first cycle (message timestamps); cycles are a minute apart. */
  startAt?: number | undefined;
}

export interface ExampleCycle {
  seq: number;
  channel: string;
  text: string;
  path: HarnessNode[];
  retrieved: string[];
  diffs: WorldDiff[];
  gate: GateDecision | null;
  escalation: string | null;
  evictions: EvictionRecord[];
  response: string | null;
  steering: string | null;
  compressed: CompressedSummary | null;
}

export interface ClosedLoopExampleResult {
  state: SystemState;
  cycles: ExampleCycle[];
  /** What the CLI prints: each cycle's path and decisions, then the final state. */
  rendering: string;
}

export const EXAMPLE_MEMORY: readonly MemoryRecord[] = [
  { id: 'mem-billing', title: 'Billing runbook', body: 'Invoice disputes: refund within 14 days; tell finance when a refund is over 500 EUR.', cycle: 0 },
  {
    id: 'mem-deploy',
    title: 'Deploy checklist',
    body: 'Pause deploys when the error budget is under 10 percent; roll back on a failing health check.',
    cycle: 0,
  },
  { id: 'mem-acme', title: 'Customer Acme', body: 'Acme prefers email updates and has a premium support contract with a 4-hour response time.', cycle: 0 },
];

export const EXAMPLE_PACKETS: readonly ExamplePacket[] = [
  { channel: 'slack', text: 'Acme asks why their invoice was charged twice and wants a refund.' },
  { channel: 'telegram', text: 'Critical outage: the billing deploy health check is failing since 09:12.' },
  { channel: 'slack', text: 'Acme confirms the duplicate invoice refund arrived, thanks!' },
  // A scheduled consolidation is due before the last one (seed 5's cron trigger).
  { channel: 'email', text: 'Draft the weekly billing summary for Acme with the refund and the deploy pause.', cronDue: true },
];

/** The example's settings: a small context window, so four cycles show eviction. */
export const EXAMPLE_SETTINGS: OrchestrationConfigInput = { context_window_tokens: 224 };

export async function runClosedLoopExample(opts: ClosedLoopExampleOptions = {}): Promise<ClosedLoopExampleResult> {
  const settings = orchestrationConfigSchema.parse({ ...EXAMPLE_SETTINGS, ...(opts.settings ?? {}) });
  const graph = buildHarnessGraph();
  const runtime = offlineRuntime();
  const startAt = opts.startAt ?? Date.UTC(2026, 0, 1, 9, 0, 0);
  let state = initialState({ long_term_memory: [...(opts.longTermMemory ?? EXAMPLE_MEMORY)] });
  const cycles: ExampleCycle[] = [];
  const packets = opts.packets ?? EXAMPLE_PACKETS;
  for (const [i, packet] of packets.entries()) {
    const seq = i + 1;
    const ctx: CycleContext = { runtime, settings, now: () => startAt + i * 60_000 };
    const start = startCycle(state, { cycle_id: `example-${seq}`, channel: packet.channel, text: packet.text }, seq, { cronDue: packet.cronDue });
    state = await graph.invoke(start, { ctx });
    cycles.push({
      seq,
      channel: packet.channel,
      text: packet.text,
      path: state.path,
      retrieved: state.retrieved_context.map((r) => r.title),
      diffs: state.cycle_diffs,
      gate: state.gate,
      escalation: state.escalation,
      evictions: state.evictions,
      response: state.channel_response,
      steering: state.subconscious_steering,
      compressed: state.compressed,
    });
  }
  return { state, cycles, rendering: renderExample(state, cycles) };
}
