/**
 * The engine's face: every world instance's status (read from the store, never through a tick
 * lock), Run now, switching a world on or off, lifting a rate-cap halt, and the method list.
 */
import { z } from 'zod';
import type { Backoff } from './backoff.js';
import { defineContract, method } from './contract.js';

export { describeBackoff, type Backoff } from './backoff.js';

export type ModelRole = 'local' | 'agent';
export type TickOutcomeKind = 'committed' | 'quiet' | 'skipped' | 'superseded' | 'failed';

export type InstanceStatus = {
  world: string;
  /** What the world does, in a sentence (its module's description). */
  description: string;
  /** The page tab that shows this world's work, when it has one. */
  tab: string | null;
  enabled: boolean;
  /** Why the world is off whatever its toggle says (a config setting), or null. */
  disabled_by: string | null;
  /** null until the endpoint was probed. */
  provider_available: boolean | null;
  provider_unavailable_reason: string | null;
  /** Optional models that did not answer at the last gate. */
  optional_models_unavailable: Array<{ role: ModelRole; reason: string }>;
  interval_minutes: number;
  last_tick_at: number | null;
  total_ticks: number;
  consecutive_failures: number;
  halted: boolean;
  halt_reason: string | null;
  running: boolean;
  last_outcome: TickOutcomeKind | null;
  last_summary: string | null;
  last_error: string | null;
  next_tick_at: number | null;
  /**
   * Why the world waits longer than its cadence: its ticks failed `failures` times in a row, so
   * the scheduler backs off (cadence × 2^(failures-1), capped; a success resets it). Null when
   * the last tick did not fail, and while halted (the halt says why then).
   */
  backoff: Backoff | null;
};

/**
 * Every world's status in `instances`, in registration order (the module list's order).
 *
 * Legacy fields (seed 4 back-compat, from when the daemon ran one world): `enabled`,
 * `total_ticks`, `consecutive_failures` and `last_tick_at` mirror `instances[0]`, the first
 * registered world — in the shipped daemon the memory world, seed 4's own. They say nothing about
 * the other worlds: read `instances` for those. With no world registered they are `false`, `0`,
 * `0` and `null`.
 */
export type StatusResult = {
  instances: InstanceStatus[];
  /** Legacy: `instances[0].enabled` (false when there is no world). */
  enabled: boolean;
  /** Legacy: `instances[0].total_ticks` (0 when there is no world). */
  total_ticks: number;
  /** Legacy: `instances[0].consecutive_failures` (0 when there is no world). */
  consecutive_failures: number;
  /** Legacy: `instances[0].last_tick_at` (null when there is no world). */
  last_tick_at: number | null;
};

export type EngineEvents = {
  /**
   * Sent by the server first on every `/events` connection: `last_event_id` is where the stream
   * starts (reconnect with it as `Last-Event-ID` to get what follows). The page also sends itself
   * one (`reconnected`) when its views must reload.
   */
  hello: { reconnected?: boolean; last_event_id?: number };
  /**
   * `/events` could not replay everything after the client's `Last-Event-ID`: events from
   * `last_event_id` + 1 to `oldest_id` - 1 are no longer kept (or the store was reset). The
   * stream goes on after `head_id`; reload what you show.
   */
  'events.gap': { last_event_id: number; oldest_id: number; head_id: number };
  'tick.started': { world: string; generation: number; resumed: boolean };
  'tick.finished': {
    world: string;
    outcome: TickOutcomeKind;
    message: string;
    generation: number;
    resumed: boolean;
    duration_ms: number;
    /** The tick raised consecutive_failures (a failure, or a model-unreachable skip). */
    counts_as_failure: boolean;
  };
  'status.changed': { world: string };
};

export const worldName = z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be a world name such as "tasks"');

export const engineContract = defineContract<EngineEvents>()({
  methods: {
    'subconscious.status': method(
      z.strictObject({}),
      'Status of every world instance, read from the store. The legacy top-level fields (enabled, total_ticks, consecutive_failures, last_tick_at) mirror the first registered world only.',
    ).returns<StatusResult>(),
    'subconscious.trigger': method(
      z.strictObject({ kind: z.union([z.literal('all'), worldName]).optional() }),
      'Run a tick now in the background (while one runs, one more follows it; a running tick is never superseded); returns at once. A world that is off is not run: asked by name, that is a world_off error saying why; asked for all, it is listed in skipped with why.',
    ).returns<{ triggered: string[]; skipped: Array<{ world: string; reason: string }> }>(),
    'subconscious.set_enabled': method(
      z.strictObject({ world: worldName, enabled: z.boolean() }),
      'Enable or disable one world instance (kept across restarts).',
    ).returns<{ world: string; enabled: boolean }>(),
    'subconscious.clear_halt': method(
      z.strictObject({ world: worldName }),
      "Lift a world's rate-cap halt after changing what made its requests too large (what its halt_reason says to change); it ticks at once and halts again if they still do not fit. {cleared: false} when it was not halted.",
    ).returns<{ world: string; cleared: boolean }>(),
    'rpc.methods': method(z.strictObject({}), 'The methods this daemon serves.').returns<Array<{ name: string; description: string }>>(),
  },
  events: ['hello', 'events.gap', 'tick.started', 'tick.finished', 'status.changed'],
});
