/**
 * Calendar days in an IANA time zone, for figures a person reads by their own day ("today" on
 * the Usage tab, a cron schedule). Built on Intl only: DST and odd offsets come from the platform.
 */

/** The machine's own zone, or UTC when the platform does not say. */
export function systemTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

export { isTimeZone } from '../protocol/time-zone.js';

const formatters = new Map<string, Intl.DateTimeFormat>();

function wallClock(epochMs: number, timeZone: string): { y: number; m: number; d: number; h: number; min: number; s: number } {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(epochMs)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return { y: parts.year!, m: parts.month!, d: parts.day!, h: parts.hour!, min: parts.minute!, s: parts.second! };
}

/** `YYYY-MM-DD` of the day `epochMs` falls in, in `timeZone`. */
export function zonedDate(epochMs: number, timeZone: string): string {
  const { y, m, d } = wallClock(epochMs, timeZone);
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** How far `timeZone`'s wall clock is ahead of UTC at `epochMs` (ms, whole seconds). */
function offsetAt(epochMs: number, timeZone: string): number {
  const w = wallClock(epochMs, timeZone);
  return Date.UTC(w.y, w.m - 1, w.d, w.h, w.min, w.s) - Math.floor(epochMs / 1000) * 1000;
}

/**
 * Epoch ms at which the calendar day `days` after the one holding `epochMs` begins in `timeZone`
 * (`days` = 0: the start of that very day). A day whose midnight a DST jump skips starts at the
 * first instant that exists.
 */
export function startOfZonedDay(epochMs: number, timeZone: string, days = 0): number {
  const { y, m, d } = wallClock(epochMs, timeZone);
  const midnightAsUtc = Date.UTC(y, m - 1, d + days);
  const target = zonedDate(midnightAsUtc, 'UTC');
  // Two passes settle the offset even when the day starts on the other side of a DST change.
  let start = midnightAsUtc - offsetAt(midnightAsUtc, timeZone);
  start = midnightAsUtc - offsetAt(start, timeZone);
  // Skipped midnight (the wall clock jumps from 23:59 to 01:00): step forward to the target day.
  while (zonedDate(start, timeZone) < target) start += 15 * 60_000;
  while (zonedDate(start - 1, timeZone) === target) start -= 15 * 60_000;
  return start;
}
