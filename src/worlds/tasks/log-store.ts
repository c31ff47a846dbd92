/**
 * `subconscious_log`: one row per due task per tick, inserted `in_progress` and updated in
 * place (seed 1, step 3 and 6). `(tick_id, task_id)` is unique, so a resumed observe reuses
 * its rows instead of duplicating them.
 *
 * Each execution is keyed by its row (issue 9, "effects happen once"): `running` is written
 * before it starts, `executed` with its outcome (`exec_result`) the moment it finished, `done`
 * when commit applied it. A commit resumed after a crash applies an `executed` row's stored
 * outcome and continues a `running` one from its step-level checkpoint (`exec_checkpoint`,
 * exec-checkpoint.ts) — never blindly again from the start.
 */
import { sql, type ExpressionBuilder, type Kysely, type Selectable, type Updateable } from 'kysely';
import { ownerIsGone } from '../../core/index.js';
import { INTERRUPTED, freshCheckpoint, parseExecCheckpoint, type ExecCheckpoint } from './exec-checkpoint.js';

export { INTERRUPTED } from './exec-checkpoint.js';
import { parseDetail, type RowDetail } from './log-detail.js';
import type { TasksTables, SubconsciousLogTable } from './tables.js';
import type { ExecMode, ExecState, LogDecision, LogEntry, ModelDecision, Task } from './types.js';

type Db = Kysely<TasksTables>;
type Row = Selectable<SubconsciousLogTable>;

/** The seed's display texts for states that have no result of their own. */
export const LOG_TEXT = {
  in_progress: 'Evaluating...',
  noop: 'Nothing new',
  escalate: 'Waiting for approval',
  cancelled: 'Cancelled',
  dismissed: 'Skipped',
  approved_running: 'Running the approved action...',
  responded_running: 'Carrying out your answer...',
} as const;

/** Rows whose execution started and has not been applied: never closed or re-run behind their tick's back. */
export const EXECUTING = ['running', 'executed'] as const;

/** A log row no card in `status` points at (a pending card's row is kept; an approved card's belongs to its job). */
function noCard(status: 'pending' | 'approved') {
  return ({ not, exists, selectFrom }: ExpressionBuilder<TasksTables, 'subconscious_log'>) =>
    not(
      exists(
        selectFrom('subconscious_escalations')
          .select('subconscious_escalations.id')
          .whereRef('subconscious_escalations.log_id', '=', 'subconscious_log.id')
          .where('subconscious_escalations.status', '=', status),
      ),
    );
}

