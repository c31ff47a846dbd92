/**
 * The steering world's tables (both dialects; epoch ms in bigint columns, JSON as text).
 *
 *   steering_directives  one row per directive: its text, the cycle it was made after, how many
 *                        cycles it steers, and the history rows its review read;
 *   steering_cursor      the review cursor (the last compressed row reviewed) and the last
 *                        review's outcome; it moves only when a review commits.
 */

export interface SteeringDirectivesTable {
  id: string;
  /** The tick that made it: a resumed commit never stores a directive twice. */
  tick_id: string;
  text: string;
  expires_after_cycles: number;
  /** The last finished harness cycle when it was made. */
  cycle: number;
  /** The last cycle it steers (`cycle + expires_after_cycles`). */
  expires_at_cycle: number;
  reviewed_from_seq: number;
  reviewed_to_seq: number;
  created_at: number;
}

export interface SteeringCursorTable {
  id: string;
  reviewed_seq: number;
  reviews: number;
  /** `directive` or `none`. */
  last_outcome: string | null;
  last_rows: number;
  last_tick_id: string | null;
  updated_at: number;
}

export interface SteeringTables {
  steering_directives: SteeringDirectivesTable;
  steering_cursor: SteeringCursorTable;
}

/** Every table the steering world owns (the module declares them). */
export const STEERING_TABLES = ['steering_directives', 'steering_cursor'] as const satisfies readonly (keyof SteeringTables)[];
