/**
 * The memory world's outputs: notifications on `subconscious:user`, to-dos and goals.
 *
 * The decision agent's tools only *stage* their writes (`StagedOp`); commit applies them in one
 * transaction with ids chosen during reflect. So a reflect that fails writes nothing (the next
 * tick retries the same diff without duplicates), and a commit resumed after a crash inserts
 * nothing twice (inserts are `ON CONFLICT DO NOTHING`, updates set absolute values).
 */
import type { Kysely } from 'kysely';
import { SubconsciousError } from '../../core/errors.js';
import {
  USER_THREAD,
  type GoalStatus,
  type MemoryGoal,
  type MemoryNotification,
  type MemoryTodo,
  type NotificationPriority,
  type TodoStatus,
} from '../../protocol/memory.js';
import type { MemoryGoalsTable, MemoryTodosTable, MemoryWorldTables } from './tables.js';

export type StagedOp =
  | { op: 'notify'; id: string; message: string; priority: NotificationPriority }
  | { op: 'todo_add'; id: string; title: string; note: string | null }
  | { op: 'todo_update'; id: string; title?: string | undefined; note?: string | null | undefined; status?: TodoStatus | undefined }
  | { op: 'goal_add'; id: string; title: string; description: string | null }
  | { op: 'goal_edit'; id: string; title?: string | undefined; description?: string | null | undefined; status?: GoalStatus | undefined }
  | { op: 'delegate'; id: string; todo_id: string; todo_title: string; bot_id: string; bot_name: string; instruction: string };

export interface Applied {
  /** Notifications inserted now (not by an earlier attempt of the same commit). */
  notifications: MemoryNotification[];
  todos: string[];
  goals: string[];
  delegations: string[];
}

const STATUS_ORDER = { open: 0, active: 0, done: 1, achieved: 1, dropped: 2 } as const;

export class OutputStore {
  constructor(private readonly db: Kysely<MemoryWorldTables>) {}

  async apply(ops: readonly StagedOp[], tickId: string, now: number): Promise<Applied> {
    const applied: Applied = { notifications: [], todos: [], goals: [], delegations: [] };
    if (ops.length === 0) return applied;
    await this.db.transaction().execute(async (trx) => {
      for (const op of ops) {
        switch (op.op) {
          case 'notify': {
            const row = { id: op.id, thread: USER_THREAD, message: op.message, priority: op.priority, tick_id: tickId, created_at: now };
            const res = await trx
              .insertInto('memory_notifications')
              .values(row)
              .onConflict((oc) => oc.column('id').doNothing())
              .executeTakeFirst();
            if (Number(res.numInsertedOrUpdatedRows ?? 0) > 0) applied.notifications.push(row as MemoryNotification);
            break;
          }
          case 'todo_add':
            await trx
              .insertInto('memory_todos')
              .values({ id: op.id, title: op.title, note: op.note, status: 'open', tick_id: tickId, created_at: now, updated_at: now })
              .onConflict((oc) => oc.column('id').doNothing())
              .execute();
            applied.todos.push(op.id);
            break;
          case 'todo_update':
            await trx
              .updateTable('memory_todos')
              .set({
                ...(op.title !== undefined ? { title: op.title } : {}),
                ...(op.note !== undefined ? { note: op.note } : {}),
                ...(op.status !== undefined ? { status: op.status } : {}),
                updated_at: now,
              })
              .where('id', '=', op.id)
              .execute();
            applied.todos.push(op.id);
            break;
          case 'goal_add':
            await trx
              .insertInto('memory_goals')
              .values({ id: op.id, title: op.title, description: op.description, status: 'active', tick_id: tickId, created_at: now, updated_at: now })
              .onConflict((oc) => oc.column('id').doNothing())
              .execute();
            applied.goals.push(op.id);
            break;
          case 'goal_edit':
            await trx
              .updateTable('memory_goals')
              .set({
                ...(op.title !== undefined ? { title: op.title } : {}),
                ...(op.description !== undefined ? { description: op.description } : {}),
                ...(op.status !== undefined ? { status: op.status } : {}),
                updated_at: now,
              })
              .where('id', '=', op.id)
              .execute();
            applied.goals.push(op.id);
            break;
          case 'delegate':
            // Stored pending: a person accepts or declines it (delegations.ts); nothing is sent here.
            await trx
              .insertInto('memory_delegations')
              .values({
                id: op.id,
                todo_id: op.todo_id,
                todo_title: op.todo_title,
                bot_id: op.bot_id,
                bot_name: op.bot_name,
                instruction: op.instruction,
                status: 'pending',
                task_id: null,
                thread_id: null,
                error: null,
                tick_id: tickId,
                created_at: now,
                updated_at: now,
              })
              .onConflict((oc) => oc.column('id').doNothing())
              .execute();
            applied.delegations.push(op.id);
            break;
        }
      }
    });
    applied.todos = [...new Set(applied.todos)];
    applied.goals = [...new Set(applied.goals)];
    return applied;
  }

