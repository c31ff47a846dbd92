/**
 * `subconscious_escalations`: unsolicited writes an analysis run recommended, waiting for the
 * user (seed 1, "Approval Gate"). One per log row (unique `log_id`), so a resumed commit cannot
 * raise it twice; resolving is a compare-and-set on `status = 'pending'`, so approving twice
 * (or after a dismissal) is refused and runs nothing.
 */
import type { Kysely, Selectable } from 'kysely';
import { SubconsciousError } from '../../core/errors.js';
import type { TasksTables, SubconsciousEscalationsTable } from './tables.js';
import type { Escalation, EscalationPriority, EscalationStatus } from './types.js';
import type { AnswerVia, ApprovalAnswerKind, ApprovalAnswerRecord, ApprovalContext, EscalationAction } from '../../protocol/index.js';

/** How a person answered a card (recorded on it). */
export interface EscalationAnswer {
  kind: ApprovalAnswerKind;
  arguments?: Record<string, unknown> | null | undefined;
  text?: string | null | undefined;
  by?: string | undefined;
  via?: AnswerVia | undefined;
}

function parseJson<T>(text: string | null | undefined): T | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

type Db = Kysely<TasksTables>;
type Row = Selectable<SubconsciousEscalationsTable>;

export function toEscalation(row: Row): Escalation {
  return {
    id: row.id,
    task_id: row.task_id,
    log_id: row.log_id,
    title: row.title,
    description: row.description,
    analysis: row.analysis,
    priority: row.priority as EscalationPriority,
    status: row.status as EscalationStatus,
    skill_related: Number(row.skill_related) === 1,
    skill_server: row.skill_server ?? null,
    created_at: Number(row.created_at),
    resolved_at: row.resolved_at === null ? null : Number(row.resolved_at),
    resolved_by: (row.resolved_by ?? null) as Escalation['resolved_by'],
    resolution: row.resolution ?? null,
    action: parseJson<EscalationAction>(row.action),
    context: parseJson<ApprovalContext>(row.context),
    answer: row.answer
      ? ({
          kind: row.answer as ApprovalAnswerKind,
          arguments: parseJson(row.answer_arguments),
          text: row.answer_text ?? null,
          by: row.answered_by ?? null,
          via: (row.answered_via ?? null) as AnswerVia | null,
        } satisfies ApprovalAnswerRecord)
      : null,
  };
}

/** What commit knows when it raises one; status and times are the store's. */
export type NewEscalation = Omit<
  Escalation,
  'status' | 'created_at' | 'resolved_at' | 'resolved_by' | 'resolution' | 'skill_server' | 'action' | 'context' | 'answer'
> & {
  skill_server?: string | null | undefined;
  action?: EscalationAction | null | undefined;
  context?: ApprovalContext | null | undefined;
};

const PRIORITY_ORDER: Record<EscalationPriority, number> = { critical: 0, important: 1, normal: 2 };

export class EscalationStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  /** Insert unless this log row already has one; returns the row that exists afterwards. */
  async create(e: NewEscalation, db: Db = this.db): Promise<Escalation> {
    await db
      .insertInto('subconscious_escalations')
      .values({
        ...e,
        action: e.action ? JSON.stringify(e.action) : null,
        context: e.context ? JSON.stringify(e.context) : null,
        skill_server: e.skill_server ?? null,
        skill_related: e.skill_related ? 1 : 0,
        status: 'pending',
        created_at: this.now(),
        resolved_at: null,
        resolved_by: null,
        resolution: null,
      })
      .onConflict((oc) => oc.column('log_id').doNothing())
      .execute();
    const row = await db.selectFrom('subconscious_escalations').selectAll().where('log_id', '=', e.log_id).executeTakeFirstOrThrow();
    return toEscalation(row);
  }

  async get(id: string): Promise<Escalation | undefined> {
    const row = await this.db.selectFrom('subconscious_escalations').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toEscalation(row) : undefined;
  }

  /**
   * Pending ones by priority then age; resolved ones newest first. Without a status filter every
   * pending one is listed (however old) and the `limit` newest resolved ones after them.
   */
  async list(status?: EscalationStatus, limit = 200): Promise<Escalation[]> {
    // `answered`: every status but pending (approved, dismissed, resolved by itself).
    const query = (only: EscalationStatus | 'answered') => {
      let q = this.db.selectFrom('subconscious_escalations').selectAll();
      q = only === 'answered' ? q.where('status', '!=', 'pending') : q.where('status', '=', only);
      return q.orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
    };
    const rows = status ? await query(status) : [...(await query('pending')), ...(await query('answered'))];
    return rows.map(toEscalation).sort((a, b) => {
      if (a.status === 'pending' && b.status === 'pending') return PRIORITY_ORDER[a.priority] - PRIORITY_ORDER[b.priority] || a.created_at - b.created_at;
      if (a.status === 'pending') return -1;
      if (b.status === 'pending') return 1;
      return 0;
    });
  }

  /** The escalation a log row raised, if any. */
  async forLog(logId: string): Promise<Escalation | undefined> {
    const row = await this.db.selectFrom('subconscious_escalations').selectAll().where('log_id', '=', logId).executeTakeFirst();
    return row ? toEscalation(row) : undefined;
  }

  /** Tasks with an escalation still waiting for the user. */
  async pendingTaskIds(): Promise<string[]> {
    const rows = await this.db.selectFrom('subconscious_escalations').select('task_id').where('status', '=', 'pending').execute();
    return [...new Set(rows.map((r) => r.task_id))];
  }

  /** Ids of the pending escalations raised by one task. */
  async pendingIdsFor(taskId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('subconscious_escalations').select('id').where('task_id', '=', taskId).where('status', '=', 'pending').execute();
    return rows.map((r) => r.id);
  }

  /** Pending skill-related escalations that name their skill (they resolve by themselves when it is healthy). */
  async pendingForSkills(): Promise<Escalation[]> {
    const rows = await this.db
      .selectFrom('subconscious_escalations')
      .selectAll()
      .where('status', '=', 'pending')
      .where('skill_related', '=', 1)
      .where('skill_server', 'is not', null)
      .execute();
    return rows.map(toEscalation);
  }

  /**
   * pending → `to`, exactly once. Unknown id → not_found; already resolved → conflict. The words
   * name the escalation by its title, never its id: the page shows them.
   */
  async resolve(
    id: string,
    to: 'approved' | 'dismissed' | 'resolved',
    by: 'person' | 'subconscious' = 'person',
    note: string | null = null,
    how?: EscalationAnswer,
  ): Promise<Escalation> {
    const answer = how
      ? {
          answer: how.kind,
          answer_arguments: how.arguments ? JSON.stringify(how.arguments) : null,
          answer_text: how.text ?? null,
          answered_by: how.by?.trim() || 'you',
          answered_via: how.via ?? 'rpc',
        }
      : {};
    const res = await this.db
      .updateTable('subconscious_escalations')
      .set({ status: to, resolved_at: this.now(), resolved_by: by, resolution: note, ...answer })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    const after = await this.get(id);
    if (!after) {
      throw new SubconsciousError('not_found', 'That approval card does not exist (any more).', {
        hint: 'Reload the list (subconscious.escalations_list).',
        details: { field: 'id' },
      });
    }
    if (Number(res.numUpdatedRows) !== 1) {
      const was = after.status === 'resolved' ? 'resolved by itself' : after.status;
      throw new SubconsciousError('conflict', `“${after.title}” was already ${was}; nothing was run.`, {
        details: { field: 'id', status: after.status },
      });
    }
    return after;
  }
}
