/**
 * Directives and the review cursor. A review commits in one transaction: its directive (keyed by
 * the tick, so a resumed commit stores nothing twice) and the cursor, which only moves forward.
 * `forCycle` is what the harness's reasoning tier is steered by (its `SteeringSource`).
 */
import type { Kysely, Selectable } from 'kysely';
import type { DirectiveStatus, SteeringDirective } from '../../protocol/steering.js';
import type { SteeringCursorTable, SteeringDirectivesTable, SteeringTables } from './tables.js';

const CURSOR_ID = 'harness';

export interface ReviewCursor {
  reviewed_seq: number;
  reviews: number;
  last_outcome: 'directive' | 'none' | null;
  last_rows: number;
  updated_at: number | null;
}

export interface CommitReview {
  tickId: string;
  /** Used only when the tick stored no directive yet. */
  newId: string;
  fromSeq: number;
  toSeq: number;
  rows: number;
  /** The last finished harness cycle when observed. */
  cycle: number;
  directive: { text: string; expires_after_cycles: number } | null;
  at: number;
}

export type StoredDirective = Omit<SteeringDirective, 'status' | 'remaining_cycles'>;

export class SteeringStore {
  constructor(private readonly db: Kysely<SteeringTables>) {}

  async cursor(): Promise<ReviewCursor> {
    const row = await this.db.selectFrom('steering_cursor').selectAll().where('id', '=', CURSOR_ID).executeTakeFirst();
    if (!row) return { reviewed_seq: 0, reviews: 0, last_outcome: null, last_rows: 0, updated_at: null };
    return toCursor(row);
  }

  /** Store the review's directive (once per tick) and move the cursor forward. */
  async commitReview(r: CommitReview): Promise<{ directive: StoredDirective | null; inserted: boolean; cursor: ReviewCursor }> {
    return this.db.transaction().execute(async (trx) => {
      let inserted = false;
      if (r.directive) {
        const res = await trx
          .insertInto('steering_directives')
          .values({
            id: r.newId,
            tick_id: r.tickId,
            text: r.directive.text,
            expires_after_cycles: r.directive.expires_after_cycles,
            cycle: r.cycle,
            expires_at_cycle: r.cycle + r.directive.expires_after_cycles,
            reviewed_from_seq: r.fromSeq,
            reviewed_to_seq: r.toSeq,
            created_at: r.at,
          })
          .onConflict((oc) => oc.column('tick_id').doNothing())
          .executeTakeFirst();
        inserted = Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
      }
      const before = await trx.selectFrom('steering_cursor').selectAll().where('id', '=', CURSOR_ID).executeTakeFirst();
      const sameTick = before?.last_tick_id === r.tickId;
      const next = {
        reviewed_seq: Math.max(Number(before?.reviewed_seq ?? 0), r.toSeq),
        reviews: Number(before?.reviews ?? 0) + (sameTick ? 0 : 1),
        last_outcome: r.directive ? 'directive' : 'none',
        last_rows: r.rows,
        last_tick_id: r.tickId,
        updated_at: r.at,
      };
      if (before) await trx.updateTable('steering_cursor').set(next).where('id', '=', CURSOR_ID).execute();
      else
        await trx
          .insertInto('steering_cursor')
          .values({ id: CURSOR_ID, ...next })
          .execute();
      const stored = r.directive ? await trx.selectFrom('steering_directives').selectAll().where('tick_id', '=', r.tickId).executeTakeFirst() : undefined;
      return { directive: stored ? toDirective(stored) : null, inserted, cursor: toCursor({ id: CURSOR_ID, ...next }) };
    });
  }

  /** The directive steering cycle `seq`: the newest made before it whose window still covers it. */
  async forCycle(seq: number): Promise<{ id: string; text: string } | null> {
    const row = await this.db
      .selectFrom('steering_directives')
      .select(['id', 'text'])
      .where('cycle', '<', seq)
      .where('expires_at_cycle', '>=', seq)
      .orderBy('created_at', 'desc')
      .orderBy('reviewed_to_seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ?? null;
  }

  /** Retention: delete directives made before `before` that no longer steer any cycle after `currentCycle`. */
  async prune(p: { before: number; currentCycle: number }): Promise<number> {
    const r = await this.db
      .deleteFrom('steering_directives')
      .where('created_at', '<', p.before)
      .where('expires_at_cycle', '<=', p.currentCycle)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async get(id: string): Promise<StoredDirective | undefined> {
    const row = await this.db.selectFrom('steering_directives').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toDirective(row) : undefined;
  }

  /** Newest first, with their status after the last finished cycle `currentCycle`. */
  async list(limit: number, currentCycle: number): Promise<SteeringDirective[]> {
    const rows = await this.db
      .selectFrom('steering_directives')
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('reviewed_to_seq', 'desc')
      .limit(limit)
      .execute();
    const active = await this.forCycle(currentCycle + 1);
    return rows.map((r) => withStatus(toDirective(r), currentCycle, active?.id ?? null));
  }
}

export function withStatus(d: StoredDirective, currentCycle: number, activeId: string | null): SteeringDirective {
  const remaining = Math.max(0, d.expires_at_cycle - currentCycle);
  const status: DirectiveStatus = d.id === activeId ? 'active' : remaining > 0 ? 'superseded' : 'expired';
  return { ...d, status, remaining_cycles: remaining };
}

function toDirective(r: Selectable<SteeringDirectivesTable>): StoredDirective {
  return {
    id: r.id,
    text: r.text,
    expires_after_cycles: Number(r.expires_after_cycles),
    cycle: Number(r.cycle),
    expires_at_cycle: Number(r.expires_at_cycle),
    reviewed_from_seq: Number(r.reviewed_from_seq),
    reviewed_to_seq: Number(r.reviewed_to_seq),
    created_at: Number(r.created_at),
  };
}

function toCursor(r: Selectable<SteeringCursorTable>): ReviewCursor {
  return {
    reviewed_seq: Number(r.reviewed_seq),
    reviews: Number(r.reviews),
    last_outcome: r.last_outcome === 'directive' || r.last_outcome === 'none' ? r.last_outcome : null,
    last_rows: Number(r.last_rows),
    updated_at: Number(r.updated_at),
  };
}
