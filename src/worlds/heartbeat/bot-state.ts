/**
 * Per-bot heartbeat rows: settings, the schedule (`next_heartbeat_at`, NULL while nothing is
 * unfinished), backoff, cooldown, the last verdict and the why. Every write bumps `version`.
 *
 * Two kinds of writers meet here: the tick (it read a row at triage and writes the next check in
 * commit) and markers (a settle, a follow-up, a restart, a person: "look at this bot by then").
 * The tick's schedule write is compare-and-set on the version it read; when a marker came in
 * between, the marker's time stands (the earlier of the two wins), so no wake-up is ever lost.
 */
import { sql, type Kysely, type Updateable } from 'kysely';
import type { Clock } from '../../core/index.js';
import { perDatabase, precompile } from '../../store/index.js';
import { BOT_SETTING_KEYS } from '../../protocol/heartbeat.js';
import type { HeartbeatBotsTable, HeartbeatTables } from './tables.js';
import type { BotRow } from './settings.js';

export type BotPatch = Omit<Updateable<HeartbeatBotsTable>, 'bot_id' | 'version' | 'created_at' | 'updated_at'>;

/**
 * What triage reads of a due bot: its settings, its schedule's guards and its version — not the
 * why columns it writes (the last verdict, reason, error, log keys: half the row), which a pass over
 * 1,000 due bots would otherwise decode and drop.
 */
export const DUE_COLUMNS = [
  'bot_id',
  'thread_id',
  'version',
  'next_heartbeat_at',
  'backoff_until',
  'cooldown_until',
  'forced_at',
  'stopped_at',
  'enabled',
  ...BOT_SETTING_KEYS,
] as const satisfies readonly (keyof HeartbeatBotsTable)[];
export type DueRow = Pick<BotRow, (typeof DUE_COLUMNS)[number]>;

/** Every tick reads the due bots: compiled once per database. */
const dueQuery = perDatabase((db: Kysely<HeartbeatTables>) =>
  precompile(db, 2, (now: number, limit: number) =>
    db
      .selectFrom('heartbeat_bots')
      .select([...DUE_COLUMNS])
      .where('next_heartbeat_at', '<=', now)
      .orderBy('next_heartbeat_at')
      .limit(limit),
  ),
);

/** The heartbeat's probe: is any bot due (one index seek, no row read beyond the first)? */
const anyDueQuery = perDatabase((db: Kysely<HeartbeatTables>) =>
  precompile(db, 1, (now: number) => db.selectFrom('heartbeat_bots').select('bot_id').where('next_heartbeat_at', '<=', now).limit(1)),
);

export class BotStateStore {
  constructor(private readonly d: { db: Kysely<HeartbeatTables>; clock: Clock }) {}

  private get db() {
    return this.d.db;
  }

  async get(botId: string): Promise<BotRow | undefined> {
    return this.db.selectFrom('heartbeat_bots').selectAll().where('bot_id', '=', botId).executeTakeFirst();
  }

