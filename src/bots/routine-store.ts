/**
 * Routines: a cron schedule and a prompt per bot (scheduled new work; seed 2 §2 keeps them apart
 * from the heartbeat, which only resumes). Schedules are croner expressions, timezone-aware;
 * `next_run_at` is always the next slot after the last time it was computed, so a machine that
 * slept through several slots runs the routine once, not once per missed slot.
 */
import { Cron } from 'croner';
import type { Kysely } from 'kysely';
import { SubconsciousError, isTimeZone, type Clock, type IdGen } from '../core/index.js';
import type { Routine } from '../protocol/bots.js';
import { toRoutine } from './rows.js';
import type { BotsTables } from './tables.js';

/** A bare cron expression (the `cron:` prefix of task recurrences is accepted and dropped). */
export function normalizeSchedule(input: string): string {
  const s = input.trim();
  return (s.startsWith('cron:') ? s.slice(5) : s).replace(/\s+/g, ' ').trim();
}

/** The next slot strictly after `after`, or null when the expression never fires again. */
export function nextSlot(schedule: string, after: number, timezone: string): number | null {
  const job = new Cron(schedule, { timezone, paused: true });
  try {
    return job.nextRun(new Date(after))?.getTime() ?? null;
  } finally {
    job.stop();
  }
}

/** Validate a schedule and zone; `invalid_params` naming the field otherwise. */
export function checkSchedule(schedule: string, timezone: string, now: number): number {
  if (!isTimeZone(timezone)) {
    throw new SubconsciousError('invalid_params', `timezone: "${timezone}" is not an IANA time zone`, {
      hint: 'Use a name such as "Europe/Paris" or "UTC".',
      details: { field: 'timezone' },
    });
  }
  let next: number | null;
  try {
    next = nextSlot(schedule, now, timezone);
  } catch (err) {
    throw new SubconsciousError(
      'invalid_params',
      `schedule: "${schedule}" is not a valid cron expression (${String((err as Error).message).replace(/^CronPattern:\s*/, '')})`,
      {
        hint: 'Five fields: minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5" (weekdays at 9:00).',
        details: { field: 'schedule' },
      },
    );
  }
  if (next === null) {
    throw new SubconsciousError('invalid_params', `schedule: "${schedule}" never fires after ${new Date(now).toISOString()}`, {
      details: { field: 'schedule' },
    });
  }
  return next;
}

export interface RoutineStoreOptions {
  db: Kysely<BotsTables>;
  clock: Clock;
  ids: IdGen;
  /** Zone for routines that name none. */
  timezone: string;
}

export class RoutineStore {
  constructor(private readonly o: RoutineStoreOptions) {}

  async list(botId?: string): Promise<Routine[]> {
    let q = this.o.db.selectFrom('bots_routines').selectAll();
    if (botId) q = q.where('bot_id', '=', botId);
    const rows = await q.orderBy('created_at').orderBy('id').execute();
    return rows.map(toRoutine);
  }

  async get(id: string): Promise<Routine | undefined> {
    const row = await this.o.db.selectFrom('bots_routines').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRoutine(row) : undefined;
  }

  async require(id: string): Promise<Routine> {
    const r = await this.get(id);
    if (!r) throw new SubconsciousError('not_found', `No routine with id "${id}".`, { hint: 'List routines with bots.routines_list.' });
    return r;
  }

  async add(input: { botId: string; schedule: string; prompt: string; timezone?: string | undefined; enabled?: boolean | undefined }): Promise<Routine> {
    const now = this.o.clock.now();
    const schedule = normalizeSchedule(input.schedule);
    const timezone = input.timezone ?? this.o.timezone;
    const next = checkSchedule(schedule, timezone, now);
    const enabled = input.enabled ?? true;
    const row = {
      id: this.o.ids(),
      bot_id: input.botId,
      schedule,
      timezone,
      prompt: input.prompt,
      enabled: enabled ? 1 : 0,
      next_run_at: enabled ? next : null,
      last_run_at: null,
      last_task_id: null,
      last_outcome: null,
      created_at: now,
      updated_at: now,
    };
    await this.o.db.insertInto('bots_routines').values(row).execute();
    return toRoutine(row);
  }

  async update(
    id: string,
    patch: { schedule?: string | undefined; prompt?: string | undefined; timezone?: string | undefined; enabled?: boolean | undefined },
  ): Promise<Routine> {
    const current = await this.require(id);
    const now = this.o.clock.now();
    const schedule = patch.schedule !== undefined ? normalizeSchedule(patch.schedule) : current.schedule;
    const timezone = patch.timezone ?? current.timezone;
    const enabled = patch.enabled ?? current.enabled;
    const next = checkSchedule(schedule, timezone, now);
    const rescheduled = patch.schedule !== undefined || patch.timezone !== undefined || (patch.enabled === true && !current.enabled);
    await this.o.db
      .updateTable('bots_routines')
      .set({
        schedule,
        timezone,
        prompt: patch.prompt ?? current.prompt,
        enabled: enabled ? 1 : 0,
        next_run_at: !enabled ? null : rescheduled || current.next_run_at === null ? next : current.next_run_at,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
    return this.require(id);
  }

  async remove(id: string): Promise<Routine> {
    const current = await this.require(id);
    await this.o.db.deleteFrom('bots_routines').where('id', '=', id).execute();
    return current;
  }

  /** Enabled routines whose slot has come (indexed on enabled, next_run_at). */
  async due(now: number, limit = 100): Promise<Routine[]> {
    const rows = await this.o.db
      .selectFrom('bots_routines')
      .selectAll()
      .where('enabled', '=', 1)
      .where('next_run_at', '<=', now)
      .orderBy('next_run_at')
      .limit(limit)
      .execute();
    return rows.map(toRoutine);
  }

  /**
   * Take the slot: move `next_run_at` past now, only if it still is `expected` (another process
   * sharing the database may have taken it). True: this caller owns the slot.
   */
  async takeSlot(r: Routine, now: number): Promise<boolean> {
    if (r.next_run_at === null) return false;
    let next: number | null;
    try {
      next = nextSlot(r.schedule, now, r.timezone);
    } catch {
      next = null; // an expression croner no longer accepts: the routine switches off
    }
    const res = await this.o.db
      .updateTable('bots_routines')
      .set({ next_run_at: next, last_run_at: now, updated_at: now, ...(next === null ? { enabled: 0 } : {}) })
      .where('id', '=', r.id)
      .where('next_run_at', '=', r.next_run_at)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async recordOutcome(id: string, outcome: { taskId?: string | null; text: string }): Promise<Routine | undefined> {
    await this.o.db
      .updateTable('bots_routines')
      .set({ last_outcome: outcome.text, ...(outcome.taskId ? { last_task_id: outcome.taskId } : {}), updated_at: this.o.clock.now() })
      .where('id', '=', id)
      .execute();
    return this.get(id);
  }
}
