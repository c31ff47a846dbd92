/**
 * The model-call ledger (`model_calls`): one row per call, success or failure, each 429 retry
 * attempt included. Cost and usage figures everywhere (status, /metrics, the Usage tab) come
 * from here, so it is written by `llm/` and nowhere else.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { IdGen } from '../core/ids.js';
import type { Database, ModelCallsTable } from '../store/schema.js';
import type { ModelErrorKind, ModelRole } from './types.js';

const DAY_MS = 86_400_000;
const MAX_ERROR_CHARS = 2000;

export interface CallRecord {
  at: number;
  world: string;
  purpose: string;
  role: ModelRole;
  model: string;
  inputTokens: number;
  outputTokens: number;
  estimated: boolean;
  latencyMs: number;
  outcome: 'ok' | ModelErrorKind;
  error?: string | null | undefined;
}

export interface LedgerCall extends CallRecord {
  id: string;
  error: string | null;
}

export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** Calls whose outcome was not `ok`. */
  failed: number;
  /** Calls whose tokens were estimated. */
  estimated: number;
}

export interface LedgerSummary {
  since: number;
  until: number;
  totals: UsageTotals;
  byWorld: Array<UsageTotals & { world: string }>;
  byPurpose: Array<UsageTotals & { world: string; purpose: string }>;
  /** UTC days with calls, oldest first (`day` is `YYYY-MM-DD`). */
  byDay: Array<UsageTotals & { day: string; start: number }>;
}

/** One (day, world, purpose) group of ledger rows. */
export interface LedgerGroup extends UsageTotals {
  /** Epoch ms of the day's start (UTC midnight unless the caller gave the day starts). */
  dayStart: number;
  world: string;
  purpose: string;
}

