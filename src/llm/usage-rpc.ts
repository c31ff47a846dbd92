/**
 * `usage.summary` and `usage.calls`: what the model-call ledger (`model_calls`) says about
 * calls and tokens, for the page's Usage tab. Days are calendar days in the viewer's time zone
 * (the page sends it; else the daemon's); every figure comes straight from the ledger so the
 * page's totals equal a direct count.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import type { Handlers } from '../protocol/contract.js';
import type { UsageBreakdown, UsageCalls, UsageDay, UsageGroup, UsageSummary, usageContract } from '../protocol/usage.js';
import { valueAt, type ColumnReader, type Columns } from '../store/index.js';
import { Ledger } from './ledger.js';
import { dayGrid, type DayGrid } from './usage-days.js';
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
  const query = summaryQuery(db, grid, now);
  const groups = columns ? fromColumns(await columns(query)) : fromRows((await db.executeQuery<Record<string, unknown>>(query)).rows);
  const tally = new Tally(groups, dayStarts);
  const perDay = dayStarts.map((start, d) => tally.day(d, grid.dates[d]!, start));
  const totals = tally.totals();
  return {
    days,
    timezone: timeZone,
    time_zone: timeZone,
    from,
    to: now,
    worlds: totals.by_world.map((g) => g.key).sort(),
    purposes: totals.by_purpose.map((g) => g.key).sort(),
    today: perDay[days - 1]!,
    per_day: perDay,
    totals,
  };
}

/** The summary's statement text per database and day grid (see `summaryQuery`). */
const statements = new WeakMap<object, WeakMap<DayGrid, string>>();

/**
 * The summary's aggregate over `grid` up to `now`. Its day column is a CASE over every day start
 * of the grid, as literals: built with Kysely for every call it left some 200 KB of garbage on the
 * main thread. The text is kept per database and grid (`dayGrid` keeps one per zone and day);
 * between calls only its two parameters change, the period's start and `now`.
 */
function summaryQuery(db: Kysely<LedgerTables>, grid: DayGrid, now: number): CompiledQuery {
  const since = grid.starts[0]!;
  let texts = statements.get(db);
  if (!texts) statements.set(db, (texts = new WeakMap()));
  const text = texts.get(grid);
  if (text !== undefined) return CompiledQuery.raw(text, [since, now]);
  const compiled = ledgerOf(db).aggregateQuery({ since, until: now, dayStarts: grid.starts, by: ['day', 'world', 'purpose'] });
  // Reused only when its parameters are exactly these two, in this order.
  const [first, second, ...rest] = compiled.parameters;
  if (first === since && second === now && rest.length === 0) texts.set(grid, compiled.sql);
  return compiled;
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

const FIGURES = 5; // calls, input_tokens, output_tokens, failed, interrupted

/**
 * The groups' figures summed for each day of the grid and for the whole period (scope `days`):
 * the sum, per world and per purpose, all in one Float64Array. Names are numbered as first seen,
 * so a group costs no object or Map entry while it is summed; objects are made once, for the
 * answer. (Maps and an object per group and day left ~800 KB of garbage per call on the main
 * thread, whose collections paused every other request.)
 */
class Tally {
  private readonly worlds: string[] = [];
  private readonly purposes: string[] = [];
  /** Slots per scope: the sum, then one per world, then one per purpose. */
  private readonly slots: number;
  private readonly sums: Float64Array;
  private readonly days: number;

  constructor(groups: Groups, dayStarts: readonly number[]) {
    this.days = dayStarts.length;
    const dayOf = new Map(dayStarts.map((start, d) => [start, d]));
    const worldOf = numbering(this.worlds, groups.texts('world'), groups.count);
    const purposeOf = numbering(this.purposes, groups.texts('purpose'), groups.count);
    this.slots = 1 + this.worlds.length + this.purposes.length;
    this.sums = new Float64Array((this.days + 1) * this.slots * FIGURES);
    // Numbers straight from Float64Arrays: read through a function returning `unknown`, each one
    // became a heap number (21,000 a call).
    const [dayStart, ...figures] = ['day_start', 'calls', 'input_tokens', 'output_tokens', 'failed', 'interrupted'].map((name) => groups.numbers(name));
    const add = (scope: number, slot: number, i: number) => {
      const at = (scope * this.slots + slot) * FIGURES;
      for (let f = 0; f < FIGURES; f++) this.sums[at + f] = this.sums[at + f]! + figures[f]![i]!;
    };
    // A group row adds to its scope's sum, its world and its purpose.
    const addRow = (scope: number, i: number) => {
      add(scope, 0, i);
      add(scope, 1 + worldOf[i]!, i);
      add(scope, 1 + this.worlds.length + purposeOf[i]!, i);
    };
    for (let i = 0; i < groups.count; i++) {
      const day = dayOf.get(dayStart![i]!);
      if (day !== undefined) addRow(day, i);
      addRow(this.days, i);
    }
  }

  /** Day `d` of the grid. */
  day(d: number, date: string, start: number): UsageDay {
    return { date, start, ...this.breakdown(d) };
  }

  /** The whole period. */
  totals(): UsageBreakdown {
    return this.breakdown(this.days);
  }

  private breakdown(scope: number): UsageBreakdown {
    const at = scope * this.slots * FIGURES;
    const s = this.sums;
    return {
      calls: s[at]!,
      input_tokens: s[at + 1]!,
      output_tokens: s[at + 2]!,
      failed: s[at + 3]!,
      interrupted: s[at + 4]!,
      by_world: this.groups(scope, 1, this.worlds),
      by_purpose: this.groups(scope, 1 + this.worlds.length, this.purposes),
    };
  }

  /** The scope's groups that had calls, largest first by tokens, then by name, so the page lists the heavy users on top. */
  private groups(scope: number, first: number, names: readonly string[]): UsageGroup[] {
    const base = scope * this.slots + first;
    const s = this.sums;
    const tokens = (k: number) => s[(base + k) * FIGURES + 1]! + s[(base + k) * FIGURES + 2]!;
    const present: number[] = [];
    // Every group row counts at least one call: a name with none had no row in this scope.
    for (let k = 0; k < names.length; k++) if (s[(base + k) * FIGURES]! > 0) present.push(k);
    const before = (a: number, b: number) => {
      const d = tokens(a) - tokens(b);
      return d > 0 || (d === 0 && names[a]!.localeCompare(names[b]!) < 0);
    };
    // An insertion sort: a handful of names, and Array.prototype.sort took ~1 KB of the heap for each of 180 sorts a call.
    for (let j = 1; j < present.length; j++) {
      const k = present[j]!;
      let i = j - 1;
      for (; i >= 0 && before(k, present[i]!); i--) present[i + 1] = present[i]!;
      present[i + 1] = k;
    }
    return present.map((k) => {
      const at = (base + k) * FIGURES;
      return { key: names[k]!, calls: s[at]!, input_tokens: s[at + 1]!, output_tokens: s[at + 2]!, failed: s[at + 3]!, interrupted: s[at + 4]! };
    });
  }
}

/** Each row's name as a number (`names` gets every name once, in the order first seen). */
function numbering(names: string[], nameOf: (i: number) => string, count: number): Int32Array {
  const ids = new Map<string, number>();
  const out = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const name = nameOf(i);
    let id = ids.get(name);
    if (id === undefined) ids.set(name, (id = names.push(name) - 1));
    out[i] = id;
  }
  return out;
}
