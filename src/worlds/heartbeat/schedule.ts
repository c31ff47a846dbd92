/**
 * When a bot is checked next (seed 2 §9): the backoff table, jitter, quiet hours in the bot's
 * local time, local days for budgets. Pure: time and randomness come in as arguments. Every next
 * time is an absolute epoch ms, so a sleeping machine catches up once on waking (no burst).
 */
import { startOfZonedDay, zonedDate } from '../../core/index.js';
import type { QuietHours } from '../../protocol/heartbeat.js';

export type Random = () => number;

/** §9.2 cap: no check waits longer than this (idle backoff, pulse-error backoff). */
export const MAX_INTERVAL_MS = 3600_000;
/** A person acted in the thread this recently: the bot is left alone (§4 "user-active"). */
export const USER_ACTIVE_MS = 90_000;

/** When a person's action at `at` stops counting as activity: the bot's next check (never a fixed delay after the tick). */
export function userActiveUntil(at: number): number {
  return at + USER_ACTIVE_MS;
}
/** A claim lost to a race: look again this soon. */
export const CLAIM_RETRY_MS = 30_000;
/** The optional single re-check after an `ask_user` nobody answered. */
export const ASK_RECHECK_MS = 24 * 3600_000;
/** `wait` at least this long. */
export const MIN_WAIT_MS = 60_000;
/** Pulse errors in a row that switch a bot's heartbeat off. */
export const MAX_PULSE_ERRORS = 3;

/** `ms` ± `fraction` (the no-candidate interval is ±20 %). */
export function jitter(ms: number, random: Random, fraction = 0.2): number {
  return Math.round(ms * (1 + (random() * 2 - 1) * fraction));
}

/** A due bot's first check: anywhere in its interval, so bots do not all wake together. */
export function staggeredFirstCheck(now: number, intervalMs: number, random: Random): number {
  return now + Math.floor(random() * intervalMs);
}

/**
 * After a restart: soon, staggered over two ticks, so the interrupted work resumes within three
 * ticks (§13 acceptance 2) without every bot pulsing in the same tick.
 */
export function restartCheck(now: number, tickMs: number, random: Random): number {
  return now + Math.floor(random() * 2 * tickMs);
}

/** `idle` pulse: the interval grows ×1.5 up to the cap (the adaptive interval). */
export function idleInterval(currentMs: number, baseMs: number): number {
  return Math.min(Math.round(Math.max(currentMs, baseMs) * 1.5), MAX_INTERVAL_MS);
}

/** `wait`: the pulse's eta, clamped to 1–1440 minutes, and at least a minute. */
export function waitDelay(etaMinutes: number): number {
  const eta = Math.min(1440, Math.max(1, Math.round(etaMinutes)));
  return Math.max(MIN_WAIT_MS, eta * 60_000);
}

/** Pulse error/timeout: 2^errors × the interval, capped. */
export function errorBackoff(consecutiveErrors: number, intervalMs: number): number {
  return Math.min(2 ** consecutiveErrors * intervalMs, MAX_INTERVAL_MS);
}

/** The calendar day (`YYYY-MM-DD`) budgets count in. */
export function dayKey(now: number, timeZone: string): string {
  return zonedDate(now, timeZone);
}

/** Local midnight after `now`: when spent budgets come back. */
export function nextMidnight(now: number, timeZone: string): number {
  return startOfZonedDay(now, timeZone, 1);
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Minutes since local midnight on the wall clock of `timeZone`. */
export function localMinutes(epochMs: number, timeZone: string): number {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', hour: '2-digit', minute: '2-digit' });
    formatters.set(timeZone, f);
  }
  let h = 0;
  let m = 0;
  for (const p of f.formatToParts(epochMs)) {
    if (p.type === 'hour') h = Number(p.value);
    if (p.type === 'minute') m = Number(p.value);
  }
  return h * 60 + m;
}

function toMinutes(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return h! * 60 + m!;
}

/**
 * Whether `now` is in the bot's quiet hours (a window may cross midnight: 22:00–08:00), and when
 * they end (the next check). A window whose start equals its end is empty.
 */
export function quietHours(now: number, q: QuietHours, timeZone: string): { quiet: boolean; endsAt: number | null } {
  if (!q.enabled) return { quiet: false, endsAt: null };
  const start = toMinutes(q.start);
  const end = toMinutes(q.end);
  if (start === end) return { quiet: false, endsAt: null };
  const m = localMinutes(now, timeZone);
  const quiet = start < end ? m >= start && m < end : m >= start || m < end;
  if (!quiet) return { quiet: false, endsAt: null };
  // The next local `end` after now: today's, or tomorrow's.
  let endsAt = startOfZonedDay(now, timeZone) + end * 60_000;
  if (endsAt <= now) endsAt = startOfZonedDay(now, timeZone, 1) + end * 60_000;
  return { quiet: true, endsAt };
}
