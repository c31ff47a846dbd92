/**
 * The Steering tab's words for the harness's data: node names as a person reads them, the gate's
 * decision, a directive's window. Plain functions (no React), so they read the same everywhere.
 */
import type { CycleRow, CycleStatus, DirectiveStatus, GateDecision, GateReason, HarnessNode, SteeringDirective } from '../../../../src/protocol/index.js';

/** Each graph node as the tab names it (the node's own name is kept for a tooltip). */
export const NODE_LABELS: Record<HarnessNode, string> = {
  channel_ingestion: 'message in',
  frontend_agent: 'quick tier',
  agent_execution: 'reasoning tier',
  summarization_gate: 'gate',
  context_manager_hook: 'context manager',
  subconscious_eval: 'subconscious',
};

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

const REASONS: Record<GateReason, string> = {
  threshold: 'enough changes queued',
  escalation: 'the reasoning tier flagged something critical',
  cron: 'a scheduled review was due',
};

/** What the gate did, in one sentence. */
export function gateSentence(gate: GateDecision): string {
  if (!gate.forwarded) return `Held ${plural(gate.queued, 'change')} (it forwards at ${gate.threshold}).`;
  return `Forwarded ${plural(gate.queued, 'change')} for review: ${gate.reasons.map((r) => REASONS[r]).join(', and ')}.`;
}

export const CYCLE_STATUS: Record<CycleStatus, { label: string; color: 'gray' | 'blue' | 'green' | 'coral'; pulse?: boolean }> = {
  queued: { label: 'waiting', color: 'gray' },
  running: { label: 'running', color: 'blue', pulse: true },
  done: { label: 'done', color: 'green' },
  failed: { label: 'failed', color: 'coral' },
};

export const DIRECTIVE_STATUS: Record<DirectiveStatus, string> = {
  active: 'in force',
  superseded: 'replaced',
  expired: 'expired',
};

/** The cycles a directive steers: the ones after the cycle it was made after, through its last. */
export function directiveWindow(d: Pick<SteeringDirective, 'cycle' | 'expires_at_cycle'>): string {
  const first = d.cycle + 1;
  return first === d.expires_at_cycle ? `cycle ${first}` : `cycles ${first}–${d.expires_at_cycle}`;
}

export function remainingSentence(d: Pick<SteeringDirective, 'remaining_cycles' | 'status'>): string {
  if (d.status === 'expired' || d.remaining_cycles <= 0) return 'expired';
  return `${plural(d.remaining_cycles, 'cycle')} left`;
}

/** The magnitude of a world change, as a short figure. */
export function delta(d: number): string {
  return `Δ ${Number.isInteger(d) ? d.toFixed(1) : String(Math.round(d * 100) / 100)}`;
}

/** The cycle's path with END, as the graph ran it. */
export function pathOf(c: Pick<CycleRow, 'path' | 'status'>): Array<HarnessNode | 'END'> {
  return c.status === 'done' ? [...c.path, 'END'] : c.path;
}
