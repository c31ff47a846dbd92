/** Plain-text rendering of the example's cycles and final state (what seed 5's `main.rs` prints). */
import type { ExampleCycle } from './example.js';
import { oneLine, plural } from './text.js';
import type { SystemState } from './types.js';

const pad = (label: string) => label.padEnd(22);

export function renderExample(state: SystemState, cycles: readonly ExampleCycle[]): string {
  const out: string[] = ['Closed-loop harness example (offline: deterministic stand-ins, no model)', ''];
  for (const c of cycles) {
    out.push(`Cycle ${c.seq} · ${c.channel} · "${oneLine(c.text, 90)}"`);
    out.push(`  path      ${[...c.path, 'END'].join(' → ')}`);
    out.push(`  retrieved ${c.retrieved.length ? c.retrieved.join('; ') : 'nothing'}`);
    for (const d of c.diffs) out.push(`  diff      ${d.mutation}  Δ${d.delta}${d.critical ? '  CRITICAL' : ''}  [${d.signature}]`);
    if (c.escalation) out.push(`  escalate  ${c.escalation}`);
    if (c.gate) {
      out.push(
        `  gate      ${c.gate.forwarded ? `forwarded ${plural(c.gate.queued, 'diff')} (${c.gate.reasons.join(' + ')})` : `held ${plural(c.gate.queued, 'diff')} (forwards at ${c.gate.threshold})`}`,
      );
    }
    if (c.evictions.length) out.push(`  evicted   ${c.evictions.map((e) => e.title).join('; ')}`);
    if (c.compressed) {
      out.push(
        `  history   ${c.compressed.input_tokens}→${c.compressed.summary_tokens} tokens (budget ${c.compressed.budget_tokens}): "${oneLine(c.compressed.summary, 100)}"`,
      );
    }
    out.push(`  response  ${c.response ?? '—'}`);
    if (c.path.includes('subconscious_eval')) out.push(`  steering  ${c.steering ?? 'none'}`);
    out.push('');
  }
  const s = state;
  out.push('Final state');
  const field = (name: string, value: string) => out.push(`  ${pad(name)} ${value}`);
  field('messages', `${s.messages.length}`);
  field('agent_instructions', s.agent_instructions ?? 'null');
  field('agent_reply', s.agent_reply ? oneLine(s.agent_reply, 140) : 'null');
  field('channel_response', s.channel_response ?? 'null');
  field('semantic_history', s.semantic_history.length ? '' : '[]');
  for (const e of s.semantic_history) out.push(`    - ${e.kind === 'eviction_marker' ? '[evicted] ' : ''}${e.entity}: ${oneLine(e.trace, 110)}`);
  field('sequential_diffs', s.sequential_diffs.length ? s.sequential_diffs.map((d) => d.mutation).join('; ') : '[]');
  field(
    'gated_world_summary',
    s.gated_world_summary
      ? `${s.gated_world_summary.macro_trend} (critical ${s.gated_world_summary.critical_event_count}, magnitude ${s.gated_world_summary.total_magnitude})`
      : 'null',
  );
  field('context_utilization', `${s.context_utilization}`);
  field('trigger_subconscious', `${s.trigger_subconscious}`);
  field('cron_due', `${s.cron_due}`);
  field('long_term_memory', plural(s.long_term_memory.length, 'record'));
  field('retrieved_context', s.retrieved_context.length ? s.retrieved_context.map((r) => r.title).join('; ') : '[]');
  field('subconscious_steering', s.subconscious_steering ?? 'null');
  field('world_signature', s.world_signature);
  out.push('  event_log');
  for (const l of s.event_log) out.push(`    ${l}`);
  return out.join('\n');
}
