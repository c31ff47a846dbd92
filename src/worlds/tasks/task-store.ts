/**
 * `subconscious_tasks`: the seed's three system defaults (stable ids, seeded once, never
 * deleted), HEARTBEAT.md tasks (system, imported idempotently; a vanished line disables its
 * task, a returning line re-enables it) and user tasks (add, update, remove).
 *
 * Write rights are a person's explicit choice (issue 9): a task is read-only unless someone set
 * `needs_tools`; the title only suggests, and a HEARTBEAT.md line marked `[write]` only asks (the
 * person confirms it on the page or with `tasks writes <id> on`). A duplicate
 * user task is refused by the database itself (a unique `dedupe_key`, see dedupe.ts).
 */
import type { Kysely, Selectable } from 'kysely';
import { SubconsciousError } from '../../core/errors.js';
import type { Clock, IdGen } from '../../core/index.js';
import type { TasksTables, SubconsciousTasksTable } from './tables.js';
import { dedupeKey } from './dedupe.js';
import { MAX_TITLE_CHARS, heartbeatTaskId, titleKey, type HeartbeatLine } from './heartbeat-md.js';
import { soundsLikeWrite } from './intent.js';
import { advanceSchedule, scheduleFor } from './recurrence.js';
import type { Task, TaskOrigin, TaskSource, TaskWhy, WriteChoice } from './types.js';

/** Seed 1's default system tasks. Ids are stable so seeding is idempotent across restarts. */
export const DEFAULT_SYSTEM_TASKS: readonly { id: string; title: string }[] = [
  { id: 'system:check-skills', title: 'Check connected skills for errors or disconnections' },
  { id: 'system:review-memory', title: 'Review new memory updates for actionable items' },
  { id: 'system:system-health', title: 'Monitor system health (Ollama, memory, connections)' },
];

export interface AddTaskInput {
  title: string;
  recurrence?: string | undefined;
  /** Write intent, the person's choice; absent means read-only (the title never decides). */
  needs_tools?: boolean | undefined;
}

export interface UpdateTaskInput {
  title?: string | undefined;
  enabled?: boolean | undefined;
  recurrence?: string | undefined;
  needs_tools?: boolean | undefined;
}

export interface HeartbeatSyncResult {
  added: number;
  disabled: number;
  reenabled: number;
  renamed: number;
  /** Tasks whose `[write]` marker was added (now asking the person) or removed. */
  rights: number;
}

type Row = Selectable<SubconsciousTasksTable>;
type Db = Kysely<TasksTables>;

/** A task as stored, with what only the world needs (the skip's fingerprint, whether its line is still in HEARTBEAT.md). */
export type StoredTask = Task & { noop_fingerprint: string | null; origin_present: boolean };

/** A placeholder: the service fills in the real one (it knows escalations and the model's health). */
const UNDECIDED_WHY: TaskWhy = { kind: 'due', at: null, until: null, detail: null };

export function toTask(row: Row): StoredTask {
  const noopAt = row.noop_at === null || row.noop_at === undefined ? null : Number(row.noop_at);
  return {
    id: row.id,
    title: row.title,
    source: row.source as TaskSource,
    origin: row.origin as TaskOrigin,
    recurrence: row.recurrence,
    enabled: Number(row.enabled) === 1,
    needs_tools: Number(row.needs_tools) === 1,
    write_choice: writeChoiceOf(row.write_choice, Number(row.needs_tools) === 1),
    write_suggested: soundsLikeWrite(row.title),
    last_run_at: row.last_run_at === null ? null : Number(row.last_run_at),
    next_run_at: row.next_run_at === null ? null : Number(row.next_run_at),
    completed: Number(row.completed) === 1,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    unchanged_since: row.noop_fingerprint ? noopAt : null,
    why: UNDECIDED_WHY,
    noop_fingerprint: row.noop_fingerprint ?? null,
    origin_present: Number(row.origin_present) === 1,
  };
}

/** The wire shape (what RPC returns): the world's bookkeeping left out. */
export function publicTask(task: StoredTask, why: TaskWhy): Task {
  const { noop_fingerprint: _fp, origin_present: _present, ...rest } = task;
  return { ...rest, why };
}

const WRITE_CHOICES: ReadonlySet<string> = new Set<WriteChoice>(['none', 'person', 'heartbeat_md', 'older_version']);

/**
 * A stored write choice as the world reads it. A value this version does not know (a newer
 * version's, a hand edit) is nobody's known choice: with rights stored it is treated as a guess
 * to confirm (`older_version`: asks first, the page asks the person), never as a grant.
 */
