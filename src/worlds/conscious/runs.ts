/**
 * The conscious loop's runs (a tick that read memory; quiet ticks are not runs): when, what was
 * read, how many actionables, and why a run failed. The Actionables tab shows the last one; the
 * newest `KEEP_RUNS` are kept.
 *
 * Every write is an upsert keyed by the tick id, so a resumed tick updates its own row and a
 * run that failed before it started one still leaves its error.
 */
import type { Kysely } from 'kysely';
import type { ConsciousRun, ConsciousRunStatus } from '../../protocol/conscious.js';
import type { ConsciousRunsTable, ConsciousTables } from './tables.js';

export const KEEP_RUNS = 100;

type RunRow = ConsciousRunsTable;

export class RunStore {
  constructor(private readonly db: Kysely<ConsciousTables>) {}

  /** A run began: it reads these namespaces. */
  async started(id: string, at: number, namespaces: readonly string[]): Promise<void> {
    await this.upsert(id, { status: 'running', started_at: at, namespaces: JSON.stringify(namespaces) }, ['status', 'namespaces']);
  }

  async completed(
    id: string,
    startedAt: number,
    at: number,
    figures: { namespaces: readonly string[]; documents: number; count: number; new: number; cut: number },
  ): Promise<void> {
    await this.upsert(
      id,
      {
        status: 'completed',
        started_at: startedAt,
        finished_at: at,
        namespaces: JSON.stringify(figures.namespaces),
        documents: figures.documents,
        count: figures.count,
        new: figures.new,
        cut: figures.cut,
        duration_ms: Math.max(0, at - startedAt),
        error: null,
        error_kind: null,
      },
      ['status', 'finished_at', 'namespaces', 'documents', 'count', 'new', 'cut', 'duration_ms', 'error', 'error_kind'],
    );
    await this.prune();
  }

  async failed(id: string, startedAt: number, at: number, error: string, kind: string): Promise<void> {
    await this.upsert(
      id,
      { status: 'failed', started_at: startedAt, finished_at: at, duration_ms: Math.max(0, at - startedAt), error: error.slice(0, 2000), error_kind: kind },
      ['status', 'finished_at', 'duration_ms', 'error', 'error_kind'],
    );
    await this.prune();
  }

  /** A newer run superseded this one: only a run that started is marked. */
  async interrupted(id: string, at: number): Promise<void> {
    await this.db
      .updateTable('conscious_runs')
      .set({ status: 'interrupted', finished_at: at, error: 'superseded by a newer run; its result was discarded', error_kind: 'superseded' })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .execute();
  }

  async list(limit = 10): Promise<ConsciousRun[]> {
    const rows = await this.db.selectFrom('conscious_runs').selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toRun);
  }

  private async upsert(id: string, values: Partial<RunRow> & { status: ConsciousRunStatus; started_at: number }, update: (keyof RunRow)[]): Promise<void> {
    const row: RunRow = {
      id,
      finished_at: null,
      namespaces: '[]',
      documents: 0,
      count: 0,
      new: 0,
      cut: 0,
      duration_ms: null,
      error: null,
      error_kind: null,
      ...values,
    };
    const set = Object.fromEntries(update.map((k) => [k, row[k]]));
    await this.db
      .insertInto('conscious_runs')
      .values(row)
      .onConflict((oc) => oc.column('id').doUpdateSet(set))
      .execute();
  }

  private async prune(): Promise<void> {
    const cutoff = await this.db.selectFrom('conscious_runs').select('started_at').orderBy('started_at', 'desc').offset(KEEP_RUNS).limit(1).executeTakeFirst();
    if (cutoff) await this.db.deleteFrom('conscious_runs').where('started_at', '<=', Number(cutoff.started_at)).execute();
  }
}

function toRun(r: RunRow): ConsciousRun {
  let namespaces: string[] = [];
  try {
    const parsed = JSON.parse(r.namespaces) as unknown;
    if (Array.isArray(parsed)) namespaces = parsed.filter((n): n is string => typeof n === 'string');
  } catch {
    // unreadable: shown as none
  }
  return {
    id: r.id,
    status: r.status as ConsciousRunStatus,
    started_at: Number(r.started_at),
    finished_at: r.finished_at === null ? null : Number(r.finished_at),
    namespaces,
    documents: Number(r.documents),
    count: Number(r.count),
    new: Number(r.new),
    cut: Number(r.cut),
    duration_ms: r.duration_ms === null ? null : Number(r.duration_ms),
    error: r.error,
    error_kind: r.error_kind,
  };
}
