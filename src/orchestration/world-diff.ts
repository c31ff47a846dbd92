/**
 * The cumulative world-state diff: each mutation is appended with a signature chained from the
 * previous one (sha-256 of previous signature, entity, mutation and delta), so the timeline is
 * append-only and any edit or gap shows. The gate folds queued diffs into one summary.
 */
import { createHash } from 'node:crypto';
import type { GateReason, GatedWorldSummary, WorldDiff } from './types.js';

/** The chain's start, before any mutation. */
export const GENESIS_SIGNATURE = '0'.repeat(16);

export interface DiffInput {
  entity: string;
  mutation: string;
  delta: number;
  critical: boolean;
}

export function signDiff(previous: string, d: DiffInput): string {
  return createHash('sha256')
    .update(`${previous}\n${d.entity}\n${d.mutation}\n${d.delta.toFixed(3)}`)
    .digest('hex')
    .slice(0, 16);
}

/** Append `inputs` after the chain head `previous`; returns the signed diffs and the new head. */
export function chainDiffs(previous: string, inputs: readonly DiffInput[]): { diffs: WorldDiff[]; head: string } {
  let head = previous;
  const diffs = inputs.map((d) => {
    const delta = clampDelta(d.delta);
    head = signDiff(head, { ...d, delta });
    return { signature: head, entity: d.entity, mutation: d.mutation, delta, critical: d.critical };
  });
  return { diffs, head };
}

export function clampDelta(delta: number): number {
  if (!Number.isFinite(delta)) return 0;
  return Math.round(Math.min(1, Math.max(0, delta)) * 1000) / 1000;
}

/** Is the chain intact from `previous`? (each signature recomputes from the one before) */
export function verifyChain(previous: string, diffs: readonly WorldDiff[]): boolean {
  let head = previous;
  for (const d of diffs) {
    if (signDiff(head, d) !== d.signature) return false;
    head = d.signature;
  }
  return true;
}

/**
 * Seed 5's `summarize_diffs`: queued diffs become one package — a macro trend (the entities that
 * moved most, in order of total magnitude), the critical event count and the total magnitude.
 */
export function summarizeDiffs(diffs: readonly WorldDiff[], reasons: GateReason[]): GatedWorldSummary {
  const byEntity = new Map<string, { n: number; magnitude: number }>();
  for (const d of diffs) {
    const e = byEntity.get(d.entity) ?? { n: 0, magnitude: 0 };
    e.n++;
    e.magnitude += d.delta;
    byEntity.set(d.entity, e);
  }
  const critical = diffs.filter((d) => d.critical).length;
  const total = Math.round(diffs.reduce((n, d) => n + d.delta, 0) * 1000) / 1000;
  const top = [...byEntity.entries()]
    .sort((a, b) => b[1].magnitude - a[1].magnitude || a[0].localeCompare(b[0]))
    .slice(0, 3)
    .map(([entity, e]) => `${entity} ×${e.n}`);
  const direction = critical > 0 ? 'unstable' : total >= 1 ? 'active' : 'steady';
  const macro =
    diffs.length === 0
      ? `no queued mutations; forwarded for ${reasons.join(' + ')}`
      : `${direction}: ${diffs.length} mutation${diffs.length === 1 ? '' : 's'} (${top.join(', ')})${critical ? `, ${critical} critical` : ''}`;
  return {
    macro_trend: macro,
    critical_event_count: critical,
    total_magnitude: total,
    diff_count: diffs.length,
    first_signature: diffs[0]?.signature ?? null,
    last_signature: diffs.at(-1)?.signature ?? null,
    reasons,
  };
}
