/**
 * The closed-loop harness graph (seed 5) on our graph runtime:
 *
 *   channel_ingestion → frontend_agent → agent_execution → summarization_gate
 *     → frontend_agent → context_manager_hook → subconscious_eval | END
 *
 * `frontend_agent` runs twice: the first pass (no `agent_reply` yet) writes `agent_instructions`
 * and defers to the reasoning tier; the second sees `agent_reply` and writes `channel_response`.
 * Our runtime allows one outgoing edge per node, so its edge is conditional on that very flag.
 * Nodes return patches; `applyPatch` is the one reducer. Every node appends its name to `path`.
 */
import { SubconsciousError } from '../core/errors.js';
import { END, START, StateGraph, type Checkpointer, type CompiledGraph } from '../graph/index.js';
import { estimateTokens } from '../llm/fence.js';
import { compress } from './compress.js';
import type { CycleContext, EvictionDoc } from './runtime.js';
import { activeContextTokens, applyPatch, utilization } from './state.js';
import { oneLine, plural } from './text.js';
import type { GateReason, HarnessNode, SemanticEntry, StatePatch, SystemState } from './types.js';
import { chainDiffs, summarizeDiffs } from './world-diff.js';

export const HARNESS_GRAPH = 'orchestration:harness';
/** Utilisation at which the reasoning tier escalates by itself (seed 5: "context pressure is very high"). */
export const PRESSURE_ESCALATION = 0.95;
const MAX_ENTITIES = 5;
const MAX_DIFFS = 3;

type Node = (s: SystemState, ctx: CycleContext) => Promise<StatePatch>;

const line = (s: SystemState, node: HarnessNode, text: string) => `#${s.cycle} ${node}: ${text}`;

const channelIngestion: Node = async (s, ctx) => {
  const p = s.inbound;
  if (!p || !p.text.trim()) {
    throw new SubconsciousError('invalid_params', 'channel_ingestion: the cycle has no inbound packet (channel and text).', {
      hint: 'Start a cycle with a channel message.',
    });
  }
  return {
    messages: [{ role: 'user', channel: p.channel, text: p.text, cycle: s.cycle, at: ctx.now() }],
    event_log: [line(s, 'channel_ingestion', `${p.channel} message accepted (${plural(estimateTokens(p.text), 'token')})`)],
  };
};

const frontendAgent: Node = async (s, ctx) => {
  const p = s.inbound!;
  if (s.agent_reply === null) {
    const recent = s.messages.slice(-7, -1);
    const instructions = await ctx.runtime.instruct({ channel: p.channel, text: p.text, recent }, ctx);
    return {
      agent_instructions: instructions,
      event_log: [line(s, 'frontend_agent', `quick tier deferred to reasoning: "${oneLine(instructions, 120)}"`)],
    };
  }
  const response = await ctx.runtime.respond({ channel: p.channel, text: p.text, instructions: s.agent_instructions ?? '', reply: s.agent_reply }, ctx);
  return {
    channel_response: response,
    messages: [{ role: 'assistant', channel: p.channel, text: response, cycle: s.cycle, at: ctx.now() }],
    event_log: [line(s, 'frontend_agent', `quick tier compiled the channel response (${plural(estimateTokens(response), 'token')})`)],
  };
};

const agentExecution: Node = async (s, ctx) => {
  const p = s.inbound!;
  const instructions = s.agent_instructions ?? p.text;
  const log: string[] = [];
  const { traces, note } = await ctx.runtime.retrieve(instructions, s, ctx);
  log.push(
    line(
      s,
      'agent_execution',
      note ?? `retrieved ${plural(traces.length, 'memory trace')}${traces.length ? ` (${traces.map((t) => t.title).join('; ')})` : ''}`,
    ),
  );
  const directive = await ctx.runtime.directive(s.cycle, s, ctx);
  const result = await ctx.runtime.execute(
    { cycle: s.cycle, channel: p.channel, text: p.text, instructions, retrieved: traces, history: s.semantic_history, directive },
    ctx,
  );

  const entries: SemanticEntry[] = result.entities.slice(0, MAX_ENTITIES).map((e, i) => ({
    id: `c${s.cycle}-${i + 1}`,
    cycle: s.cycle,
    kind: 'trace',
    entity: e.entity,
    trace: e.trace,
  }));
  const { diffs, head } = chainDiffs(s.world_signature, result.diffs.slice(0, MAX_DIFFS));
  const semantic_history = [...s.semantic_history, ...entries];
  const sequential_diffs = [...s.sequential_diffs, ...diffs];
  const util = utilization(activeContextTokens({ semantic_history, retrieved_context: traces, sequential_diffs }), ctx.settings.context_window_tokens);
  const escalation = result.escalate ?? (util >= PRESSURE_ESCALATION ? `context pressure at ${util}` : null);
  log.push(
    line(
      s,
      'agent_execution',
      `reasoning tier ${directive ? 'steered' : 'unsteered'}; extracted ${plural(entries.length, 'trace')}, emitted ${plural(diffs.length, 'diff')}; utilisation ${util}`,
    ),
  );
  if (escalation) log.push(line(s, 'agent_execution', `escalation: ${escalation}`));
  return {
    retrieved_context: traces,
    directive,
    agent_reply: result.reply,
    semantic_history,
    sequential_diffs,
    cycle_diffs: diffs,
    world_signature: head,
    context_utilization: util,
    trigger_subconscious: s.trigger_subconscious || escalation !== null,
    escalation,
    event_log: log,
  };
};

