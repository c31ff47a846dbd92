/**
 * The bots host's settings: the `[worlds.bots]` section of `subconscious.toml`. Defaults are
 * seed 2's (30 s routine tick, 10-minute unattended approvals, a 250 ms gap between one job and
 * the next); a run's time cap and step cap default to the app's agent runner (`[agent]`, 20
 * minutes and 25 steps unless set there) when this section says nothing.
 */
import { z } from 'zod';
import { SubconsciousError, configIssueReason, isTimeZone } from '../core/index.js';

export const botsConfigSchema = z.strictObject({
  /** How often due routines are checked (seed 2: 30 s). */
  routine_tick_seconds: z.number().int('must be a whole number of seconds').min(5, 'must be at least 5').max(3600, 'must be at most 3600').default(30),
  /** Unattended runs (routines, handoffs, heartbeat, other modules): their approvals expire after this long. */
  unattended_approval_minutes: z
    .number()
    .int('must be a whole number of minutes')
    .min(1, 'must be at least 1')
    .max(24 * 60, 'must be at most 1440 (a day)')
    .default(10),
  /** The time cap of one run (default: the app's `[agent] run_cap_minutes`). */
  run_cap_minutes: z
    .number()
    .positive('must be above 0')
    .max(24 * 60, 'must be at most 1440 (a day)')
    .optional(),
  /** Model calls per run (default: the app's `[agent] max_steps`). */
  max_steps: z.number().int('must be a whole number').min(1, 'must be at least 1').max(200, 'must be at most 200').optional(),
  /** The pause between one job's end and the next job's start (seed 2 §5.1's window; isIdle covers it). */
  next_job_delay_ms: z.number().int('must be a whole number of milliseconds').min(0, 'must be 0 or more').max(5000, 'must be at most 5000').default(250),
  /** How often a streaming message's text is written to the database (deltas are sent at once). */
  stream_flush_ms: z.number().int('must be a whole number of milliseconds').min(20, 'must be at least 20').max(10_000, 'must be at most 10000').default(250),
  /** History given to a run: at most this many messages, newest kept… */
  history_messages: z.number().int('must be a whole number').min(1, 'must be at least 1').max(1000, 'must be at most 1000').default(40),
  /** …and at most this many characters. */
  history_chars: z.number().int('must be a whole number').min(1000, 'must be at least 1000').max(2_000_000, 'must be at most 2000000').default(60_000),
  /** Handoffs in one chain (a → b → a → …) before the host refuses the next. */
  max_handoffs: z.number().int('must be a whole number').min(0, 'must be 0 or more').max(50, 'must be at most 50').default(6),
  /** IANA zone for routine schedules that name none (default: this machine's). */
  timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
});

export type BotsConfig = z.output<typeof botsConfigSchema>;

/** Validate `[worlds.bots]`; a bad value is `config_invalid` naming the key and the reason. */
export function parseBotsConfig(raw: unknown = {}): BotsConfig {
  const result = botsConfigSchema.safeParse(raw ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const key = ['worlds', 'bots', ...issue.path.map(String)].join('.');
  const reason = configIssueReason(issue);
  throw new SubconsciousError('config_invalid', `${key}: ${reason}`, {
    hint: 'Fix [worlds.bots] in subconscious.toml (or remove the key to use its default).',
  });
}

export const defaultBotsConfig: BotsConfig = parseBotsConfig({});