export class Ledger {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly ids: IdGen,
  ) {}

  async record(call: CallRecord): Promise<string> {
    const id = this.ids();
    const row: ModelCallsTable = {
      id,
      at: Math.round(call.at),
      world: call.world,
      purpose: call.purpose,
      role: call.role,
      model: call.model,
      input_tokens: Math.max(0, Math.round(call.inputTokens)),
      output_tokens: Math.max(0, Math.round(call.outputTokens)),
      estimated: call.estimated ? 1 : 0,
      latency_ms: Math.max(0, Math.round(call.latencyMs)),
      outcome: call.outcome,
      error: call.error ? call.error.slice(0, MAX_ERROR_CHARS) : null,
    };
    await this.db.insertInto('model_calls').values(row).execute();
    return id;
  }

  /**
   * The ledger's figures in `[since, until]` grouped by day, world and purpose: one read that
   * every usage view (this summary, the page's Usage tab) aggregates from. Days are UTC days
   * unless `dayStarts` (ascending epoch ms, e.g. local midnights) says where each day begins;
   * a row before the first start counts in the first day.
   */
  async grouped(range: { since: number; until: number; dayStarts?: readonly number[] }): Promise<LedgerGroup[]> {
    const day = dayStartOf(range.dayStarts);
    const rows = await this.db
      .selectFrom('model_calls')
      .select([
        day.as('day_start'),
        'world',
        'purpose',
        sql<number>`count(*)`.as('calls'),
        sql<number>`coalesce(sum(input_tokens), 0)`.as('input_tokens'),
        sql<number>`coalesce(sum(output_tokens), 0)`.as('output_tokens'),
        sql<number>`coalesce(sum(case when outcome = 'ok' then 0 else 1 end), 0)`.as('failed'),
        sql<number>`coalesce(sum(estimated), 0)`.as('estimated'),
      ])
      .where('at', '>=', range.since)
      .where('at', '<=', range.until)
      .groupBy([day, 'world', 'purpose'])
      .execute();
    // Postgres returns count/sum as strings (bigint/numeric): normalise once here.
    return rows.map((row) => ({
      dayStart: Number(row.day_start),
      world: row.world,
      purpose: row.purpose,
      calls: Number(row.calls),
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      failed: Number(row.failed),
      estimated: Number(row.estimated),
    }));
  }

  /** Calls and tokens in `[since, until]`, by world, by world + purpose and per UTC day. */
  async summary(range: { since: number; until: number }): Promise<LedgerSummary> {
    const rows = await this.grouped(range);
    const totals = zero();
    const byWorld = new Map<string, UsageTotals & { world: string }>();
    const byPurpose = new Map<string, UsageTotals & { world: string; purpose: string }>();
    const byDay = new Map<number, UsageTotals & { day: string; start: number }>();
    for (const row of rows) {
      const figures: UsageTotals = {
        calls: row.calls,
        inputTokens: row.inputTokens,
        outputTokens: row.outputTokens,
        failed: row.failed,
        estimated: row.estimated,
      };
      const day = row.dayStart / DAY_MS;
      add(totals, figures);
      add(
        getOr(byWorld, row.world, () => ({ world: row.world, ...zero() })),
        figures,
      );
      add(
        getOr(byPurpose, `${row.world}\u0000${row.purpose}`, () => ({ world: row.world, purpose: row.purpose, ...zero() })),
        figures,
      );
      add(
        getOr(byDay, day, () => ({ day: new Date(day * DAY_MS).toISOString().slice(0, 10), start: day * DAY_MS, ...zero() })),
        figures,
      );
    }
    const byCalls = <T extends UsageTotals>(a: T, b: T) => b.calls - a.calls;
    return {
      since: range.since,
      until: range.until,
      totals,
      byWorld: [...byWorld.values()].sort((a, b) => byCalls(a, b) || a.world.localeCompare(b.world)),
      byPurpose: [...byPurpose.values()].sort((a, b) => byCalls(a, b) || a.world.localeCompare(b.world) || a.purpose.localeCompare(b.purpose)),
      byDay: [...byDay.values()].sort((a, b) => a.start - b.start),
    };
  }

  /** Newest first, paged, optionally one world; `total` counts every matching row. */
  async calls(opts: { limit?: number; offset?: number; world?: string } = {}): Promise<{ total: number; rows: LedgerCall[] }> {
    const limit = Math.min(Math.max(1, Math.floor(opts.limit ?? 50)), 1000);
    const offset = Math.max(0, Math.floor(opts.offset ?? 0));
    let query = this.db.selectFrom('model_calls');
    if (opts.world !== undefined) query = query.where('world', '=', opts.world);
    const [count, rows] = await Promise.all([
      query.select(sql<number>`count(*)`.as('n')).executeTakeFirst(),
      query.selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    ]);
    return {
      total: Number(count?.n ?? 0),
      rows: rows.map((r) => ({
        id: r.id,
        at: Number(r.at),
        world: r.world,
        purpose: r.purpose,
        role: r.role as ModelRole,
        model: r.model,
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        estimated: Number(r.estimated) === 1,
        latencyMs: Number(r.latency_ms),
        outcome: r.outcome as LedgerCall['outcome'],
        error: r.error,
      })),
    };
  }
}

function zero(): UsageTotals {
  return { calls: 0, inputTokens: 0, outputTokens: 0, failed: 0, estimated: 0 };
}

function add(target: UsageTotals, figures: UsageTotals): void {
  target.calls += figures.calls;
  target.inputTokens += figures.inputTokens;
  target.outputTokens += figures.outputTokens;
  target.failed += figures.failed;
  target.estimated += figures.estimated;
}

function getOr<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/** SQL for the start of the day a row's `at` falls in: UTC days, or the given day starts. */
function dayStartOf(starts: readonly number[] = []): RawBuilder<number> {
  if (starts.length === 0) return sql<number>`(at / ${sql.lit(DAY_MS)}) * ${sql.lit(DAY_MS)}`;
  // Latest start first; every branch is a CASE (never a bare literal, which GROUP BY reads as a column position).
  const branches = [...starts].reverse().map((start) => sql`when at >= ${sql.lit(start)} then ${sql.lit(start)}`);
  return sql<number>`case ${sql.join(branches, sql` `)} else ${sql.lit(starts[0]!)} end`;
}
