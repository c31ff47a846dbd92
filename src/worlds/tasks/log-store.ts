/**
 * `subconscious_log`: one row per due task per tick, inserted `in_progress` and updated in
 * place (seed 1, step 3 and 6). `(tick_id, task_id)` is unique, so a resumed observe reuses
 * its rows instead of duplicating them. Execution state is written before and after each
 * execution so a resumed commit never runs a task twice.
 */
import type { Kysely, Selectable, Updateable } from 'kysely';
import { ownerIsGone, processOwner } from '../../core/index.js';
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
} as const;

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

  async list(opts: { limit?: number; offset?: number; taskId?: string; decision?: LogDecision } = {}): Promise<LogEntry[]> {
    let q = this.db.selectFrom('subconscious_log').selectAll();
    if (opts.taskId) q = q.where('task_id', '=', opts.taskId);
    if (opts.decision) q = q.where('decision', '=', opts.decision);
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(opts.limit ?? 100)
      .offset(opts.offset ?? 0)
      .execute();
    return rows.map(toLogEntry);
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
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('subconscious_escalations')
              .select('subconscious_escalations.id')
              .whereRef('subconscious_escalations.log_id', '=', 'subconscious_log.id')
              .where('subconscious_escalations.status', '=', 'pending'),
          ),
        ),
      )
      .executeTakeFirst();
    return Number(res.numDeletedRows);
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

  /** Mark that execution starts: written (and committed) before any side effect. */
  async markRunning(id: string, mode: ExecMode, modelDecision: ModelDecision, reason: string): Promise<void> {
    const now = this.now();
    await this.db
      .updateTable('subconscious_log')
      .set({ exec_state: 'running', exec_mode: mode, exec_started_at: now, exec_owner: processOwner(), model_decision: modelDecision, reason, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /** `in_progress` rows of a tick become `decision` (cancelled / failed); finished rows are untouched. */
  async closeOpenRows(tickId: string, decision: 'cancelled' | 'failed', result: string): Promise<string[]> {
    const open = await this.db
      .selectFrom('subconscious_log')
      .select(['id'])
      .where('tick_id', '=', tickId)
      .where('decision', '=', 'in_progress')
      .where('exec_state', '!=', 'running')
      .execute();
    if (open.length === 0) return [];
    await this.db
      .updateTable('subconscious_log')
      .set({ decision, result, updated_at: this.now() })
      .where('tick_id', '=', tickId)
      .where('decision', '=', 'in_progress')
      .where('exec_state', '!=', 'running')
      .execute();
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
      .where('exec_state', '!=', 'running')
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
      .where('exec_state', '=', 'running')
      .where('tick_id', '!=', exceptTickId)
      .execute();
    return [...new Set(rows.map((r) => r.task_id))];
  }

  /**
   * Executions marked `running` by a process that died: they become `failed` (never re-run: a
   * write may already have happened). A dead owner on this host is known at once; otherwise the
   * row must have outlived `startedBefore`. The current tick's own rows are left to it (a resumed
   * tick settles the executions it opened).
   */
  async failInterrupted(opts: { startedBefore: number; currentTickId: string }): Promise<string[]> {
    const running = await this.db
      .selectFrom('subconscious_log')
      .select(['id', 'tick_id', 'exec_started_at', 'exec_owner'])
      .where('exec_state', '=', 'running')
      .execute();
    const interrupted = running.filter(
      (r) => r.tick_id !== opts.currentTickId && (ownerIsGone(r.exec_owner) || Number(r.exec_started_at ?? 0) < opts.startedBefore),
    );
    for (const r of interrupted) {
      await this.update(r.id, { decision: 'failed', exec_state: 'done', result: INTERRUPTED });
    }
    return interrupted.map((r) => r.id);
  }
}

export const INTERRUPTED = 'Interrupted while executing (the process stopped). Not run again so it cannot act twice; trigger a tick to evaluate it anew.';
