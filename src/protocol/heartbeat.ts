/**
 * The heartbeat's contract (seed 2, issue 12): the methods the Bots tab and the CLI call, the rows
 * they see, and the events that keep them live. The method names follow the seed (`bots.*`): the
 * heartbeat is part of how bots behave, even though its own module owns these methods.
 * Browser-safe: zod only.
 */
import { z } from 'zod';
import { answeredByParams, type AnswerVia } from './agent.js';
import { defineContract, method } from './contract.js';
import { isTimeZone } from './time-zone.js';

/** The rollout flag (§14): nothing, candidates logged, verdicts logged, or acting on them. */
export const HEARTBEAT_MODES = ['off', 'triage', 'shadow', 'resume'] as const;
export type HeartbeatMode = (typeof HEARTBEAT_MODES)[number];

/** Tier 0's candidate rules (§5.2), in priority order. */
export const CANDIDATE_RULES = [
  'interrupted_task',
  'orphan_working',
  'interrupted_message',
  'follow_up_due',
  'approval_expired',
  'retryable_failure',
  'stale_streaming',
  'follow_up_reminder',
] as const;
export type CandidateRule = (typeof CANDIDATE_RULES)[number];

/**
 * Why a bot was not pulsed (§5.2's skip rules, §9's gates), in the order they are checked. Skips
 * are never failures: each is a reason, with the next check it leads to.
 */
export const SKIP_RULES = [
  'disabled', // the bot's heartbeat is off (by a person, or after 3 pulse errors)
  'quiet_hours', // the bot's local quiet hours
  'busy', // a run, a queued job, a dispatch or a pulse of this bot (single-flight), here or in another process
  'user_active', // a person acted in the thread less than 90 s ago
  'backoff', // pulse errors: waiting out the exponential backoff
  'group_thread', // only group-thread work: left to its members
  'waiting_user', // the bot asked a question the person has not answered
  'user_driving', // the person wrote after the work stopped
  'superseded', // the bot answered since (its newest message is newer than the work)
  'asked', // a check-in about it waits for the person
  'exhausted', // attempts reached max_task_attempts (one check-in, then nothing until a person resets it)
  'cooldown', // just resumed: the cooldown runs
  'budget', // the bot's or the global daily budget is spent (until local midnight)
  'resume_concurrency', // enough heartbeat resumes run already
  'nothing_unfinished', // no unfinished work at all (the bot sleeps until something changes)
] as const;
export type SkipRule = (typeof SKIP_RULES)[number];

