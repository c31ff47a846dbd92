/**
 * The steering world's settings (the `[worlds.steering]` section of `subconscious.toml`; the app
 * adds `enabled` itself). Expired directives are kept 30 days for the history, then deleted.
 */
import { z } from 'zod';

export const MAX_EXPIRES_AFTER_CYCLES = 1000;

export const steeringConfigSchema = z.strictObject({
  /** The cron trigger: minutes between reviews (the harness's gate also asks for one when it forwards). */
  interval_minutes: z.number().int('must be a whole number of minutes').min(1, 'at least 1').max(1440, 'at most 1440 (a day)').default(30),
  /** How long a directive steers when the model names no `expires_after_cycles`. */
  default_expires_after_cycles: z
    .number()
    .int('must be a whole number of cycles')
    .min(1, 'at least 1')
    .max(MAX_EXPIRES_AFTER_CYCLES, `at most ${MAX_EXPIRES_AFTER_CYCLES}`)
    .default(20),
  /** The model role the review runs on. */
  role: z.enum(['local', 'agent'], { error: 'must be "local" or "agent"' }).default('local'),
  /** Expired directives older than this are deleted (the one in force and unexpired ones are kept). */
  retention_days: z.number().int('must be a whole number of days').min(1, 'at least 1').max(3650, 'at most 3650 (ten years)').default(30),
  /** `max_tokens` of a review's reply: a directive is one sentence; a reply cut here is never installed. */
  max_output_tokens: z.number().int('must be a whole number of tokens').min(50, 'at least 50').max(8192, 'at most 8192').default(400),
});

export type SteeringConfig = z.output<typeof steeringConfigSchema>;
export type SteeringConfigInput = z.input<typeof steeringConfigSchema>;

export const DEFAULT_STEERING_CONFIG: SteeringConfig = steeringConfigSchema.parse({});