  async getMany(botIds: readonly string[]): Promise<Map<string, BotRow>> {
    if (botIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('heartbeat_bots')
      .selectAll()
      .where('bot_id', 'in', [...botIds])
      .execute();
    return new Map(rows.map((r) => [r.bot_id, r]));
  }

  /** The bot's row, created with the defaults when it has none. */
  async ensure(botId: string, threadId?: string | null): Promise<BotRow> {
    const now = this.d.clock.now();
    await this.db
      .insertInto('heartbeat_bots')
      .values(defaultBotRow(botId, threadId ?? null, now))
      .onConflict((oc) => oc.column('bot_id').doNothing())
      .execute();
    const row = (await this.get(botId))!;
    if (threadId && row.thread_id !== threadId) {
      return (await this.update(botId, { thread_id: threadId })) ?? row;
    }
    return row;
  }

  /** Bots due now (indexed on `next_heartbeat_at`), earliest first. */
  async due(now: number, limit: number): Promise<DueRow[]> {
    return (await dueQuery(this.db)(now, limit)).rows;
  }

  /** Whether any bot is due now (what `due` would find, without reading the rows). */
  async anyDue(now: number): Promise<boolean> {
    return (await anyDueQuery(this.db)(now)).rows.length > 0;
  }

  /** Bots that set `follow_ups_enabled` for themselves (indexed): the persona lines' exceptions. */
  async followUpOverrides(): Promise<Map<string, boolean>> {
    const rows = await this.db
      .selectFrom('heartbeat_bots')
      .select(['bot_id', 'follow_ups_enabled', 'enabled'])
      // `in (0, 1)`, not `is not null`: SQLite's planner scans the whole table for the latter
      // (0.25 ms at 11,000 heartbeat rows, every 5 minutes), and seeks the index for the former.
      .where('follow_ups_enabled', 'in', [0, 1])
      .execute();
    return new Map(rows.map((r) => [r.bot_id, r.follow_ups_enabled === 1]));
  }

  /** Bots in `state` (indexed): the resumes in flight, the bots switched off. */
  async inState(state: BotRow['state'], limit = 1000): Promise<BotRow[]> {
    return this.db.selectFrom('heartbeat_bots').selectAll().where('state', '=', state).limit(limit).execute();
  }

  async countInState(state: BotRow['state']): Promise<number> {
    const row = await this.db
      .selectFrom('heartbeat_bots')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('state', '=', state)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Switched-off bots (indexed): no persona lines for them. */
  async disabled(): Promise<string[]> {
    const rows = await this.db.selectFrom('heartbeat_bots').select('bot_id').where('enabled', '=', 0).execute();
    return rows.map((r) => r.bot_id);
  }

  /** Unconditional write (bumps the version); undefined when the bot has no row. */
  async update(botId: string, patch: BotPatch): Promise<BotRow | undefined> {
    const res = await this.db
      .updateTable('heartbeat_bots')
      .set((eb) => ({ ...patch, version: eb('version', '+', 1), updated_at: this.d.clock.now() }))
      .where('bot_id', '=', botId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1 ? this.get(botId) : undefined;
  }

  /**
   * A marker: check this bot by `at` (or sooner if already due sooner), never before its
   * pulse-error backoff ends. A switched-off bot stays asleep. Creates the row when missing.
   */
  async mark(botId: string, at: number, threadId?: string | null): Promise<void> {
    await this.ensure(botId, threadId);
    const at_ = Math.round(at);
    const target = sql<number>`(CASE WHEN backoff_until IS NOT NULL AND backoff_until > ${at_} THEN backoff_until ELSE ${at_} END)`;
    await this.db
      .updateTable('heartbeat_bots')
      .set((eb) => ({
        next_heartbeat_at: sql<number>`(CASE WHEN next_heartbeat_at IS NULL OR next_heartbeat_at > ${target} THEN ${target} ELSE next_heartbeat_at END)`,
        version: eb('version', '+', 1),
        updated_at: this.d.clock.now(),
      }))
      .where('bot_id', '=', botId)
      .where('enabled', '=', 1)
      .execute();
  }

  /**
   * The tick's write: `patch` with the next check, compare-and-set on the version it read. When
   * the row moved on meanwhile (a marker, a person), the rest of the patch is written and the next
   * check becomes the earlier of the two — a marker's wake-up is never lost.
   */
  async schedule(botId: string, version: number, next: number | null, patch: BotPatch = {}): Promise<BotRow | undefined> {
    const now = this.d.clock.now();
    const res = await this.db
      .updateTable('heartbeat_bots')
      .set((eb) => ({ ...patch, next_heartbeat_at: next === null ? null : Math.round(next), version: eb('version', '+', 1), updated_at: now }))
      .where('bot_id', '=', botId)
      .where('version', '=', version)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) return this.get(botId);
    const row = await this.update(botId, patch);
    if (row && next !== null) await this.mark(botId, next);
    return this.get(botId);
  }

  async remove(botId: string): Promise<void> {
    await this.db.deleteFrom('heartbeat_bots').where('bot_id', '=', botId).execute();
  }
}

/** A bot's heartbeat row with every setting at its default (null: the config's value) and nothing run yet. */
export function defaultBotRow(botId: string, threadId: string | null, now: number): BotRow {
  return {
    bot_id: botId,
    thread_id: threadId,
    enabled: 1,
    interval_seconds: null,
    quiet_hours: null,
    timezone: null,
    model: null,
    follow_ups_enabled: null,
    auto_resume_on_restart: null,
    max_pulses_per_day: null,
    max_resumes_per_day: null,
    max_task_attempts: null,
    next_heartbeat_at: null,
    current_interval_ms: null,
    backoff_until: null,
    cooldown_until: null,
    consecutive_errors: 0,
    state: 'idle',
    last_tick_at: null,
    last_pulse_at: null,
    last_verdict: null,
    last_reason: '',
    last_outcome: null,
    last_error: null,
    last_resume_at: null,
    last_resume_task_id: null,
    disabled_reason: null,
    last_log_id: null,
    last_log_key: null,
    log_seq: 0,
    forced_at: null,
    stopped_at: null,
    version: 1,
    created_at: now,
    updated_at: now,
  };
}