export function writeChoiceOf(value: string | null | undefined, needsTools: boolean): WriteChoice {
  if (typeof value === 'string' && WRITE_CHOICES.has(value)) return value as WriteChoice;
  return needsTools ? 'older_version' : 'none';
}

/**
 * The write rights a task really runs with. Fails closed: only a choice a person made grants
 * them. A guess, a HEARTBEAT.md `[write]` marker not yet confirmed on the page (a file is
 * untrusted text), an unknown value or a missing field grants none.
 */
export function writesGranted(task: Pick<Task, 'needs_tools' | 'write_choice'> | null | undefined): boolean {
  if (!task || task.needs_tools !== true) return false;
  return task.write_choice === 'person';
}

export function cleanTitle(title: string, field = 'title'): string {
  // Control characters are not text a person wrote (a pasted terminal line, a NUL): they go.
  const clean = title
    .replace(/\p{Cc}/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!/[^\p{Cf}\p{Z}\s]/u.test(clean)) {
    throw new SubconsciousError('invalid_params', `${field}: must contain visible text (control or invisible characters alone do not make a task).`, {
      details: { field },
    });
  }
  if (clean.length > MAX_TITLE_CHARS) {
    throw new SubconsciousError('invalid_params', `${field}: at most ${MAX_TITLE_CHARS} characters (got ${clean.length}).`, { details: { field } });
  }
  return clean;
}

