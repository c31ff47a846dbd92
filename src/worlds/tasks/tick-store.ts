/**
 * `tasks_ticks`: one row per tick that built a situation report — the report exactly as it was
 * sent, each evaluation call's raw answer and figures, and the tick's totals (tokens, duration).
 * A row's detail and the grouped log read it. Written idempotently (a resumed tick rewrites the
 * same row) and pruned with the activity log.
 */
import type { Kysely } from 'kysely';
import { CAPS, cap, parseEvaluations, type EvaluationRecord } from './log-detail.js';
import type { TasksTables } from './tables.js';

type Db = Kysely<TasksTables>;

export interface TickRecord {
  tick_id: string;
  tick_at: number;
  report: string | null;
  report_tokens: number | null;
  evaluations: EvaluationRecord[];
  tasks: number;
  input_tokens: number;
  output_tokens: number;
  duration_ms: number | null;
}

export class TickStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  /** The report as sent (prepare_context): before the evaluation, so a failed evaluation still shows what it was sent. */
  async recordReport(tickId: string, tickAt: number, report: string, reportTokens: number, tasks: number): Promise<void> {
    const values = { report: cap(report, CAPS.report).text, report_tokens: reportTokens, tasks };
    await this.db
      .insertInto('tasks_ticks')
      .values({ tick_id: tickId, tick_at: tickAt, ...values, evaluations: '[]', input_tokens: 0, output_tokens: 0, duration_ms: null, created_at: this.now() })
      .onConflict((oc) => oc.column('tick_id').doUpdateSet(values))
      .execute();
  }

  /** The evaluation calls and the tick's totals (commit). */
  async recordOutcome(
    tickId: string,
    tickAt: number,
    v: { evaluations: EvaluationRecord[]; input_tokens: number; output_tokens: number; duration_ms: number; tasks: number },
    db: Db = this.db,
  ): Promise<void> {
    const values = {
      evaluations: JSON.stringify(v.evaluations),
      input_tokens: v.input_tokens,
      output_tokens: v.output_tokens,
      duration_ms: v.duration_ms,
      tasks: v.tasks,
    };
    await db
      .insertInto('tasks_ticks')
      .values({ tick_id: tickId, tick_at: tickAt, report: null, report_tokens: null, ...values, created_at: this.now() })
      .onConflict((oc) => oc.column('tick_id').doUpdateSet(values))
      .execute();
  }

  async get(tickId: string): Promise<TickRecord | undefined> {
    const row = await this.db.selectFrom('tasks_ticks').selectAll().where('tick_id', '=', tickId).executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  /** Totals of several ticks (the grouped log), without their reports. */
  async totals(tickIds: readonly string[]): Promise<Map<string, { tokens: number; duration_ms: number | null }>> {
    if (!tickIds.length) return new Map();
    const rows = await this.db
      .selectFrom('tasks_ticks')
      .select(['tick_id', 'input_tokens', 'output_tokens', 'duration_ms'])
      .where('tick_id', 'in', [...tickIds])
      .execute();
    return new Map(
      rows.map((r) => [
        r.tick_id,
        { tokens: Number(r.input_tokens) + Number(r.output_tokens), duration_ms: r.duration_ms === null ? null : Number(r.duration_ms) },
      ]),
    );
  }

  /** Ticks older than `before` with no log row left. */
  async prune(before: number): Promise<number> {
    const res = await this.db
      .deleteFrom('tasks_ticks')
      .where('tick_at', '<', before)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('subconscious_log').select('subconscious_log.id').whereRef('subconscious_log.tick_id', '=', 'tasks_ticks.tick_id'))),
      )
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

function toRecord(row: {
  tick_id: string;
  tick_at: number;
  report: string | null;
  report_tokens: number | null;
  evaluations: string;
  tasks: number;
  input_tokens: number;
  output_tokens: number;
  duration_ms: number | null;
}): TickRecord {
  return {
    tick_id: row.tick_id,
    tick_at: Number(row.tick_at),
    report: row.report,
    report_tokens: row.report_tokens === null ? null : Number(row.report_tokens),
    evaluations: parseEvaluations(row.evaluations),
    tasks: Number(row.tasks),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
  };
}