  /** A person settles a to-do (done, dropped, or open again). */
  async setTodoStatus(id: string, status: TodoStatus, now: number): Promise<MemoryTodo> {
    const res = await this.db.updateTable('memory_todos').set({ status, updated_at: now }).where('id', '=', id).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0)
      throw new SubconsciousError('not_found', `No to-do "${id}".`, { hint: 'memory.todos_list shows the to-dos and their ids.' });
    return toTodo(await this.db.selectFrom('memory_todos').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
  }

  /** A person updates a goal (achieved, dropped, or active again). */
  async setGoalStatus(id: string, status: GoalStatus, now: number): Promise<MemoryGoal> {
    const res = await this.db.updateTable('memory_goals').set({ status, updated_at: now }).where('id', '=', id).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0)
      throw new SubconsciousError('not_found', `No goal "${id}".`, { hint: 'memory.goals_list shows the goals and their ids.' });
    return toGoal(await this.db.selectFrom('memory_goals').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
  }

  async notifications(limit = 50): Promise<MemoryNotification[]> {
    const rows = await this.db.selectFrom('memory_notifications').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
    return rows.map((r) => ({ ...r, priority: r.priority as NotificationPriority, created_at: Number(r.created_at) }));
  }

  /**
   * Notifications committed after the one with id `afterId`, oldest first, by (created_at, id) —
   * a reader's cursor. An unknown `afterId` (or null) starts from the oldest.
   */
  async notificationsAfter(afterId: string | null, limit: number): Promise<MemoryNotification[]> {
    const from = afterId
      ? await this.db.selectFrom('memory_notifications').select(['id', 'created_at']).where('id', '=', afterId).executeTakeFirst()
      : undefined;
    const rows = await this.db
      .selectFrom('memory_notifications')
      .selectAll()
      .$if(from !== undefined, (q) =>
        q.where((eb) => eb.or([eb('created_at', '>', from!.created_at), eb.and([eb('created_at', '=', from!.created_at), eb('id', '>', from!.id)])])),
      )
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, priority: r.priority as NotificationPriority, created_at: Number(r.created_at) }));
  }

  /** Open first, then most recently updated. */
  async todos(status?: TodoStatus): Promise<MemoryTodo[]> {
    const rows = await this.db
      .selectFrom('memory_todos')
      .selectAll()
      .$if(status !== undefined, (q) => q.where('status', '=', status!))
      .execute();
    return sortByStatus(rows).map(toTodo);
  }

  /** Active first, then most recently updated. */
  async goals(status?: GoalStatus): Promise<MemoryGoal[]> {
    const rows = await this.db
      .selectFrom('memory_goals')
      .selectAll()
      .$if(status !== undefined, (q) => q.where('status', '=', status!))
      .execute();
    return sortByStatus(rows).map(toGoal);
  }
}

function sortByStatus<T extends MemoryTodosTable | MemoryGoalsTable>(rows: T[]): T[] {
  const order = (s: string) => STATUS_ORDER[s as keyof typeof STATUS_ORDER] ?? 3;
  return rows.sort((a, b) => order(a.status) - order(b.status) || Number(b.updated_at) - Number(a.updated_at) || a.id.localeCompare(b.id));
}

function toTodo(r: MemoryTodosTable): MemoryTodo {
  return { id: r.id, title: r.title, note: r.note, status: r.status as TodoStatus, created_at: Number(r.created_at), updated_at: Number(r.updated_at) };
}

function toGoal(r: MemoryGoalsTable): MemoryGoal {
  return {
    id: r.id,
    title: r.title,
    description: r.description,
    status: r.status as GoalStatus,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}
