/**
 * The model-call ledger (`model_calls`): one row per call, success or failure, each 429 retry
 * attempt included. Cost and usage figures everywhere (status, /metrics, the Usage tab) come
 * from here, so it is written by `llm/` and nowhere else.
 *
 * A row is written `pending` before the request goes out (`begin`) and finished after it
 * (`finish`), so a process killed mid-call still leaves its call counted: at the next start,
 * `closeInterrupted` closes the pending rows of dead processes as `interrupted`, with the input
 * tokens estimated from the prompt and no output (nothing came back that anyone saw).
 */
import { sql, type CompiledQuery, type Insertable, type Kysely, type RawBuilder } from 'kysely';
import type { IdGen } from '../core/ids.js';
import { ownedByThisProcess, ownerIsGone } from '../core/process-identity.js';
import type { LedgerTables, ModelCallsTable } from './tables.js';
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

/** What is known before a call: who makes it, and its prompt's size (estimated tokens). */
export type PendingCall = Pick<CallRecord, 'at' | 'world' | 'purpose' | 'role' | 'model' | 'inputTokens'>;

export type LedgerState = 'pending' | 'done' | 'interrupted';

export interface LedgerCall extends Omit<CallRecord, 'outcome'> {
  id: string;
  error: string | null;
  outcome: CallRecord['outcome'] | 'pending' | 'interrupted';
  state: LedgerState;
}

/** Is the process that wrote a pending row gone? (Default: `ownerIsGone`, for this host.) */
export type OwnerGone = (owner: string | null) => boolean | Promise<boolean>;

export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** Calls whose outcome was not `ok`. */
  failed: number;
  /** Calls whose tokens were estimated. */
  estimated: number;
  /** Calls cut off by their process's death (counted in `calls` and `failed`; input tokens estimated). */
  interrupted: number;
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

/** What ledger rows can be grouped by. */
export type LedgerDimension = 'day' | 'world' | 'purpose' | 'outcome';

/** One group of ledger rows: the dimensions asked for are set, the others are absent. */
export interface LedgerGroup extends UsageTotals {
  /** Epoch ms of the day's start (UTC midnight unless the caller gave the day starts). */
  dayStart?: number;
  world?: string;
  purpose?: string;
  outcome?: string;
}

export interface AggregateQuery {
  /** Default: all time. */
  since?: number;
  until?: number;
  /** Ascending epoch ms where each day begins (local midnights); default UTC days. */
  dayStarts?: readonly number[];
  by: readonly LedgerDimension[];
}

export class Ledger {
  private readonly listeners = new Set<(call: CallRecord) => void>();

  /**
   * `owner`: the process writing pending rows (`processOwner(tag)`); a row of this host and pid
   * under another tag is an earlier process that had the same pid (a container's restart).
   */
  constructor(
    private readonly db: Kysely<LedgerTables>,
    private readonly ids: IdGen,
    readonly owner: string | null = null,
  ) {}

