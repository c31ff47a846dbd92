/**
 * The bounded store of recent events (`event_log`, migration 0008): append, read after an id,
 * prune. Postgres appends hold a transaction-level advisory lock, so ids are committed in the
 * order they are given and a reader that has seen id N has seen every id below it: "read after
 * my cursor" never skips a row that commits late. The NOTIFY (of the last id only) is sent in
 * the same transaction, so it is heard after the rows are visible.
 */
import { sql, type Generated, type Kysely } from 'kysely';
import type { StoredEvent } from '../core/events.js';
import type { DialectName } from './open.js';

const APPEND_LOCK = 7_224_017; // pg advisory lock id for event appends
/** Defaults: the newest 10,000 events, at most a day old. */
export const EVENT_LOG_KEEP = 10_000;
export const EVENT_LOG_MAX_AGE_MS = 24 * 3_600_000;

export interface EventLogTables {
  event_log: { id: Generated<number>; type: string; payload: string; at: number };
}

export interface EventLogOptions {
  db: Kysely<EventLogTables>;
  dialect: DialectName;
  /** Postgres: the channel appends notify on (`Notifications.channel`). */
  channel?: string | undefined;
  keep?: number;
  maxAgeMs?: number;
}

export interface EventLogBounds {
  /** Oldest id kept, or null when the log is empty. */
  oldest: number | null;
  newest: number | null;
}

export class EventLog {
  private readonly db: Kysely<EventLogTables>;
  readonly keep: number;
  readonly maxAgeMs: number;

  constructor(private readonly opts: EventLogOptions) {
    this.db = opts.db;
    this.keep = opts.keep ?? EVENT_LOG_KEEP;
    this.maxAgeMs = opts.maxAgeMs ?? EVENT_LOG_MAX_AGE_MS;
  }

  /** Store events in order, in one transaction; returns the last id given (0 for none). */
  async append(events: ReadonlyArray<Omit<StoredEvent, 'id'>>): Promise<number> {
    if (events.length === 0) return 0;
    const rows = events.map((e) => ({ type: e.type, payload: JSON.stringify(e.data), at: Math.round(e.at) }));
    return this.db.transaction().execute(async (trx) => {
      if (this.opts.dialect === 'postgres') await sql`SELECT pg_advisory_xact_lock(${APPEND_LOCK})`.execute(trx);
      const ids = await trx.insertInto('event_log').values(rows).returning('id').execute();
      const last = Math.max(...ids.map((r) => Number(r.id)));
      if (this.opts.channel) await sql`SELECT pg_notify(${this.opts.channel}, ${String(last)})`.execute(trx);
      return last;
    });
  }

  /** Events with id > `after`, oldest first, at most `limit`. */
  async after(after: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.db.selectFrom('event_log').selectAll().where('id', '>', after).orderBy('id').limit(limit).execute();
    return rows.map((r) => ({ id: Number(r.id), type: r.type, at: Number(r.at), data: JSON.parse(r.payload) as Record<string, unknown> }));
  }

  async bounds(): Promise<EventLogBounds> {
    const row = await this.db
      .selectFrom('event_log')
      .select([sql<number | null>`min(id)`.as('oldest'), sql<number | null>`max(id)`.as('newest')])
      .executeTakeFirst();
    return { oldest: row?.oldest == null ? null : Number(row.oldest), newest: row?.newest == null ? null : Number(row.newest) };
  }

  /**
   * Drop what is beyond the count or older than the age, never the newest row (it tells a
   * returning client how far the log went). Two indexed range deletes; returns rows removed.
   */
  async prune(now: number): Promise<number> {
    const { newest } = await this.bounds();
    if (newest === null) return 0;
    const byCount = await this.db
      .deleteFrom('event_log')
      .where('id', '<=', newest - this.keep)
      .executeTakeFirst();
    const byAge = await this.db
      .deleteFrom('event_log')
      .where('at', '<', now - this.maxAgeMs)
      .where('id', '<', newest)
      .executeTakeFirst();
    return Number(byCount.numDeletedRows) + Number(byAge.numDeletedRows);
  }
}