export class TaskStore {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly ids: IdGen,
    private readonly timezone: string,
  ) {}

  /** Insert the defaults that are missing; never touches existing rows (a disabled default stays disabled). */
  async seedDefaults(): Promise<number> {
    const now = this.clock.now();
    let inserted = 0;
    for (const t of DEFAULT_SYSTEM_TASKS) {
      const res = await this.db
        .insertInto('subconscious_tasks')
        .values(newRow({ id: t.id, title: t.title, source: 'system', origin: 'default', recurrence: 'pending', needs_tools: false, now, next: null }))
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      inserted += Number(res.numInsertedOrUpdatedRows ?? 0);
    }
    return inserted;
  }

  async list(): Promise<StoredTask[]> {
    const rows = await this.db.selectFrom('subconscious_tasks').selectAll().where('removed_at', 'is', null).orderBy('created_at').orderBy('id').execute();
    // The page's order: defaults, then HEARTBEAT.md in file order, then the user's in creation order.
    const rank = (r: Row) => (r.origin === 'default' ? 0 : r.origin === 'heartbeat_md' ? 1 : 2);
    return rows.sort((a, b) => rank(a) - rank(b) || (rank(a) === 1 ? Number(a.origin_order ?? 0) - Number(b.origin_order ?? 0) : 0)).map(toTask);
  }

  /** The removed tasks, newest removal first (what `restore` can bring back). */
  async listRemoved(): Promise<StoredTask[]> {
    const rows = await this.db
      .selectFrom('subconscious_tasks')
      .selectAll()
      .where('removed_at', 'is not', null)
      .orderBy('removed_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map(toTask);
  }

  /** A task that is not removed (a removed one is as gone to everything but `restore`). */
  async get(id: string): Promise<StoredTask | undefined> {
    const row = await this.db.selectFrom('subconscious_tasks').selectAll().where('id', '=', id).where('removed_at', 'is', null).executeTakeFirst();
    return row ? toTask(row) : undefined;
  }

  async require(id: string): Promise<StoredTask> {
    const task = await this.get(id);
    // No id in the words: the page shows this message, and an id means nothing to a person there.
    if (!task)
      throw new SubconsciousError('not_found', 'That task does not exist (any more): it may have been removed.', {
        hint: 'Reload the list, or list tasks with `subconscious tasks list`.',
        details: { field: 'id' },
      });
    return task;
  }

  async add(input: AddTaskInput): Promise<StoredTask> {
    const title = cleanTitle(input.title);
    const now = this.clock.now();
    const schedule = scheduleFor(input.recurrence ?? 'pending', now, this.timezone);
    const needsTools = input.needs_tools ?? false;
    await this.refuseSystemDuplicate(title, schedule.recurrence, needsTools);
    const key = dedupeKey(title, schedule.recurrence, needsTools);
    const row: Row = {
      ...newRow({
        id: this.ids(),
        title,
        source: 'user',
        origin: 'user',
        recurrence: schedule.recurrence,
        needs_tools: needsTools,
        now,
        next: schedule.next_run_at,
      }),
      write_choice: input.needs_tools === undefined ? 'none' : 'person',
      dedupe_key: key,
    };
    // The database decides: a second insert of the same key (a batch, a concurrent request) does nothing.
    const res = await this.db
      .insertInto('subconscious_tasks')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0) !== 1) throw await this.duplicateOf(key, title);
    return toTask(row);
  }

  async update(id: string, input: UpdateTaskInput): Promise<StoredTask> {
    const task = await this.require(id);
    if (task.source === 'system') {
      // A HEARTBEAT.md line marked `[write]` asks for write rights: the person answers it here.
      const asksForWrites = task.origin === 'heartbeat_md' && (task.write_choice === 'heartbeat_md' || task.write_choice === 'person');
      const refused = (['title', 'recurrence', 'needs_tools'] as const).filter((k) => input[k] !== undefined && !(k === 'needs_tools' && asksForWrites));
      if (refused.length) {
        throw new SubconsciousError('forbidden', `System task "${task.title}" can only be enabled or disabled (refused: ${refused.join(', ')}).`, {
          hint:
            task.origin === 'heartbeat_md'
              ? refused.includes('needs_tools')
                ? 'Mark its line `- [write] …` in HEARTBEAT.md, then confirm it on the page.'
                : 'Edit its line in HEARTBEAT.md instead.'
              : 'Add a user task with the wording you want.',
          details: { field: refused[0] },
        });
      }
    }
    const now = this.clock.now();
    const patch: Partial<Row> = { updated_at: now };
    if (input.title !== undefined) patch.title = cleanTitle(input.title);
    if (input.enabled !== undefined) {
      patch.enabled = input.enabled ? 1 : 0;
      patch.user_disabled = input.enabled ? 0 : 1;
    }
    if (input.needs_tools !== undefined) {
      // Said by a person, whatever was there before (an older version's guess included).
      patch.needs_tools = input.needs_tools ? 1 : 0;
      patch.write_choice = 'person';
    }
    if (input.recurrence !== undefined) {
      const schedule = scheduleFor(input.recurrence, now, this.timezone);
      patch.recurrence = schedule.recurrence;
      // A new schedule starts over: a completed `once` task becomes due again.
      patch.completed = 0;
      patch.next_run_at = schedule.next_run_at;
    }
    if (task.source === 'user' && (patch.title !== undefined || patch.recurrence !== undefined || patch.needs_tools !== undefined)) {
      const title = patch.title ?? task.title;
      const recurrence = patch.recurrence ?? task.recurrence;
      const needsTools = patch.needs_tools === undefined ? task.needs_tools : patch.needs_tools === 1;
      await this.refuseSystemDuplicate(title, recurrence, needsTools);
      patch.dedupe_key = dedupeKey(title, recurrence, needsTools);
    }
    try {
      await this.db.updateTable('subconscious_tasks').set(patch).where('id', '=', id).execute();
    } catch (err) {
      if (patch.dedupe_key && isUniqueViolation(err)) throw await this.duplicateOf(patch.dedupe_key, patch.title ?? task.title);
      throw err;
    }
    return this.require(id);
  }

  /**
   * The same task twice (wording, schedule and write intent) would be evaluated, and could act,
   * twice each tick. Case and spacing do not make a new task; another schedule or intent does, and
   * a completed `once` task may be added again. Among user tasks the unique key decides; a user
   * task that repeats a system task (a default, a HEARTBEAT.md line) is refused here.
   */
  private async refuseSystemDuplicate(title: string, recurrence: string, needsTools: boolean): Promise<void> {
    const key = titleKey(title);
    const rows = await this.db
      .selectFrom('subconscious_tasks')
      .select(['id', 'title', 'enabled'])
      .where('source', '=', 'system')
      .where('completed', '=', 0)
      .where('recurrence', '=', recurrence)
      .where('needs_tools', '=', needsTools ? 1 : 0)
      .execute();
    const same = rows.find((r) => titleKey(r.title) === key);
    if (same) throw duplicateError(same);
  }

  /** The refusal for a key the database already holds, naming the task that holds it. */
  private async duplicateOf(key: string, title: string): Promise<SubconsciousError> {
    const same = await this.db
      .selectFrom('subconscious_tasks')
      .select(['id', 'title', 'enabled'])
      .where('dedupe_key', '=', key)
      .where('completed', '=', 0)
      .executeTakeFirst();
    return duplicateError(same ?? { id: '', title, enabled: 1 });
  }

  /** Soft delete: kept (restorable), hidden from lists, never evaluated; its wording is free again. */
  async remove(id: string): Promise<StoredTask> {
    const task = await this.require(id);
    if (task.source === 'system') {
      throw new SubconsciousError('forbidden', `"${task.title}" is a system task: system tasks cannot be removed, only disabled.`, {
        hint: `Switch it off instead (its switch on the page, or \`subconscious tasks disable ${task.id}\`).`,
        details: { field: 'id' },
      });
    }
    const now = this.clock.now();
    await this.db
      .updateTable('subconscious_tasks')
      .set({ removed_at: now, dedupe_key: null, updated_at: now })
      .where('id', '=', id)
      .where('removed_at', 'is', null)
      .execute();
    return task;
  }

  /** Bring a removed task back as it was; refused when it is not removed or its wording is taken meanwhile. */
  async restore(id: string): Promise<StoredTask> {
    const row = await this.db.selectFrom('subconscious_tasks').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) {
      throw new SubconsciousError('not_found', 'That task does not exist: there is nothing to restore.', {
        hint: 'List tasks with `subconscious tasks list`.',
        details: { field: 'id' },
      });
    }
    if (row.removed_at === null || row.removed_at === undefined) {
      throw new SubconsciousError('conflict', `"${row.title}" is not removed, so there is nothing to restore.`, {
        hint: 'It is in the task list already.',
        details: { field: 'id', reason: 'not_removed' },
      });
    }
    const needsTools = Number(row.needs_tools) === 1;
    await this.refuseSystemDuplicate(row.title, row.recurrence, needsTools);
    const key = dedupeKey(row.title, row.recurrence, needsTools);
    try {
      await this.db.updateTable('subconscious_tasks').set({ removed_at: null, dedupe_key: key, updated_at: this.clock.now() }).where('id', '=', id).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw await this.duplicateOf(key, row.title);
      throw err;
    }
    return this.require(id);
  }

  /** Enabled, not completed, and due (never run, or `next_run_at <= now`). */
  async due(now: number, exclude: readonly string[] = []): Promise<StoredTask[]> {
    let q = this.db
      .selectFrom('subconscious_tasks')
      .selectAll()
      .where('enabled', '=', 1)
      .where('completed', '=', 0)
      .where('removed_at', 'is', null)
      .where((eb) => eb.or([eb('next_run_at', 'is', null), eb('next_run_at', '<=', now)]));
    if (exclude.length) q = q.where('id', 'not in', [...exclude]);
    const rows = await q.orderBy('created_at').orderBy('id').execute();
    return rows.map(toTask);
  }

  /**
   * Make the HEARTBEAT.md tasks match the file's lines. Idempotent. A task the user disabled
   * stays disabled while its line stays; a line that vanishes disables its task, and the task
   * comes back enabled when the line returns, unless the user had switched it off. Lists follow
   * the file's order.
   */
  async syncHeartbeat(lines: readonly HeartbeatLine[]): Promise<HeartbeatSyncResult> {
    const result: HeartbeatSyncResult = { added: 0, disabled: 0, reenabled: 0, renamed: 0, rights: 0 };
    const now = this.clock.now();
    const wanted = new Map(lines.map((l) => [heartbeatTaskId(l.title), l.title]));
    const writes = new Map(lines.map((l) => [heartbeatTaskId(l.title), l.write]));
    const order = new Map([...wanted.keys()].map((id, i) => [id, i]));
    await this.db.transaction().execute(async (trx) => {
      const existing = await trx.selectFrom('subconscious_tasks').selectAll().where('origin', '=', 'heartbeat_md').execute();
      const byId = new Map(existing.map((r) => [r.id, r]));
      for (const row of existing) {
        if (!wanted.has(row.id) && Number(row.origin_present) === 1) {
          await trx.updateTable('subconscious_tasks').set({ origin_present: 0, enabled: 0, updated_at: now }).where('id', '=', row.id).execute();
          result.disabled++;
        }
      }
      const fresh: Row[] = [];
      for (const [id, title] of wanted) {
        const row = byId.get(id);
        const position = order.get(id)!;
        const write = writes.get(id) === true;
        if (!row) {
          fresh.push({
            ...newRow({ id, title, source: 'system', origin: 'heartbeat_md', recurrence: 'pending', needs_tools: write, now, next: null }),
            origin_order: position,
            write_choice: write ? 'heartbeat_md' : 'none',
          });
          continue;
        }
        // The marker only asks (a file is untrusted text): a marked line's task waits for the
        // person's answer (`heartbeat_md`), and that answer (`person`) stands while the marker
        // does. Taking the marker away takes the rights away.
        const answered = write && row.write_choice === 'person';
        if (!answered && (Number(row.needs_tools) !== (write ? 1 : 0) || row.write_choice !== (write ? 'heartbeat_md' : 'none'))) {
          await trx
            .updateTable('subconscious_tasks')
            .set({ needs_tools: write ? 1 : 0, write_choice: write ? 'heartbeat_md' : 'none', updated_at: now })
            .where('id', '=', id)
            .execute();
          result.rights++;
        }
        if (Number(row.origin_present) === 0) {
          // Back in the file: on again, unless the user had switched it off.
          const enabled = Number(row.user_disabled) === 1 ? 0 : 1;
          await trx
            .updateTable('subconscious_tasks')
            .set({ origin_present: 1, enabled, title, origin_order: position, updated_at: now })
            .where('id', '=', id)
            .execute();
          if (enabled) result.reenabled++;
        } else if (row.title !== title && titleKey(row.title) === titleKey(title)) {
          await trx.updateTable('subconscious_tasks').set({ title, origin_order: position, updated_at: now }).where('id', '=', id).execute();
          result.renamed++;
        } else if (row.origin_order === null || Number(row.origin_order) !== position) {
          await trx.updateTable('subconscious_tasks').set({ origin_order: position }).where('id', '=', id).execute();
        }
      }
      // Chunked: SQLite caps bound parameters per statement.
      for (let i = 0; i < fresh.length; i += 50) {
        await trx
          .insertInto('subconscious_tasks')
          .values(fresh.slice(i, i + 50))
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      }
      result.added = fresh.length;
    });
    return result;
  }

  /**
   * Remember what its "nothing new" was decided on (`fingerprint`, at `at`), or forget it (null):
   * any other decision means the next tick must look at it again.
   */
  async setNoop(db: Db, taskId: string, fingerprint: string | null, at: number | null): Promise<void> {
    await db.updateTable('subconscious_tasks').set({ noop_fingerprint: fingerprint, noop_at: at }).where('id', '=', taskId).execute();
  }

  /** Record a run at `ranAt` and move the schedule on (`once` completes, `cron` to its next time). */
  async advance(db: Db, taskId: string, ranAt: number): Promise<void> {
    const row = await db.selectFrom('subconscious_tasks').select(['recurrence']).where('id', '=', taskId).executeTakeFirst();
    if (!row) return; // removed while it ran: nothing to advance
    const next = advanceSchedule(row.recurrence, ranAt, this.timezone);
    await db
      .updateTable('subconscious_tasks')
      .set({ last_run_at: ranAt, next_run_at: next.next_run_at, completed: next.completed ? 1 : 0, updated_at: this.clock.now() })
      .where('id', '=', taskId)
      .execute();
  }

  /** Record an evaluation without moving the schedule (a failed `once` execution stays due). */
  async touch(db: Db, taskId: string, ranAt: number): Promise<void> {
    await db.updateTable('subconscious_tasks').set({ last_run_at: ranAt, updated_at: this.clock.now() }).where('id', '=', taskId).execute();
  }
}

