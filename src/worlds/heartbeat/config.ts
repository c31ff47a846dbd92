/**
 * The `[worlds.heartbeat]` section (seed 2 §15): every key, its range and its default. `mode`
 * ships as `resume` (the seed's shipping default, P2+). The app adds `enabled` itself (a hard off).
 *
 * TOML keys are snake_case as everywhere in `subconscious.toml`; the seed's names map directly:
 * `tickSec` → `tick_seconds`, `intervalSec` → `interval_seconds`, `maxPulsesPerDay` →
 * `max_pulses_per_day`, …, pulse max output → `pulse_max_output_tokens`, pulse timeout →
 * `pulse_timeout_seconds`, global daily budgets → `global_pulses_per_day` / `global_resumes_per_day`.
 */
import { z } from 'zod';
import { HEARTBEAT_MODES, heartbeatRanges as r } from '../../protocol/heartbeat.js';

export const DEFAULT_QUIET_HOURS = { enabled: false, start: '22:00', end: '08:00' } as const;

export const heartbeatConfig = z.strictObject({
  /** Rollout (§14): off, triage (log candidates), shadow (log verdicts), resume (act). */
  mode: z.enum(HEARTBEAT_MODES, { message: `must be one of ${HEARTBEAT_MODES.join(', ')}` }).default('resume'),
  /** The host timer: one engine tick this often. */
  tick_seconds: r.tick_seconds.default(30),
  /** A bot's base idle interval (no candidate → this, ±20 %). */
  interval_seconds: r.interval_seconds.default(300),
  max_pulses_per_day: r.max_pulses_per_day.default(48),
  max_resumes_per_day: r.max_resumes_per_day.default(8),
  /** Resumes of one task before one check-in and no more (until a person resets it). */
  max_task_attempts: r.max_task_attempts.default(3),
  resume_cooldown_seconds: r.resume_cooldown_seconds.default(600),
  pulse_concurrency: r.pulse_concurrency.default(2),
  resume_concurrency: r.resume_concurrency.default(2),
  /** Local time of each bot (its own zone, else `timezone`); off by default. */
  quiet_hours: r.quiet_hours.default({ ...DEFAULT_QUIET_HOURS }),
  /** §5.6: after a restart, resume an interrupted task with a checkpoint and no attempts without a pulse. */
  auto_resume_on_restart: z.boolean().default(false),
  /** The FOLLOWUP:/BLOCKED: lines in the persona, and acting on them. */
  follow_ups_enabled: z.boolean().default(true),
  pulse_max_output_tokens: r.pulse_max_output_tokens.default(180),
  pulse_timeout_seconds: r.pulse_timeout_seconds.default(8),
  global_pulses_per_day: r.global_pulses_per_day.default(200),
  global_resumes_per_day: r.global_resumes_per_day.default(24),
  /** The pulse model (§6.1): `local` (default), `agent`, `local:<model>`, `agent:<model>`, or a model on the local endpoint. */
  model: r.model.default('local'),
  /** The zone days (budgets) and quiet hours are counted in when a bot names none (default: the top-level `timezone`). */
  timezone: r.timezone.optional(),
});

export type HeartbeatConfig = z.output<typeof heartbeatConfig>;
