/**
 * `usage.summary` and `usage.calls`: what the model-call ledger (`model_calls`) says about
 * calls and tokens, for the page's Usage tab. Days are calendar days in the viewer's time zone
 * (the page sends it; else the daemon's); every figure comes straight from the ledger so the
 * page's totals equal a direct count.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import { zonedDate } from '../core/time-zone.js';
import type { Handlers } from '../protocol/contract.js';
import type { UsageBreakdown, UsageCalls, UsageDay, UsageFigures, UsageGroup, UsageSummary, usageContract } from '../protocol/usage.js';
import { Ledger } from './ledger.js';
import { dayGrid } from './usage-days.js';
import type { LedgerTables } from './tables.js';

/** `defaultTimeZone`: the zone days are counted in when the caller names none. */
export function usageRpcHandlers(db: Kysely<LedgerTables>, clock: Clock, defaultTimeZone = 'UTC'): Handlers<(typeof usageContract)['methods']> {
  return {
    'usage.summary': ({ days, timezone }) => usageSummary(db, clock.now(), days, timezone ?? defaultTimeZone),
    'usage.calls': (p) => usageCalls(db, p),
  };
}

export async function usageSummary(db: Kysely<LedgerTables>, now: number, days: number, timeZone = 'UTC'): Promise<UsageSummary> {
  const grid = dayGrid(now, days, timeZone);
  const dayStarts = grid.starts;
  const from = dayStarts[0]!;
  const todayStart = dayStarts[days - 1]!;
  const grouped = await ledgerOf(db).aggregate({ since: from, until: now, dayStarts, by: ['day', 'world', 'purpose'] });
  const perDay = new Map<number, Accumulator>();
  for (const start of dayStarts) perDay.set(start, new Accumulator());
  const total = new Accumulator();
  for (const row of grouped) {
    const figures = { calls: row.calls, input_tokens: row.inputTokens, output_tokens: row.outputTokens, failed: row.failed, interrupted: row.interrupted };
    perDay.get(row.dayStart!)?.add(row.world!, row.purpose!, figures);
    total.add(row.world!, row.purpose!, figures);
  }
  const perDayList = [...perDay.entries()].map(([start, acc], i) => acc.day(start, grid.dates[i]!));
  const today = perDayList[perDayList.length - 1] ?? new Accumulator().day(todayStart, zonedDate(todayStart, timeZone));
  const totals = total.breakdown();
  return {
    days,
    timezone: timeZone,
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

export async function usageCalls(db: Kysely<LedgerTables>, p: { limit: number; offset: number; world?: string | undefined }): Promise<UsageCalls> {
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
      state: r.state,
    })),
  };
}

/** A read-only view of the ledger (reads need no id generator). */
function ledgerOf(db: Kysely<LedgerTables>): Ledger {
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

  day(start: number, date: string): UsageDay {
    return { date, start, ...this.breakdown() };
  }
}

function zero(): UsageFigures {
  return { calls: 0, input_tokens: 0, output_tokens: 0, failed: 0, interrupted: 0 };
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
  target.interrupted += f.interrupted;
}

/** Largest first by tokens, then by name, so the page lists the heavy users on top. */
function groups(map: Map<string, UsageFigures>): UsageGroup[] {
  return [...map.entries()]
    .map(([key, f]) => ({ key, ...f }))
    .sort((a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens) || a.key.localeCompare(b.key));
}