function newRow(v: {
  id: string;
  title: string;
  source: TaskSource;
  origin: TaskOrigin;
  recurrence: string;
  needs_tools: boolean;
  now: number;
  next: number | null;
}): Row {
  return {
    id: v.id,
    title: v.title,
    source: v.source,
    origin: v.origin,
    origin_present: 1,
    recurrence: v.recurrence,
    enabled: 1,
    needs_tools: v.needs_tools ? 1 : 0,
    last_run_at: null,
    next_run_at: v.next,
    completed: 0,
    created_at: v.now,
    updated_at: v.now,
    origin_order: null,
    user_disabled: 0,
    write_choice: 'none',
    dedupe_key: null,
    noop_fingerprint: null,
    noop_at: null,
    removed_at: null,
  };
}

function duplicateError(same: { id: string; title: string; enabled: number }): SubconsciousError {
  const on = Number(same.enabled) === 1;
  // The task's title, not its id: the page shows this message (the id stays in `details`).
  return new SubconsciousError('conflict', `A task with this wording already exists: "${same.title}"${on ? '' : ' (switched off)'}.`, {
    hint: on ? 'Change its schedule or wording instead of adding it again.' : 'Switch it on instead of adding it again.',
    details: { field: 'title', existing_id: same.id },
  });
}

/** A unique index refused the write (SQLite or Postgres). */
function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === '23505' || (typeof e?.message === 'string' && /UNIQUE constraint failed/.test(e.message));
}
