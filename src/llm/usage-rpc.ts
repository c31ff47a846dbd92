/**
 * `usage.summary` and `usage.calls`: what the model-call ledger (`model_calls`) says about
 * calls and tokens, for the page's Usage tab. Days are calendar days in the viewer's time zone
 * (the page sends it; else the daemon's); every figure comes straight from the ledger so the
 * page's totals equal a direct count.
 */
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Clock } from '../core/clock.js';
import { isTimeZone, startOfZonedDay, zonedDate } from '../core/time-zone.js';
import { Ledger } from './ledger.js';
import type { Database, ModelCallsTable } from '../store/schema.js';
import { defineMethod, type RpcMethod } from '../core/rpc.js';

export interface UsageFigures {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  /** Calls whose outcome was not `ok`. */
  failed: number;
}

export interface UsageGroup extends UsageFigures {
  key: string;
}

export interface UsageBreakdown extends UsageFigures {
  by_world: UsageGroup[];
  by_purpose: UsageGroup[];
}

export interface UsageDay extends UsageBreakdown {
  /** `YYYY-MM-DD` in the summary's time zone. */
  date: string;
  /** Epoch ms of the day's start (local midnight, or the first instant after a skipped one). */
  start: number;
}

export interface UsageSummary {
  days: number;
  /** The IANA zone the days are counted in. */
  time_zone: string;
  /** Epoch ms: the start of the first day covered. */
  from: number;
  /** Epoch ms: when the summary was computed. */
  to: number;
  /** Every world and purpose seen in the period, sorted, so charts keep stable colours. */
  worlds: string[];
  purposes: string[];
  today: UsageDay;
  /** Oldest first, one entry per day, days without calls included with zeros. */
  per_day: UsageDay[];
  /** The whole period. */
  totals: UsageBreakdown;
}

/** A ledger row as the page reads it (`estimated` as a boolean). */
export type UsageCallRow = Omit<ModelCallsTable, 'estimated'> & { estimated: boolean };

export interface UsageCalls {
  total: number;
  rows: UsageCallRow[];
}

export const usageSummaryParams = z
  .object({
    days: z.number().int().min(1).max(90).default(14),
    time_zone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
  })
  .strict();
export const usageCallsParams = z
  .object({
    limit: z.number().int().min(1).max(500).default(50),
    offset: z.number().int().min(0).default(0),
    world: z.string().min(1).max(100).optional(),
  })
  .strict();

/** `defaultTimeZone`: the zone days are counted in when the caller names none. */
export function usageRpcMethods(db: Kysely<Database>, clock: Clock, defaultTimeZone = 'UTC'): RpcMethod[] {
  return [
    defineMethod(
      'usage.summary',
      usageSummaryParams,
      "Model calls and tokens from the ledger, today and per day (default 14 days; {time_zone?} is the viewer's IANA zone), by world and by purpose.",
      ({ days, time_zone }) => usageSummary(db, clock.now(), days, time_zone ?? defaultTimeZone),
    ),
    defineMethod(
      'usage.calls',
      usageCallsParams,
      'The ledger one call per row, newest first, with latency and outcome; paged by limit/offset, optionally one world.',
      (p) => usageCalls(db, p),
    ),
  ];
}

export async function usageSummary(db: Kysely<Database>, now: number, days: number, timeZone = 'UTC'): Promise<UsageSummary> {
  // Days are counted back from today's start: DST days are 23 or 25 hours long.
  const dayStarts = Array.from({ length: days }, (_, i) => startOfZonedDay(now, timeZone, i - (days - 1)));
  const from = dayStarts[0]!;
  const todayStart = dayStarts[days - 1]!;
  const grouped = await ledgerOf(db).grouped({ since: from, until: now, dayStarts });
  const perDay = new Map<number, Accumulator>();
  for (const start of dayStarts) perDay.set(start, new Accumulator());
  const total = new Accumulator();
  for (const row of grouped) {
    const figures = { calls: row.calls, input_tokens: row.inputTokens, output_tokens: row.outputTokens, failed: row.failed };
    perDay.get(row.dayStart)?.add(row.world, row.purpose, figures);
    total.add(row.world, row.purpose, figures);
  }
  const perDayList = [...perDay.entries()].map(([start, acc]) => acc.day(start, timeZone));
  const today = perDayList[perDayList.length - 1] ?? new Accumulator().day(todayStart, timeZone);
  const totals = total.breakdown();
  return {
    days,
    time_zone: timeZone,
    from,
    to: now,
    worlds: totals.by_world.map((g) => g.key).sort(),
    purposes: totals.by_purpose.map((g) => g.key).sort(),
    today,
    per_day: perDayList,
    totals,
  };
}

export async function usageCalls(db: Kysely<Database>, p: z.output<typeof usageCallsParams>): Promise<UsageCalls> {
  const { total, rows } = await ledgerOf(db).calls(p);
  return {
    total,
    rows: rows.map((r) => ({
      id: r.id,
      at: r.at,
      world: r.world,
      purpose: r.purpose,
      role: r.role,
      model: r.model,
      input_tokens: r.inputTokens,
      output_tokens: r.outputTokens,
      estimated: r.estimated,
      latency_ms: r.latencyMs,
      outcome: r.outcome,
      error: r.error,
    })),
  };
}

/** A read-only view of the ledger (reads need no id generator). */
function ledgerOf(db: Kysely<Database>): Ledger {
  return new Ledger(db, () => {
    throw new Error('the usage view never records calls');
  });
}

class Accumulator {
  private readonly sum = zero();
  private readonly worlds = new Map<string, UsageFigures>();
  private readonly purposes = new Map<string, UsageFigures>();

  add(world: string, purpose: string, f: UsageFigures): void {
    addInto(this.sum, f);
    addInto(getOrZero(this.worlds, world), f);
    addInto(getOrZero(this.purposes, purpose), f);
  }

  breakdown(): UsageBreakdown {
    return { ...this.sum, by_world: groups(this.worlds), by_purpose: groups(this.purposes) };
  }

  day(start: number, timeZone: string): UsageDay {
    return { date: zonedDate(start, timeZone), start, ...this.breakdown() };
  }
}

function zero(): UsageFigures {
  return { calls: 0, input_tokens: 0, output_tokens: 0, failed: 0 };
}

function getOrZero(map: Map<string, UsageFigures>, key: string): UsageFigures {
  let f = map.get(key);
  if (!f) map.set(key, (f = zero()));
  return f;
}

function addInto(target: UsageFigures, f: UsageFigures): void {
  target.calls += f.calls;
  target.input_tokens += f.input_tokens;
  target.output_tokens += f.output_tokens;
  target.failed += f.failed;
}

/** Largest first by tokens, then by name, so the page lists the heavy users on top. */
function groups(map: Map<string, UsageFigures>): UsageGroup[] {
  return [...map.entries()]
    .map(([key, f]) => ({ key, ...f }))
    .sort((a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens) || a.key.localeCompare(b.key));
}
