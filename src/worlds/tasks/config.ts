/**
 * The `[worlds.tasks]` section (seed 1's `[heartbeat]`, still read as an alias): cadence, whether
 * the local model evaluates at all, the situation report's budget, the zone `cron:` schedules run
 * in, how long the activity log is kept, the safety net of the unchanged-task skip, and how often
 * the models and skills are probed.
 */
import { z } from 'zod';
import { isTimeZone } from '../../core/index.js';

export const tasksConfig = z.strictObject({
  interval_minutes: z.number().int('must be a whole number of minutes').min(5, 'must be at least 5').max(1440).default(5),
  inference_enabled: z.boolean().default(true),
  context_budget_tokens: z.number().int().min(1000, 'must be at least 1000').max(1_000_000).default(40_000),
  /** IANA zone for `cron:` task schedules (default: the top-level `timezone`, else this machine's). */
  timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
  /** Activity log rows older than this many days are deleted after a tick (0 keeps them all). */
  log_retention_days: z.number().int().min(0).max(3650).default(30),
  /**
   * A task whose inputs did not change since its last "nothing new" is not evaluated (no call)
   * until this many minutes have passed; 0 evaluates every due task on every tick (seed 1's
   * literal behaviour).
   */
  reevaluate_unchanged_after_minutes: z
    .number()
    .int('must be a whole number of minutes')
    .min(0, 'must be 0 (never skip) or more')
    .max(10_080, 'must be at most 10080 (a week)')
    .default(360),
  /** How often the models and skills are probed while the daemon runs (the page's health banner). */
  health_check_minutes: z.number().int('must be a whole number of minutes').min(1, 'must be at least 1').max(60, 'must be at most 60').default(5),
  /**
   * Globs the workspace scan ignores, on top of the built-in noise list (workspace-ignore.ts:
   * .git/, node_modules/, .subconscious/, editor swap files, SQLite db/wal files…): a change to
   * an ignored file is not a change, so it costs no call.
   */
  workspace_ignore: z.array(z.string().trim().min(1, 'must not be empty').max(200, 'at most 200 characters')).max(200, 'at most 200 globs').default([]),
});

export type TasksConfig = z.output<typeof tasksConfig>;