/** The pulse's verdicts (§6.3). */
export const VERDICTS = ['idle', 'wait', 'resume', 'ask_user'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** Appendix A's states. */
export const HEARTBEAT_STATES = ['idle', 'checking', 'cooldown', 'resuming', 'waiting_user', 'disabled'] as const;
export type HeartbeatState = (typeof HEARTBEAT_STATES)[number];

/** What one heartbeat log entry records. */
export const LOG_OUTCOMES = [
  'skipped', // a skip rule stopped it (see `skip`)
  'candidate', // triage mode: the candidate found, nothing more
  'verdict', // a pulse answered (shadow: logged only; resume: idle/wait)
  'resumed', // a resume was claimed and dispatched (see `dispatched`)
  'checked_in', // a check-in was created (ask_user, exhausted, BLOCKED:)
  'pulse_error', // the pulse model failed or timed out
  'claim_lost', // the task changed between triage and claim
  'set_aside', // a person's message dropped the queued resume (attempt refunded)
  'settled', // a heartbeat resume ended
  'disabled', // the bot's heartbeat was switched off (3 pulse errors, or a person)
  'reset', // a person reset attempts / asked for a check now
] as const;
export type LogOutcome = (typeof LOG_OUTCOMES)[number];

export const CHECKIN_SOURCES = ['ask_user', 'exhausted', 'blocked', 'interrupted_message', 'approval_expired'] as const;
export type CheckinSource = (typeof CHECKIN_SOURCES)[number];
export const CHECKIN_STATES = ['pending', 'answered', 'dismissed', 'cancelled', 'superseded'] as const;
export type CheckinState = (typeof CHECKIN_STATES)[number];

export const FOLLOWUP_KINDS = ['delay', 'user'] as const;
export type FollowUpKind = (typeof FOLLOWUP_KINDS)[number];
/** `bot`: a `FOLLOWUP:` line; `person`: a person asked to be checked back on (rule 8). */
export const FOLLOWUP_ORIGINS = ['bot', 'person'] as const;
export type FollowUpOrigin = (typeof FOLLOWUP_ORIGINS)[number];
export const FOLLOWUP_STATES = ['pending', 'fired', 'resolved', 'cleared'] as const;
export type FollowUpState = (typeof FOLLOWUP_STATES)[number];

export const MAX_REASON_CHARS = 200;
export const MAX_INSTRUCTION_CHARS = 400;
/** The heartbeat log keeps its newest 200 entries, store-wide (seed 2 §10.2). */
export const LOG_CAP = 200;
/** @deprecated The cap was per bot; it is store-wide now. Use `LOG_CAP`. */
export const LOG_CAP_PER_BOT = LOG_CAP;
export const PENDING_CHECKINS_CAP = 50;
/** How many answered check-ins `bots.heartbeat_snapshot` sends in `answered_checkins`. */
export const ANSWERED_CHECKINS_SHOWN = 20;
export const FOLLOWUPS_CAP_PER_BOT = 20;

export interface QuietHours {
  enabled: boolean;
  /** Local `HH:MM` (the bot's time zone). */
  start: string;
  end: string;
}

/** The store-wide settings in effect: the `[worlds.heartbeat]` section with what people changed over it. */
export interface HeartbeatSettings {
  mode: HeartbeatMode;
  tick_seconds: number;
  interval_seconds: number;
  max_pulses_per_day: number;
  max_resumes_per_day: number;
  max_task_attempts: number;
  resume_cooldown_seconds: number;
  pulse_concurrency: number;
  resume_concurrency: number;
  quiet_hours: QuietHours;
  auto_resume_on_restart: boolean;
  follow_ups_enabled: boolean;
  pulse_max_output_tokens: number;
  pulse_timeout_seconds: number;
  global_pulses_per_day: number;
  global_resumes_per_day: number;
  /** The pulse model: `local`, `agent`, `local:<model>`, `agent:<model>` or a model on the local endpoint. */
  model: string;
  timezone: string;
  /** Keys a person changed at run time (`bots.set_heartbeat_settings` without `id`); the rest come from the file. */
  overridden: string[];
}

/** One bot's heartbeat (§10.4), its settings resolved (per bot, else global). */
export interface BotHeartbeat {
  bot_id: string;
  enabled: boolean;
  mode: HeartbeatMode;
  /** A pulse is in flight ("Checking in…"). */
  checking: boolean;
  state: HeartbeatState;
  /** Epoch ms of the next check; null: nothing unfinished (a change wakes it). */
  next_heartbeat_at: number | null;
  interval_seconds: number;
  /** The adaptive interval now (grows while pulses say idle, back to the base on a resume or a message). */
  current_interval_seconds: number;
  quiet_hours: QuietHours;
  timezone: string;
  model: string;
  follow_ups_enabled: boolean;
  auto_resume_on_restart: boolean;
  max_pulses_per_day: number;
  max_resumes_per_day: number;
  max_task_attempts: number;
  pulses_today: number;
  resumes_today: number;
  last_tick_at: number | null;
  last_pulse_at: number | null;
  last_verdict: Verdict | null;
  last_reason: string;
  /** The why of the last check: `resumed`, `skipped: user_active`, … */
  last_outcome: string | null;
  consecutive_errors: number;
  cooldown_until: number | null;
  last_resume_at: number | null;
  last_resume_task_id: string | null;
  disabled_reason: string | null;
  /** Keys set for this bot (the rest are inherited from the global settings). */
  overridden: string[];
}

export interface HeartbeatLogEntry {
  id: string;
  /** null: a store-wide entry (the global budget). */
  bot_id: string | null;
  /** The first time; `last_at` and `repeats` grow when the same skip happens again in a row. */
  at: number;
  last_at: number;
  repeats: number;
  mode: HeartbeatMode;
  /** 0 triage, 1 pulse, 2 resume. */
  tier: 0 | 1 | 2;
  outcome: LogOutcome;
  rule: CandidateRule | null;
  skip: SkipRule | null;
  verdict: Verdict | null;
  /** ≤ 200 characters, one line. */
  reason: string;
  task_id: string | null;
  /** The title of that task, so a person reads which work it was (null: no task, or it was deleted since). */
  task_title: string | null;
  dispatched: { task_id: string; message_id: string } | null;
  escalated: boolean;
  model: string | null;
  ms: number | null;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
}

export interface Checkin {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  source: CheckinSource;
  question: string;
  state: CheckinState;
  created_at: number;
  resolved_at: number | null;
  /** Who answered it (a person's name, "you" by default; null: pending, resolved by the heartbeat, or an older row). */
  answered_by: string | null;
  /** Through which face it was answered (`page`, `cli`, `rpc`, `mcp`; null as for answered_by). */
  answered_via: AnswerVia | null;
}

export interface FollowUp {
  id: string;
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  kind: FollowUpKind;
  origin: FollowUpOrigin;
  note: string;
  /** null for `when user replies`. */
  due_at: number | null;
  state: FollowUpState;
  created_at: number;
}

export interface HeartbeatToday {
  /** `YYYY-MM-DD` in the global time zone. */
  date: string;
  pulses: number;
  resumes: number;
  max_pulses: number;
  max_resumes: number;
}

export interface HeartbeatSnapshot {
  settings: HeartbeatSettings;
  bots: BotHeartbeat[];
  /** Pending check-ins (of the bots asked for, or all). */
  checkins: Checkin[];
  /**
   * Check-ins a person resolved lately, newest first (at most `ANSWERED_CHECKINS_SHOWN`): answered
   * in the thread (`state: 'answered'`, `answered_via: null`) or answered, dismissed or retried
   * through a face (`answered_via`: `page`, `cli`, `rpc`, `mcp`; `answered_by`: who). Added in
   * issue 18 §5 so the page can say how each was answered; older daemons do not send it.
   */
  answered_checkins?: Checkin[];
  followups: FollowUp[];
  /** The newest log entries (of the bots asked for, or all). */
  log: HeartbeatLogEntry[];
  today: HeartbeatToday;
  at: number;
}

/**
 * The heartbeat's cost beside an interval heartbeat of the same bots (one full model call per bot
 * per 30 minutes, at the measured average prompt size of a full bot call), as a ratio.
 */
export interface HeartbeatUsage {
  days: number;
  /** The IANA zone the days are counted in. */
  timezone: string;
  /** @deprecated The same as `timezone` (the naming convention's old name), sent for one more release. */
  time_zone: string;
  from: number;
  to: number;
  bots: number;
  pulses: { calls: number; input_tokens: number; output_tokens: number };
  resumes: { runs: number; calls: number; input_tokens: number; output_tokens: number };
  heartbeat_tokens: number;
  /** The average prompt of a full bot call, measured from the bots' runs in the period (null: none ran). */
  measured_prompt_tokens: number | null;
  full_calls_measured: number;
  interval: { minutes: number; calls: number; tokens: number | null };
  /** heartbeat_tokens / interval.tokens (null until a prompt size is measured). */
  ratio: number | null;
}

// ── params ──────────────────────────────────────────────────────────────────

const id = z.string().trim().min(1, 'must be a non-empty id').max(200, 'is too long to be an id');
const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a local time HH:MM (00:00–23:59)');
export const quietHoursSchema = z.strictObject({ enabled: z.boolean(), start: hhmm, end: hhmm });
const timezone = z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"');
/** `local`, `agent`, `local:<model>`, `agent:<model>`, or a model name on the local endpoint (no spaces). */
export function isPulseModel(spec: string): boolean {
  if (/\s/.test(spec) || spec === '') return false;
  const role = /^(local|agent):(.*)$/.exec(spec);
  return role ? role[2]!.length > 0 : true;
}
const pulseModel = z
  .string()
  .trim()
  .min(1, 'must name the pulse model')
  .max(200)
  .refine(isPulseModel, 'must be local, agent, local:<model>, agent:<model> or a model on the local endpoint');

/** Ranges of §15 (one source for the config file and the RPC). */
export const heartbeatRanges = {
  tick_seconds: z.number().int('must be a whole number of seconds').min(15, 'must be at least 15').max(120, 'must be at most 120'),
  interval_seconds: z.number().int('must be a whole number of seconds').min(120, 'must be at least 120').max(3600, 'must be at most 3600'),
  max_pulses_per_day: z.number().int().min(1, 'must be at least 1').max(288, 'must be at most 288'),
  max_resumes_per_day: z.number().int().min(0, 'must be at least 0').max(48, 'must be at most 48'),
  max_task_attempts: z.number().int().min(1, 'must be at least 1').max(10, 'must be at most 10'),
  resume_cooldown_seconds: z.number().int().min(120, 'must be at least 120').max(7200, 'must be at most 7200'),
  pulse_concurrency: z.number().int().min(1, 'must be at least 1').max(8, 'must be at most 8'),
  resume_concurrency: z.number().int().min(1, 'must be at least 1').max(4, 'must be at most 4'),
  pulse_max_output_tokens: z.number().int().min(80, 'must be at least 80').max(400, 'must be at most 400'),
  pulse_timeout_seconds: z.number().min(3, 'must be at least 3').max(30, 'must be at most 30'),
  global_pulses_per_day: z.number().int().min(1, 'must be at least 1').max(100_000, 'must be at most 100000'),
  global_resumes_per_day: z.number().int().min(0, 'must be at least 0').max(10_000, 'must be at most 10000'),
  quiet_hours: quietHoursSchema,
  timezone,
  model: pulseModel,
} as const;

/** Keys a bot may set for itself (null: inherit the global value). */
export const BOT_SETTING_KEYS = [
  'interval_seconds',
  'quiet_hours',
  'timezone',
  'model',
  'follow_ups_enabled',
  'auto_resume_on_restart',
  'max_pulses_per_day',
  'max_resumes_per_day',
  'max_task_attempts',
] as const;
export type BotSettingKey = (typeof BOT_SETTING_KEYS)[number];

/** Keys only the store-wide settings have. */
export const GLOBAL_ONLY_KEYS = [
  'mode',
  'tick_seconds',
  'resume_cooldown_seconds',
  'pulse_concurrency',
  'resume_concurrency',
  'pulse_max_output_tokens',
  'pulse_timeout_seconds',
  'global_pulses_per_day',
  'global_resumes_per_day',
] as const;

const r = heartbeatRanges;
export const setHeartbeatSettingsParams = z
  .strictObject({
    bot_id: id.optional(),
    enabled: z.boolean().optional(),
    mode: z.enum(HEARTBEAT_MODES).nullable().optional(),
    tick_seconds: r.tick_seconds.nullable().optional(),
    interval_seconds: r.interval_seconds.nullable().optional(),
    max_pulses_per_day: r.max_pulses_per_day.nullable().optional(),
    max_resumes_per_day: r.max_resumes_per_day.nullable().optional(),
    max_task_attempts: r.max_task_attempts.nullable().optional(),
    resume_cooldown_seconds: r.resume_cooldown_seconds.nullable().optional(),
    pulse_concurrency: r.pulse_concurrency.nullable().optional(),
    resume_concurrency: r.resume_concurrency.nullable().optional(),
    quiet_hours: r.quiet_hours.nullable().optional(),
    auto_resume_on_restart: z.boolean().nullable().optional(),
    follow_ups_enabled: z.boolean().nullable().optional(),
    pulse_max_output_tokens: r.pulse_max_output_tokens.nullable().optional(),
    pulse_timeout_seconds: r.pulse_timeout_seconds.nullable().optional(),
    global_pulses_per_day: r.global_pulses_per_day.nullable().optional(),
    global_resumes_per_day: r.global_resumes_per_day.nullable().optional(),
    model: r.model.nullable().optional(),
    timezone: r.timezone.nullable().optional(),
  })
  .refine((p) => Object.keys(p).some((k) => k !== 'bot_id' && (p as Record<string, unknown>)[k] !== undefined), {
    message: 'give at least one setting to change (null puts a setting back to the inherited value)',
  })
  .refine((p) => p.bot_id === undefined || GLOBAL_ONLY_KEYS.every((k) => p[k] === undefined), {
    message: `${GLOBAL_ONLY_KEYS.join(', ')} are store-wide: leave out bot_id to change them`,
  })
  .refine((p) => p.bot_id !== undefined || p.enabled === undefined, {
    message: 'enabled is per bot: give bot_id (switch the whole heartbeat with mode, or [worlds.heartbeat] enabled in the config file)',
  });
export type SetHeartbeatSettingsParams = z.output<typeof setHeartbeatSettingsParams>;

// ── events ──────────────────────────────────────────────────────────────────

export type HeartbeatEvents = {
  /** A bot's heartbeat state changed (next check, verdict, counts, settings): read it with bots.heartbeat_snapshot. */
  'heartbeat.bot_changed': {
    bot_id: string;
    state: HeartbeatState;
    next_heartbeat_at: number | null;
    last_verdict: Verdict | null;
    last_reason: string;
    last_outcome: string | null;
  };
  'heartbeat.log_added': { entry: HeartbeatLogEntry };
  'heartbeat.checkin_changed': { checkin: Checkin };
  'heartbeat.followup_changed': { followup: FollowUp };
  'heartbeat.settings_changed': { settings: HeartbeatSettings };
};

export const heartbeatContract = defineContract<HeartbeatEvents>()({
  methods: {
    'bots.set_heartbeat': method(
      z.strictObject({ bot_id: id, enabled: z.boolean() }),
      "Switch one bot's heartbeat on or off: {bot_id, enabled}. On again, its pulse-error count starts over.",
      { renamed: { id: 'bot_id' } },
    ).returns<BotHeartbeat>(),
    'bots.heartbeat_now': method(
      z.strictObject({ bot_id: id }),
      'Check a bot now: {bot_id}. A person asking resets its tasks’ attempts and pending check-ins (seed 2 §7.5); budgets still apply.',
      { renamed: { id: 'bot_id' } },
    ).returns<BotHeartbeat>(),
    'bots.set_heartbeat_settings': method(
      setHeartbeatSettingsParams,
      'Change heartbeat settings: {bot_id, …} for one bot, or without bot_id for all (mode, budgets, concurrency); null puts a key back to the inherited value.',
      { renamed: { id: 'bot_id' } },
    ).returns<{ settings: HeartbeatSettings; bot: BotHeartbeat | null }>(),
    'bots.resolve_checkin': method(
      z.strictObject({ id, resolution: z.enum(['answered', 'dismissed', 'retry']), ...answeredByParams }),
      'Resolve a check-in: {id, resolution: answered | dismissed | retry (reset the attempts and check again), by?, via?}; the row keeps who answered and through which face.',
    ).returns<Checkin>(),
    'bots.mark_user_active': method(
      z.strictObject({ thread_id: id }),
      'A person is active in a thread: {thread_id}. The heartbeat leaves its bots alone until 90 s after it.',
    ).returns<{ thread_id: string; at: number }>(),
    'bots.heartbeat_log': method(
      z.strictObject({
        bot_id: id.optional(),
        limit: z.number().int().min(1).max(200, 'at most 200').default(50),
        before: z.number().int().min(0).optional(),
      }),
      'Heartbeat log, newest first: {bot_id?, limit? (≤200), before? (epoch ms)}. Each entry says which rule matched or which skip stopped it, the verdict and its reason, and what was dispatched.',
    ).returns<HeartbeatLogEntry[]>(),
    'bots.heartbeat_snapshot': method(
      z.strictObject({ bot_ids: z.array(id).max(500, 'at most 500 bots').optional() }),
      "The Bots tab's heartbeat section: {bot_ids?}: settings, each bot's heartbeat (checking, next check, today's counts, last verdict), pending check-ins and follow-ups, recent log.",
    ).returns<HeartbeatSnapshot>(),
    'bots.heartbeat_usage': method(
      z.strictObject({
        days: z.number().int().min(1).max(90, 'at most 90').default(1),
        timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
      }),
      "The heartbeat's tokens beside an interval heartbeat of the same bots (one full call per bot per 30 min at the measured prompt size): {days?, timezone?}.",
      { renamed: { time_zone: 'timezone' } },
    ).returns<HeartbeatUsage>(),
    'bots.add_followup': method(
      z.strictObject({
        bot_id: id,
        in_minutes: z
          .number()
          .int('must be a whole number of minutes')
          .min(1, 'must be at least 1')
          .max(30 * 24 * 60, 'must be at most 30 days'),
        note: z.string().trim().min(1, 'must not be empty').max(400, 'at most 400 characters'),
      }),
      'A person asks a bot to check back later: {bot_id, in_minutes, note}. When due, the heartbeat wakes the bot on it (rule 8).',
      { renamed: { id: 'bot_id' } },
    ).returns<FollowUp>(),
  },
  events: ['heartbeat.bot_changed', 'heartbeat.log_added', 'heartbeat.checkin_changed', 'heartbeat.followup_changed', 'heartbeat.settings_changed'],
});

export type HeartbeatMethods = (typeof heartbeatContract)['methods'];
