/**
 * The steering world's contract (seed 4's "tinyplace" world, issue 14): the directive the
 * reasoning tier is steered by now, and the directive history.
 *
 * A directive is made after harness cycle `cycle` and steers cycles `cycle + 1` through
 * `expires_at_cycle` (= `cycle + expires_after_cycles`); the newest one not expired is current.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

/** The line the reasoning tier's system prompt carries when no directive is current. */
export const DEFAULT_STEERING_LINE = 'No steering directive is active: follow the instruction as given and stay on task.';

/** `active`: the current one. `superseded`: not expired, but a newer one is current. */
export type DirectiveStatus = 'active' | 'superseded' | 'expired';

export interface SteeringDirective {
  id: string;
  text: string;
  expires_after_cycles: number;
  /** The last finished harness cycle when the directive was made. */
  cycle: number;
  /** The last cycle it steers. */
  expires_at_cycle: number;
  /** The compressed history rows (cycle numbers) the review read. */
  reviewed_from_seq: number;
  reviewed_to_seq: number;
  created_at: number;
  status: DirectiveStatus;
  /** Cycles it still steers after the last finished one (0 once expired). */
  remaining_cycles: number;
}

export interface SteeringReview {
  outcome: 'directive' | 'none';
  rows: number;
  at: number;
}

export interface SteeringCurrent {
  directive: SteeringDirective | null;
  /** What the next cycle's reasoning prompt carries: the directive's text or the default line. */
  injected: string;
  /** The last finished harness cycle. */
  current_cycle: number;
  remaining_cycles: number | null;
  /** Compressed history rows up to this cycle have been reviewed. */
  reviewed_seq: number;
  last_review: SteeringReview | null;
}

export type SteeringEvents = {
  'steering.directive': { id: string; text: string; expires_after_cycles: number; cycle: number; expires_at_cycle: number };
  /** A review committed (a directive, or `none`: nothing needed steering). */
  'steering.reviewed': { tick_id: string; outcome: 'directive' | 'none'; rows: number; reviewed_seq: number };
};

export const steeringContract = defineContract<SteeringEvents>()({
  methods: {
    'steering.current': method(
      z.strictObject({}),
      'The directive steering the reasoning tier now (or the default line), with its remaining cycles.',
    ).returns<SteeringCurrent>(),
    'steering.list': method(
      z.strictObject({ limit: z.number().int('must be a whole number').min(1, 'at least 1').max(200, 'at most 200').optional() }),
      'Directive history, newest first: {limit? (default 50)}.',
    ).returns<SteeringDirective[]>(),
  },
  events: ['steering.directive', 'steering.reviewed'],
});
