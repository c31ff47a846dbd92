/**
 * The usage tab's calendar: where each of the last `days` days begins in a zone, and its date.
 * Worked out with Intl (DST days are 23 or 25 hours long), which cost about 5 ms of the main
 * thread per `usage.summary` for 90 days; it changes only when the day does, so the grid is
 * kept per zone and span with the hours it holds for (today's start to tomorrow's): a call
 * within them formats nothing.
 */
import { startOfZonedDay, zonedDate } from '../core/time-zone.js';

export interface DayGrid {
  /** Ascending epoch ms where each day begins; the last is today. */
  starts: readonly number[];
  /** `YYYY-MM-DD` of each day, in the same order. */
  dates: readonly string[];
}

const KEEP = 16;
const grids = new Map<string, DayGrid & { until: number }>();

export function dayGrid(now: number, days: number, timeZone: string): DayGrid {
  const key = `${timeZone}\u0000${days}`;
  const hit = grids.get(key);
  if (hit && now >= hit.starts[hit.starts.length - 1]! && now < hit.until) return hit;
  const today = startOfZonedDay(now, timeZone, 0);
  // Days are counted back from today's start.
  const starts = Array.from({ length: days }, (_, i) => (i === days - 1 ? today : startOfZonedDay(now, timeZone, i - (days - 1))));
  const grid = { starts, dates: starts.map((s) => zonedDate(s, timeZone)), until: startOfZonedDay(now, timeZone, 1) };
  grids.delete(key);
  if (grids.size >= KEEP) grids.delete(grids.keys().next().value!);
  grids.set(key, grid);
  return grid;
}