const summarizationGate: Node = async (s, ctx) => {
  const threshold = ctx.settings.gate_threshold;
  const queued = s.sequential_diffs.length;
  const reasons: GateReason[] = [];
  if (queued >= threshold) reasons.push('threshold');
  if (s.trigger_subconscious) reasons.push('escalation');
  if (s.cron_due) reasons.push('cron');
  const gate = { forwarded: reasons.length > 0, reasons, queued, threshold };
  if (!gate.forwarded) {
    return { gate, event_log: [line(s, 'summarization_gate', `held ${plural(queued, 'diff')} (forwards at ${threshold})`)] };
  }
  const summary = summarizeDiffs(s.sequential_diffs, reasons);
  return {
    gate,
    gated_world_summary: summary,
    sequential_diffs: [],
    event_log: [line(s, 'summarization_gate', `forwarded ${plural(queued, 'diff')} (${reasons.join(' + ')}): ${summary.macro_trend}`)],
  };
};

const contextManagerHook: Node = async (s, ctx) => {
  const log: string[] = [];
  let semantic = s.semantic_history;
  let util = s.context_utilization;
  let longTerm = s.long_term_memory;
  let evictions = s.evictions;
  let unstored = s.unstored_evictions;
  const threshold = ctx.settings.eviction_threshold;
  if (util >= threshold) {
    const traces = semantic.filter((e) => e.kind === 'trace');
    const keep = ctx.settings.keep_newest > 0 ? traces.slice(-ctx.settings.keep_newest) : [];
    const evict = traces.slice(0, traces.length - keep.length);
    if (evict.length) {
      const docs: EvictionDoc[] = evict.map((e) => ({ external_id: `semantic:${e.id}`, title: `${e.entity} (cycle ${e.cycle})`, body: e.trace, entry: e }));
      const kept = await ctx.runtime.evict(docs, ctx);
      // Live: the memory writes wait for the commit (the service does them), so a cycle that fails from here on writes nothing.
      if (ctx.runtime.storeEvicted) unstored = [...(unstored ?? []), ...docs];
      const marker: SemanticEntry = {
        id: `c${s.cycle}-evicted`,
        cycle: s.cycle,
        kind: 'eviction_marker',
        entity: 'long_term_memory',
        trace: `${plural(evict.length, 'trace')} evicted to long-term memory at cycle ${s.cycle} (${evict.map((e) => e.entity).join(', ')})`,
      };
      semantic = [marker, ...keep];
      longTerm = [...longTerm, ...kept];
      evictions = docs.map((d) => ({ external_id: d.external_id, title: d.title, tokens: estimateTokens(d.body) }));
      const before = util;
      util = utilization(
        activeContextTokens({ semantic_history: semantic, retrieved_context: s.retrieved_context, sequential_diffs: s.sequential_diffs }),
        ctx.settings.context_window_tokens,
      );
      log.push(
        line(s, 'context_manager_hook', `utilisation ${before} ≥ ${threshold}: evicted ${plural(evict.length, 'trace')}, kept ${keep.length}; now ${util}`),
      );
    } else {
      log.push(line(s, 'context_manager_hook', `utilisation ${util} ≥ ${threshold}, but no trace beyond the newest ${keep.length} to evict`));
    }
  }
  const record = cycleTranscript({ ...s, semantic_history: semantic, evictions, context_utilization: util });
  const compressed = await compress(record, (req) => ctx.runtime.summarize(req, ctx));
  log.push(
    line(
      s,
      'context_manager_hook',
      `compressed the cycle ${compressed.input_tokens}→${compressed.summary_tokens} tokens (budget ${compressed.budget_tokens}${compressed.truncated ? ', truncated' : ''})`,
    ),
  );
  return {
    semantic_history: semantic,
    context_utilization: util,
    long_term_memory: longTerm,
    evictions,
    unstored_evictions: unstored,
    compressed,
    event_log: log,
  };
};

