/**
 * The steering world's domain: what it observes, the context it builds, what reflect returns, and
 * what it needs from the harness (`HarnessHistory`; the harness's store satisfies it).
 */
import type { CompressedRow, WorldDiffRow } from '../../protocol/orchestration.js';

export type { CompressedRow, WorldDiffRow } from '../../protocol/orchestration.js';

/** What the steering world reads of the harness. */
export interface HarnessHistory {
  /** Compressed history rows after `afterSeq`, oldest first, at most `limit`. */
  unreviewed(afterSeq: number, limit: number): Promise<CompressedRow[]>;
  /** The newest `limit` world mutations, oldest first. */
  recentMutations(limit: number): Promise<WorldDiffRow[]>;
  /** The last finished harness cycle (0: none). */
  currentCycle(): Promise<number>;
}

export interface SteeringObservation {
  rows: CompressedRow[];
  mutations: WorldDiffRow[];
  /** The last finished harness cycle when observed (directive expiry counts from it). */
  current_cycle: number;
  /** The review cursor before this tick. */
  reviewed_seq: number;
}

export interface SteeringContext {
  prompt: string;
  from_seq: number;
  to_seq: number;
}

export type SteeringReflection = { outcome: 'directive'; text: string; expires_after_cycles: number; attempts: number } | { outcome: 'none'; attempts: number };