  /** Told of every call this process finished (the latency histogram in /metrics); returns an unsubscribe. */
  onCall(listener: (call: CallRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Write a finished call in one go; returns its id. Figures are stored rounded. */
  async record(call: CallRecord): Promise<string> {
    const id = this.ids();
    await this.db
      .insertInto('model_calls')
      .values({ id, ...stored(call), state: 'done', owner: this.owner, finished_at: Math.round(call.at + call.latencyMs) })
      .execute();
    this.told(call);
    return id;
  }

  /** Write the row of a call about to be made (`pending`); returns its id for `finish`. */
  async begin(call: PendingCall): Promise<string> {
    const id = this.ids();
    const row = stored({ ...call, outputTokens: 0, estimated: true, latencyMs: 0, outcome: 'ok' });
    await this.db
      .insertInto('model_calls')
      .values({ id, ...row, outcome: 'pending', state: 'pending', owner: this.owner })
      .execute();
    return id;
  }

  /** Finish a pending row with the call's figures. A row already closed as interrupted stays so. */
  async finish(id: string, call: CallRecord): Promise<void> {
    await this.db
      .updateTable('model_calls')
      .set({ ...stored(call), state: 'done', finished_at: Math.round(call.at + call.latencyMs) })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .execute();
    this.told(call);
  }

  private told(call: CallRecord): void {
    for (const listener of this.listeners) {
      try {
        listener(call);
      } catch {
        // A listener's failure never fails the call it is told of.
      }
    }
  }

  /**
   * Close the pending rows whose process is gone as `interrupted` (at start): the call was made
   * and is counted; its input tokens stay estimated, output is unknown (0), latency unknown.
   * Returns how many were closed.
   */
  async closeInterrupted(now: number, isGone: OwnerGone = ownerIsGone): Promise<number> {
    const pending = await this.db.selectFrom('model_calls').select(['id', 'owner']).where('state', '=', 'pending').execute();
    const gone: string[] = [];
    for (const row of pending) {
      const earlierSelf = this.owner !== null && row.owner !== this.owner && ownedByThisProcess(row.owner);
      if (earlierSelf || (await isGone(row.owner))) gone.push(row.id);
    }
    for (let i = 0; i < gone.length; i += 500) {
      await this.db
        .updateTable('model_calls')
        .set({
          state: 'interrupted',
          outcome: 'interrupted',
          finished_at: Math.round(now),
          error:
            'The process making this call ended before it answered (killed or crashed): the call was sent, its reply was never used. Input tokens are estimated from the prompt; output is unknown.',
        })
        .where('id', 'in', gone.slice(i, i + 500))
        .where('state', '=', 'pending')
        .execute();
    }
    return gone.length;
  }

  /**
   * The one aggregation every usage figure comes from (the summary below, the Usage tab, /metrics,
   * `simulate`): calls, tokens, failures and estimates of the rows in `[since, until]`, grouped by
   * the dimensions asked for. A row before the first day start counts in the first day.
   */
  async aggregate(query: AggregateQuery): Promise<LedgerGroup[]> {
    const { rows } = await this.db.executeQuery<Record<string, unknown>>(this.aggregateQuery(query));
    // Postgres returns count/sum as strings (bigint/numeric): normalise once here. A plain loop
    // with no spread (the usage tab reads its groups in columns instead: usage-rpc.ts).
    const out: LedgerGroup[] = new Array<LedgerGroup>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const group: LedgerGroup = {
        calls: Number(row.calls),
        inputTokens: Number(row.input_tokens),
        outputTokens: Number(row.output_tokens),
        failed: Number(row.failed),
        estimated: Number(row.estimated),
        interrupted: Number(row.interrupted),
      };
      if (row.day_start !== undefined) group.dayStart = Number(row.day_start);
      if (row.world !== undefined) group.world = String(row.world);
      if (row.purpose !== undefined) group.purpose = String(row.purpose);
      if (row.outcome !== undefined) group.outcome = String(row.outcome);
      out[i] = group;
    }
    return out;
  }

  /**
   * `aggregate`'s statement, compiled: its columns are `calls`, `input_tokens`, `output_tokens`,
   * `failed`, `estimated`, `interrupted` and those of `by` (`day_start`, `world`, `purpose`,
   * `outcome`). For a caller that runs it elsewhere (the usage tab, on the read thread, in columns).
   */
  aggregateQuery(query: AggregateQuery): CompiledQuery {
    const day = dayStartOf(query.dayStarts);
    const columns = {
      day: day.as('day_start'),
      world: sql<string>`world`.as('world'),
      purpose: sql<string>`purpose`.as('purpose'),
      outcome: sql<string>`outcome`.as('outcome'),
    };
    const keys = { day, world: sql`world`, purpose: sql`purpose`, outcome: sql`outcome` };
    let q = this.db
      .selectFrom('model_calls')
      .select([
        sql<number>`count(*)`.as('calls'),
        sql<number>`coalesce(sum(input_tokens), 0)`.as('input_tokens'),
        sql<number>`coalesce(sum(output_tokens), 0)`.as('output_tokens'),
        // A call still in flight has not failed (yet).
        sql<number>`coalesce(sum(case when outcome in ('ok', 'pending') then 0 else 1 end), 0)`.as('failed'),
        sql<number>`coalesce(sum(estimated), 0)`.as('estimated'),
        sql<number>`coalesce(sum(case when state = 'interrupted' then 1 else 0 end), 0)`.as('interrupted'),
      ])
      .select(query.by.map((d) => columns[d]));
    if (query.since !== undefined) q = q.where('at', '>=', query.since);
    if (query.until !== undefined) q = q.where('at', '<=', query.until);
    if (query.by.length) q = q.groupBy(query.by.map((d) => keys[d]));
    return q.compile();
  }

  /** Calls and tokens in `[since, until]`, by world, by world + purpose and per UTC day. */
  async summary(range: { since: number; until: number }): Promise<LedgerSummary> {
    const rows = await this.aggregate({ ...range, by: ['day', 'world', 'purpose'] });
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
        interrupted: row.interrupted,
      };
      const day = row.dayStart! / DAY_MS;
      const world = row.world!;
      const purpose = row.purpose!;
      add(totals, figures);
      add(
        getOr(byWorld, world, () => ({ world, ...zero() })),
        figures,
      );
      add(
        getOr(byPurpose, `${world}\u0000${purpose}`, () => ({ world, purpose, ...zero() })),
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
  async calls(opts: { limit?: number; offset?: number; world?: string | undefined } = {}): Promise<{ total: number; rows: LedgerCall[] }> {
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
        state: r.state as LedgerState,
      })),
    };
  }
}

function zero(): UsageTotals {
  return { calls: 0, inputTokens: 0, outputTokens: 0, failed: 0, estimated: 0, interrupted: 0 };
}

/** A call's columns as stored: figures rounded, never negative, the error capped. */
function stored(call: CallRecord): Omit<Insertable<ModelCallsTable>, 'id'> {
  return {
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
}

function add(target: UsageTotals, figures: UsageTotals): void {
  target.calls += figures.calls;
  target.inputTokens += figures.inputTokens;
  target.outputTokens += figures.outputTokens;
  target.failed += figures.failed;
  target.estimated += figures.estimated;
  target.interrupted += figures.interrupted;
}

function getOr<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/**
 * SQL for the start of the day a row's `at` falls in: UTC days, or the latest of the given
 * (ascending) day starts at or before it, else the first. A binary search of nested CASEs: 7
 * comparisons a row for 90 days, where one CASE of 90 branches made 45 on average (most of
 * `usage.summary`'s time over a 90-day ledger). The top is a CASE, never a bare literal, which
 * GROUP BY would read as a column position.
 */
function dayStartOf(starts: readonly number[] = []): RawBuilder<number> {
  if (starts.length === 0) return sql<number>`(at / ${sql.lit(DAY_MS)}) * ${sql.lit(DAY_MS)}`;
  // starts[lo] when at >= starts[lo] (or lo is 0), for at < starts[hi + 1].
  const pick = (lo: number, hi: number): RawBuilder<number> => {
    if (lo === hi) return sql<number>`${sql.lit(starts[lo]!)}`;
    const mid = (lo + hi + 1) >> 1;
    return sql<number>`case when at >= ${sql.lit(starts[mid]!)} then ${pick(mid, hi)} else ${pick(lo, mid - 1)} end`;
  };
  return starts.length === 1 ? sql<number>`case when 1 = 1 then ${sql.lit(starts[0]!)} end` : pick(0, starts.length - 1);
}
