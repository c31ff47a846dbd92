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
import { valueAt, type ColumnReader, type Columns } from '../store/index.js';
import { Ledger } from './ledger.js';
import { dayGrid } from './usage-days.js';
import type { LedgerTables } from './tables.js';

/**
 * `defaultTimeZone`: the zone days are counted in when the caller names none. `columns`: where
 * the store has a read thread (a SQLite file), the summary's aggregate runs there and comes back
 * in columns (`Store.readColumns`), so the main thread builds no object per group.
 */
export function usageRpcHandlers(
  db: Kysely<LedgerTables>,
  clock: Clock,
  defaultTimeZone = 'UTC',
  columns?: ColumnReader,
): Handlers<(typeof usageContract)['methods']> {
  return {
    'usage.summary': ({ days, timezone }) => usageSummary(db, clock.now(), days, timezone ?? defaultTimeZone, columns),
    'usage.calls': (p) => usageCalls(db, p),
  };
}

export async function usageSummary(db: Kysely<LedgerTables>, now: number, days: number, timeZone = 'UTC', columns?: ColumnReader): Promise<UsageSummary> {
  const grid = dayGrid(now, days, timeZone);
  const dayStarts = grid.starts;
  const from = dayStarts[0]!;
  const todayStart = dayStarts[days - 1]!;
  const query = ledgerOf(db).aggregateQuery({ since: from, until: now, dayStarts, by: ['day', 'world', 'purpose'] });
  const groups = columns ? fromColumns(await columns(query)) : fromRows((await db.executeQuery<Record<string, unknown>>(query)).rows);
  const perDay = new Map<number, Accumulator>();
  for (const start of dayStarts) perDay.set(start, new Accumulator());
  const total = new Accumulator();
  // Numbers straight from Float64Arrays: read through a function returning `unknown`, each one
  // became a heap number (21,000 a call). One figures object for every group: `add` copies it.
  const [dayStart, calls, input, output, failed, interrupted] = ['day_start', 'calls', 'input_tokens', 'output_tokens', 'failed', 'interrupted'].map((name) =>
    groups.numbers(name),
  ) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
  const [world, purpose] = [groups.texts('world'), groups.texts('purpose')];
  const figures = zero();
  for (let i = 0; i < groups.count; i++) {
    figures.calls = calls[i]!;
    figures.input_tokens = input[i]!;
    figures.output_tokens = output[i]!;
    figures.failed = failed[i]!;
    figures.interrupted = interrupted[i]!;
    const w = world(i);
    const p = purpose(i);
    perDay.get(dayStart[i]!)?.add(w, p, figures);
    total.add(w, p, figures);
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

/** The aggregate's groups: how many, a number column as a Float64Array, a text column's value by index. */
interface Groups {
  count: number;
  numbers(name: string): Float64Array;
  texts(name: string): (i: number) => string;
}

function fromColumns(answer: Columns): Groups {
  const column = (name: string) => {
    const c = answer.columns[name];
    if (!c) throw new Error(`the usage aggregate has no column ${name}`);
    return c;
  };
  return {
    count: answer.length,
    numbers: (name) => {
      const c = column(name);
      return c instanceof Float64Array ? c : Float64Array.from(c.codes, (code) => Number(c.values[code]));
    },
    texts: (name) => {
      const c = column(name);
      return (i) => String(valueAt(c, i));
    },
  };
}

// Postgres answers count/sum as strings: Number() here.
function fromRows(rows: readonly Record<string, unknown>[]): Groups {
  return {
    count: rows.length,
    numbers: (name) => Float64Array.from(rows, (r) => Number(r[name])),
    texts: (name) => (i) => String(rows[i]![name]),
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
  const out: UsageGroup[] = [];
  // forEach, not entries(): no [key, value] array per group (90 days × 11 groups a call).
  map.forEach((f, key) =>
    out.push({ key, calls: f.calls, input_tokens: f.input_tokens, output_tokens: f.output_tokens, failed: f.failed, interrupted: f.interrupted }),
  );
  return out.sort((a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens) || a.key.localeCompare(b.key));
}
