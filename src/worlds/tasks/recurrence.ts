/**
 * Recurrence (seed 1): `pending` (every tick until disabled), `once` (completes after its run)
 * and `cron:<expr>` (croner, in the configured time zone). Invalid input is rejected with the
 * reason, naming the field.
 */
import { Cron } from 'croner';
import { SubconsciousError, isTimeZone, systemTimeZone } from '../../core/index.js';

export type Recurrence = { kind: 'pending' } | { kind: 'once' } | { kind: 'cron'; expr: string };

export const defaultTimezone = systemTimeZone;

export function validateTimezone(timezone: string): string {
  if (isTimeZone(timezone)) return timezone;
  throw new SubconsciousError('config_invalid', `heartbeat.timezone: "${timezone}" is not an IANA time zone.`, {
    hint: 'Use a name such as "Europe/Paris" or "UTC".',
  });
}

/** Parse and validate; throws `invalid_params` naming `field` with croner's reason. */
export function parseRecurrence(input: string, timezone: string, field = 'recurrence'): Recurrence {
  const value = input.trim();
  if (value === 'pending') return { kind: 'pending' };
  if (value === 'once') return { kind: 'once' };
  if (value.startsWith('cron:')) {
    // One line, single spaces: the expression is shown in lists and goes into prompts as is.
    const expr = value.slice('cron:'.length).replace(/\s+/g, ' ').trim();
    if (!expr) throw invalid(field, 'the cron expression after "cron:" is empty');
    try {
      const job = new Cron(expr, { timezone, paused: true });
      job.stop();
    } catch (err) {
      throw invalid(field, `"${expr}" is not a valid cron expression (${cronReason((err as Error).message)})`);
    }
    return { kind: 'cron', expr };
  }
  throw invalid(field, `"${value.slice(0, 60)}" is not one of pending, once, cron:<expr>`);
}

export function formatRecurrence(r: Recurrence): string {
  return r.kind === 'cron' ? `cron:${r.expr}` : r.kind;
}

/** The next run strictly after `after` (epoch ms), or null when the expression never fires again. */
export function nextCronRun(expr: string, after: number, timezone: string): number | null {
  const job = new Cron(expr, { timezone, paused: true });
  try {
    const next = job.nextRun(new Date(after));
    return next ? next.getTime() : null;
  } finally {
    job.stop();
  }
}

/**
 * Where a task's schedule goes after a run at `ranAt`: `once` completes, `cron` moves to its next
 * time, `pending` stays due (runs every tick).
 */
export function advanceSchedule(recurrence: string, ranAt: number, timezone: string): { next_run_at: number | null; completed: boolean } {
  const r = parseRecurrence(recurrence, timezone);
  if (r.kind === 'once') return { next_run_at: null, completed: true };
  if (r.kind === 'cron') {
    const next = nextCronRun(r.expr, ranAt, timezone);
    return next === null ? { next_run_at: null, completed: true } : { next_run_at: next, completed: false };
  }
  return { next_run_at: null, completed: false };
}

/** The first due time of a new (or re-scheduled) task. */
export function initialNextRun(recurrence: string, now: number, timezone: string): number | null {
  const r = parseRecurrence(recurrence, timezone);
  return r.kind === 'cron' ? nextCronRun(r.expr, now, timezone) : null;
}

/**
 * A recurrence given for a new or re-scheduled task, validated and with its first due time.
 * A cron expression that never fires after `now` (e.g. "0 0 30 2 *", February 30th) is refused:
 * without a next time the task would look "never run" and be due at once.
 */
export function scheduleFor(input: string, now: number, timezone: string, field = 'recurrence'): { recurrence: string; next_run_at: number | null } {
  const r = parseRecurrence(input, timezone, field);
  const recurrence = formatRecurrence(r);
  if (r.kind !== 'cron') return { recurrence, next_run_at: null };
  const next = nextCronRun(r.expr, now, timezone);
  if (next === null) throw invalid(field, `the cron expression "${r.expr}" never fires after ${new Date(now).toISOString()}`);
  return { recurrence, next_run_at: next };
}

/** The allowed range of each field croner names, as a person counts it (croner counts days and months from 0). */
const CRON_FIELD_RANGES: Record<string, string> = {
  second: 'second must be 0-59',
  minute: 'minute must be 0-59',
  hour: 'hour must be 0-23',
  day: 'day of month must be 1-31',
  nearestWeekdays: 'day of month must be 1-31',
  month: 'month must be 1-12',
  dayOfWeek: 'day of week must be 0-7 or SUN-SAT',
};

/**
 * Croner's reason in a person's words: without its "CronPattern:" class prefix, and with the
 * field's range instead of croner's internal value (it reports day 32 as "day: 31").
 */
function cronReason(message: string): string {
  const reason = message.replace(/^CronPattern:\s*/, '').replace(/\.$/, '');
  const range = /^Invalid value for (\w+):/.exec(reason);
  if (range && CRON_FIELD_RANGES[range[1]!]) return CRON_FIELD_RANGES[range[1]!]!;
  if (/^invalid configuration format/.test(reason))
    return 'it needs five space-separated fields: minute hour day-of-month month day-of-week (six or seven with seconds and year)';
  const illegal = /^configuration entry \d+ \((.*)\) contains illegal characters$/.exec(reason);
  if (illegal) return `"${illegal[1]}" contains characters a cron field does not allow`;
  return reason.charAt(0).toLowerCase() + reason.slice(1);
}

function invalid(field: string, reason: string): SubconsciousError {
  return new SubconsciousError('invalid_params', `${field}: ${reason}`, {
    details: { field },
    // The page's Cron field takes the expression alone; RPC and the CLI take the `cron:` form.
    hint: "Use `pending`, `once` or `cron:<expr>`: over RPC or the CLI `cron:0 9 * * 1-5` (weekdays at 9:00); in the page's Cron field just `0 9 * * 1-5`.",
  });
}