/** `%`, `_` and `\` match themselves in a search. */
function likePattern(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface LogFilter {
  taskId?: string | undefined;
  decision?: LogDecision | undefined;
  /** Search in the task's title, the reason and the result (case-insensitive). */
  q?: string | undefined;
}

export function toLogEntry(row: Row): LogEntry {
  return {
    id: row.id,
    task_id: row.task_id,
    task_title: row.task_title,
    tick_id: row.tick_id,
    tick_at: Number(row.tick_at),
    decision: row.decision as LogDecision,
    model_decision: row.model_decision as ModelDecision | null,
    reason: row.reason,
    result: row.result,
    duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
    exec_state: row.exec_state as ExecState,
    exec_mode: row.exec_mode as ExecMode | null,
    run_id: row.run_id,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

export class LogStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  /**
   * One `in_progress` row per task for this tick; rows that already exist for `(tickId, task)`
   * (a resumed tick) are kept as they are. Returns the rows by task id.
   */
  async openRows(tickId: string, tickAt: number, tasks: readonly Task[], newId: () => string): Promise<Map<string, LogEntry>> {
    if (tasks.length === 0) return new Map(); // a quiet tick writes nothing
    const now = this.now();
    const rows = tasks.map((t) => ({
      id: newId(),
      task_id: t.id,
      task_title: t.title,
      tick_id: tickId,
      tick_at: tickAt,
      decision: 'in_progress',
      model_decision: null,
      reason: null,
      result: LOG_TEXT.in_progress,
      duration_ms: null,
      exec_state: 'none',
      exec_mode: null,
      exec_started_at: null,
      exec_owner: null,
      run_id: null,
      created_at: now,
      updated_at: now,
    }));
    // All or none: a crash halfway must not leave a resumed tick with only some of its rows.
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += 50) {
        await trx
          .insertInto('subconscious_log')
          .values(rows.slice(i, i + 50))
          .onConflict((oc) => oc.columns(['tick_id', 'task_id']).doNothing())
          .execute();
      }
    });
    return this.forTick(tickId);
  }

  async forTick(tickId: string): Promise<Map<string, LogEntry>> {
    const rows = await this.db.selectFrom('subconscious_log').selectAll().where('tick_id', '=', tickId).execute();
    return new Map(rows.map((r) => [r.task_id, toLogEntry(r)]));
  }

  async get(id: string, db: Db = this.db): Promise<LogEntry | undefined> {
    const row = await db.selectFrom('subconscious_log').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toLogEntry(row) : undefined;
  }

  async list(opts: LogFilter & { limit?: number; offset?: number } = {}): Promise<LogEntry[]> {
    const rows = await this.filtered(opts)
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(opts.limit ?? 100)
      .offset(opts.offset ?? 0)
      .execute();
    return rows.map(toLogEntry);
  }

  private filtered(f: LogFilter) {
    let q = this.db.selectFrom('subconscious_log');
    if (f.taskId) q = q.where('task_id', '=', f.taskId);
    if (f.decision) q = q.where('decision', '=', f.decision);
    const text = f.q?.trim();
    if (text) {
      const pattern = likePattern(text);
      q = q.where(({ eb, or, fn }) =>
        or(
          (['task_title', 'reason', 'result'] as const).map((column) =>
            eb(fn('lower', [fn.coalesce(column, sql.lit(''))]), 'like', sql<string>`${pattern} escape '\\'`),
          ),
        ),
      );
    }
    return q;
  }

  /**
   * The newest `limit` ticks that have rows matching the filter (before `before`, a tick time),
   * with those rows: the grouped log's page.
   */
  async ticksPage(f: LogFilter, limit: number, before: number | undefined): Promise<{ ticks: { tick_id: string; tick_at: number }[]; rows: LogEntry[] }> {
    let q = this.filtered(f).select(['tick_id', 'tick_at']).distinct();
    if (before !== undefined) q = q.where('tick_at', '<', before);
    const ticks = (await q.orderBy('tick_at', 'desc').orderBy('tick_id', 'desc').limit(limit).execute()).map((t) => ({
      tick_id: t.tick_id,
      tick_at: Number(t.tick_at),
    }));
    if (!ticks.length) return { ticks, rows: [] };
    const rows = await this.filtered(f)
      .selectAll()
      .where(
        'tick_id',
        'in',
        ticks.map((t) => t.tick_id),
      )
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return { ticks, rows: rows.map(toLogEntry) };
  }

  /** The row's stored detail (the execution's answer, tool calls and figures), or an empty one. */
  async detail(id: string, db: Db = this.db): Promise<RowDetail> {
    const row = await db.selectFrom('subconscious_log').select('detail').where('id', '=', id).executeTakeFirst();
    return parseDetail(row?.detail ?? null);
  }

  /** Merge into the row's detail. */
  async mergeDetail(id: string, patch: Partial<RowDetail>, db: Db = this.db): Promise<void> {
    const current = await this.detail(id, db);
    await db
      .updateTable('subconscious_log')
      .set({ detail: JSON.stringify({ ...current, ...patch }) })
      .where('id', '=', id)
      .execute();
  }

  /** The execution finished: keep its outcome on the row before anything else (a resumed commit applies it). */
  async recordExecuted(id: string, outcome: unknown, detail: Partial<RowDetail>): Promise<void> {
    const current = await this.detail(id);
    await this.db
      .updateTable('subconscious_log')
      .set({ exec_state: 'executed', exec_result: JSON.stringify(outcome), detail: JSON.stringify({ ...current, ...detail }), updated_at: this.now() })
      .where('id', '=', id)
      .where('exec_state', '=', 'running')
      .execute();
  }

  /** The stored outcome of an `executed` row. */
  async executedResult(id: string): Promise<unknown> {
    const row = await this.db.selectFrom('subconscious_log').select('exec_result').where('id', '=', id).executeTakeFirst();
    return row?.exec_result ? (JSON.parse(row.exec_result) as unknown) : undefined;
  }

  /**
   * Retention: finished rows created before `before` are deleted (a `pending` task writes a row
   * every tick, so the log would otherwise grow without end). Rows still running and rows a
   * pending escalation points at are kept. Returns how many went.
   */
  async prune(before: number): Promise<number> {
    const res = await this.db
      .deleteFrom('subconscious_log')
      .where('created_at', '<', before)
      .where('decision', '!=', 'in_progress')
      .where('exec_state', '!=', 'running')
      .where(noCard('pending'))
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** The distinct error texts of rows failed since `since` (a fingerprint input: the same outage is one input). */
  async failureTexts(since: number, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('subconscious_log')
      .select('result')
      .distinct()
      .where('decision', '=', 'failed')
      .where('updated_at', '>=', since)
      .orderBy('result')
      .limit(limit)
      .execute();
    return rows.map((r) => r.result ?? '');
  }

  /** How many rows failed since `since`. */
  async countFailures(since: number): Promise<number> {
    const row = await this.db
      .selectFrom('subconscious_log')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('decision', '=', 'failed')
      .where('updated_at', '>=', since)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Failed rows updated since `since` (the situation report's "recent failures"). */
  async failuresSince(since: number | null, limit: number): Promise<LogEntry[]> {
    let q = this.db.selectFrom('subconscious_log').selectAll().where('decision', '=', 'failed');
    if (since !== null) q = q.where('updated_at', '>=', since);
    const rows = await q.orderBy('updated_at', 'desc').limit(limit).execute();
    return rows.map(toLogEntry);
  }

  async update(id: string, patch: Updateable<SubconsciousLogTable>, db: Db = this.db): Promise<void> {
    await db
      .updateTable('subconscious_log')
      .set({ ...patch, updated_at: this.now() })
      .where('id', '=', id)
      .execute();
  }

  /** Mark that execution starts: written (and committed) before any side effect, its first run counted (exec-checkpoint.ts). */
  async markRunning(id: string, mode: ExecMode, modelDecision: ModelDecision, reason: string, owner: string): Promise<void> {
    const now = this.now();
    await this.db
      .updateTable('subconscious_log')
      .set({
        exec_state: 'running',
        exec_mode: mode,
        exec_started_at: now,
        exec_owner: owner,
        exec_checkpoint: JSON.stringify(freshCheckpoint(1)),
        model_decision: modelDecision,
        reason,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
  }

  /** The running row's checkpoint (null: none, or unreadable) and the worker that ran it last. */
  async execCheckpoint(id: string): Promise<{ checkpoint: ExecCheckpoint | null; owner: string | null }> {
    const row = await this.db.selectFrom('subconscious_log').select(['exec_checkpoint', 'exec_owner']).where('id', '=', id).executeTakeFirst();
    return { checkpoint: parseExecCheckpoint(row?.exec_checkpoint ?? null), owner: row?.exec_owner ?? null };
  }

  /**
   * A run of a `running` row begins under `owner` (a continued one, or an approved action's first):
   * counted in its checkpoint before any model call. False when the row is not running any more.
   */
  async beginRun(id: string, checkpoint: ExecCheckpoint, owner: string): Promise<boolean> {
    const res = await this.db
      .updateTable('subconscious_log')
      .set({ exec_owner: owner, exec_checkpoint: JSON.stringify({ ...checkpoint, runs: checkpoint.runs + 1 }), updated_at: this.now() })
      .where('id', '=', id)
      .where('exec_state', '=', 'running')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** The running execution's progress (RunProgress); false when the row is not running any more. */
  async writeExecCheckpoint(id: string, checkpoint: ExecCheckpoint): Promise<boolean> {
    const res = await this.db
      .updateTable('subconscious_log')
      .set({ exec_checkpoint: JSON.stringify(checkpoint) })
      .where('id', '=', id)
      .where('exec_state', '=', 'running')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** `in_progress` rows of a tick become `decision` (cancelled / failed); finished rows are untouched. */
  async closeOpenRows(tickId: string, decision: 'cancelled' | 'failed', result: string): Promise<string[]> {
    const open = await this.db
      .selectFrom('subconscious_log')
      .select(['id'])
      .where('tick_id', '=', tickId)
      .where('decision', '=', 'in_progress')
      .where('exec_state', 'not in', EXECUTING)
      .execute();
    if (open.length === 0) return [];
    await this.db
      .updateTable('subconscious_log')
      .set({ decision, result, updated_at: this.now() })
      .where('tick_id', '=', tickId)
      .where('decision', '=', 'in_progress')
      .where('exec_state', 'not in', EXECUTING)
      .execute();
    return open.map((r) => r.id);
  }

  /**
   * Delete this tick's rows that never got past evaluation (the tick failed as a whole, e.g. the
   * model was down): nothing happened to their tasks, so there is nothing to log per task.
   */
  async discardOpenRows(tickId: string): Promise<string[]> {
    const open = await this.db
      .selectFrom('subconscious_log')
      .select(['id'])
      .where('tick_id', '=', tickId)
      .where('decision', '=', 'in_progress')
      .where('exec_state', '=', 'none')
      .execute();
    if (open.length === 0) return [];
    await this.db.deleteFrom('subconscious_log').where('tick_id', '=', tickId).where('decision', '=', 'in_progress').where('exec_state', '=', 'none').execute();
    return open.map((r) => r.id);
  }

  /**
   * Rows left `in_progress` by other ticks (overtaken or killed and not resumed). Only one tick
   * of a world is live at a time, so they can never finish: they become `cancelled`.
   */
  async cancelStale(currentTickId: string): Promise<string[]> {
    const stale = await this.db
      .selectFrom('subconscious_log')
      .select(['id'])
      .where('tick_id', '!=', currentTickId)
      .where('decision', '=', 'in_progress')
      .where('exec_state', 'not in', EXECUTING)
      .execute();
    if (stale.length === 0) return [];
    const ids = stale.map((r) => r.id);
    for (let i = 0; i < ids.length; i += 200) {
      await this.db
        .updateTable('subconscious_log')
        .set({ decision: 'cancelled', result: LOG_TEXT.cancelled, updated_at: this.now() })
        .where('id', 'in', ids.slice(i, i + 200))
        .where('decision', '=', 'in_progress')
        .execute();
    }
    return ids;
  }

  /** Tasks whose execution is running in another tick right now: not due again until it ends. */
  async runningTaskIds(exceptTickId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('subconscious_log')
      .select(['task_id'])
      .where('exec_state', 'in', EXECUTING)
      .where('tick_id', '!=', exceptTickId)
      .execute();
    return [...new Set(rows.map((r) => r.task_id))];
  }

  /**
   * Executions marked `running` by a process that died whose tick will never resume them (it ended
   * without them): they become `failed` (never re-run: a write may already have happened). A dead
   * owner on this host is known at once; otherwise the row must have outlived `startedBefore`. The
   * current tick's own rows are left to it (a resumed tick continues the executions it opened), and
   * so are approved actions' rows: their job continues them (approved-jobs.ts).
   */
  async failInterrupted(opts: { startedBefore: number; currentTickId: string }): Promise<string[]> {
    const running = await this.db
      .selectFrom('subconscious_log')
      .select(['id', 'tick_id', 'exec_started_at', 'exec_owner', 'exec_state', 'exec_result'])
      .where('exec_state', 'in', EXECUTING)
      .where(noCard('approved'))
      .execute();
    const interrupted = running.filter(
      (r) => r.tick_id !== opts.currentTickId && (ownerIsGone(r.exec_owner) || Number(r.exec_started_at ?? 0) < opts.startedBefore),
    );
    for (const r of interrupted) {
      // Finished but never applied (its tick will not resume): its outcome still stands.
      const done = r.exec_state === 'executed' ? storedOutcome(r.exec_result) : null;
      if (done) await this.update(r.id, { decision: done.decision, exec_state: 'done', result: done.result });
      else await this.update(r.id, { decision: 'failed', exec_state: 'done', result: INTERRUPTED });
    }
    return interrupted.map((r) => r.id);
  }

  /** Approved cards whose row still runs (their job continues them): the escalation ids. */
  async approvedRunning(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('subconscious_escalations')
      .innerJoin('subconscious_log', 'subconscious_log.id', 'subconscious_escalations.log_id')
      .select('subconscious_escalations.id')
      .where('subconscious_escalations.status', '=', 'approved')
      .where('subconscious_log.exec_state', 'in', EXECUTING)
      .execute();
    return rows.map((r) => r.id);
  }

  /** `executed` rows of a tick that ends without applying them (it failed after they ran): their outcome stands. */
  async settleExecuted(tickId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('subconscious_log')
      .select(['id', 'exec_result'])
      .where('tick_id', '=', tickId)
      .where('exec_state', '=', 'executed')
      .execute();
    for (const r of rows) {
      const done = storedOutcome(r.exec_result) ?? { decision: 'failed' as const, result: INTERRUPTED };
      await this.update(r.id, { decision: done.decision, exec_state: 'done', result: done.result });
    }
    return rows.map((r) => r.id);
  }
}

/** The decision and text of a stored execution outcome (`exec_result`), if it reads as one. */
function storedOutcome(json: string | null): { decision: LogDecision; result: string } | null {
  if (!json) return null;
  try {
    const v = JSON.parse(json) as { decision?: unknown; result?: unknown };
    if (typeof v.decision === 'string' && typeof v.result === 'string') return { decision: v.decision as LogDecision, result: v.result };
  } catch {
    // An unreadable outcome is no outcome: the row reads as interrupted.
  }
  return null;
}