const subconsciousEval: Node = async (s, ctx) => {
  const summary = s.gated_world_summary!;
  const steering = await ctx.runtime.steer(summary, s, ctx);
  return {
    subconscious_steering: steering,
    // The circuit breaker: both triggers are cleared here, so a review never re-triggers itself.
    trigger_subconscious: false,
    cron_due: false,
    consolidated_at: ctx.now(),
    event_log: [
      line(
        s,
        'subconscious_eval',
        `${byWorld(ctx) ? 'forwarded to the steering world' : 'deep reflection'} (${summary.reasons.join(' + ')}); steering: ${steering ? `"${oneLine(steering, 120)}"` : 'none'}; triggers cleared`,
      ),
    ],
  };
};

/** The steering world reflects (it reviews on its own tick), not the offline stand-in. */
function byWorld(ctx: CycleContext): boolean {
  return (ctx.runtime.subconscious ?? (ctx.runtime.mode === 'live' ? 'steering_world' : 'stand_in')) === 'steering_world';
}

/** Wrap a node so its patch records the node in `path`. */
function tracked(name: HarnessNode, fn: Node): Node {
  return async (s, ctx) => ({ ...(await fn(s, ctx)), path: [name] });
}

export function buildHarnessGraph(opts: { checkpointer?: Checkpointer | undefined } = {}): CompiledGraph<SystemState, CycleContext> {
  return new StateGraph<SystemState, CycleContext>({ reducer: applyPatch })
    .addNode('channel_ingestion', tracked('channel_ingestion', channelIngestion))
    .addNode('frontend_agent', tracked('frontend_agent', frontendAgent))
    .addNode('agent_execution', tracked('agent_execution', agentExecution))
    .addNode('summarization_gate', tracked('summarization_gate', summarizationGate))
    .addNode('context_manager_hook', tracked('context_manager_hook', contextManagerHook))
    .addNode('subconscious_eval', tracked('subconscious_eval', subconsciousEval))
    .addEdge(START, 'channel_ingestion')
    .addEdge('channel_ingestion', 'frontend_agent')
    .addConditionalEdges('frontend_agent', (s) => (s.channel_response !== null ? 'context_manager_hook' : 'agent_execution'), [
      'agent_execution',
      'context_manager_hook',
    ])
    .addEdge('agent_execution', 'summarization_gate')
    .addEdge('summarization_gate', 'frontend_agent')
    .addConditionalEdges('context_manager_hook', (s) => (s.gated_world_summary ? 'subconscious_eval' : END), ['subconscious_eval', END])
    .addEdge('subconscious_eval', END)
    .compile({ name: HARNESS_GRAPH, checkpointer: opts.checkpointer, stepLimit: 12 });
}

/** The cycle's execution record, the text the 20:1 compression reads. */
export function cycleTranscript(s: SystemState): string {
  const p = s.inbound;
  const out: string[] = [`cycle ${s.cycle} on ${p?.channel ?? '?'}: ${oneLine(p?.text ?? '', 400)}`];
  if (s.agent_instructions) out.push(`instruction: ${oneLine(s.agent_instructions, 400)}`);
  if (s.retrieved_context.length) out.push(`retrieved: ${s.retrieved_context.map((r) => `${r.title} — ${oneLine(r.snippet, 160)}`).join('; ')}`);
  if (s.directive) out.push(`steered by: ${oneLine(s.directive.text, 300)}`);
  if (s.agent_reply) out.push(`reply: ${s.agent_reply.replace(/\s+/g, ' ').trim()}`);
  for (const e of s.semantic_history.filter((e) => e.cycle === s.cycle && e.kind === 'trace')) out.push(`entity ${e.entity}: ${e.trace}`);
  for (const d of s.cycle_diffs) out.push(`diff ${d.signature}: ${d.mutation} (delta ${d.delta}${d.critical ? ', critical' : ''})`);
  if (s.escalation) out.push(`escalation: ${s.escalation}`);
  if (s.gate) {
    out.push(
      s.gate.forwarded
        ? `gate: forwarded ${plural(s.gate.queued, 'diff')} (${s.gate.reasons.join(' + ')})${s.gated_world_summary ? ` — ${s.gated_world_summary.macro_trend}` : ''}`
        : `gate: held ${plural(s.gate.queued, 'diff')} (forwards at ${s.gate.threshold})`,
    );
  }
  if (s.evictions.length) out.push(`eviction: ${plural(s.evictions.length, 'trace')} to long-term memory; utilisation now ${s.context_utilization}`);
  if (s.channel_response) out.push(`response: ${s.channel_response.replace(/\s+/g, ' ').trim()}`);
  return out.join('\n');
}
