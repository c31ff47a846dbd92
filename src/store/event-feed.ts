/**
 * One cluster, one view (issue 17 §3): every event this process emits on its bus is written to
 * the bounded store (`event_log`), and every event any process wrote to the same database is
 * delivered, in id order and once, to this process's `/events` connections.
 *
 * - Writes happen only when an event is emitted (a quiet tick that emits nothing writes nothing);
 *   events emitted in the same turn go out in one transaction.
 * - Postgres: the append notifies the new last id (LISTEN/NOTIFY, store/notify.ts); every
 *   worker then reads the rows after its cursor, so a payload of any size travels as a row.
 *   SQLite (one process): the append itself wakes the reader.
 * - A cursor read ("rows after the last one delivered") is the only way events arrive, so a
 *   missed or doubled notification, or a listener reconnecting, never loses or repeats one.
 */
import type { EventHistory, StoredEvent, Subscribable } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import { EventLog, type EventLogTables } from './event-log.js';
import type { Store } from './open.js';
import { tablesView } from './view.js';

const PAGE = 500;
/** Prune after this many appended events (and at start): two indexed deletes, now and then. */
const PRUNE_EVERY = 256;
const CHANNEL = 'subconscious_events';

export interface EventFeedOptions {
  store: Pick<Store, 'db' | 'dialect' | 'notifications'>;
  /** This process's bus: what it emits is stored. */
  bus: Subscribable;
  now: () => number;
  log?: Logger | undefined;
  keep?: number;
  maxAgeMs?: number;
}

export class EventFeed implements EventHistory {
  private readonly events: EventLog;
  private cursor = 0;
  private readonly listeners = new Set<(event: StoredEvent) => void>();
  private queued: Array<Omit<StoredEvent, 'id'>> = [];
  private writing: Promise<void> = Promise.resolve();
  private writeScheduled = false;
  private pulling: Promise<void> | null = null;
  private pullAgain = false;
  private sincePrune = 0;
  private closed = false;
  private offBus: (() => void) | null = null;
  private unlisten: (() => Promise<void>) | null = null;

  private constructor(private readonly opts: EventFeedOptions) {
    const notifications = opts.store.notifications;
    this.events = new EventLog({
      db: tablesView<EventLogTables>(opts.store.db),
      dialect: opts.store.dialect,
      channel: notifications?.channel(CHANNEL),
      ...(opts.keep !== undefined ? { keep: opts.keep } : {}),
      ...(opts.maxAgeMs !== undefined ? { maxAgeMs: opts.maxAgeMs } : {}),
    });
  }

  /** Start following the store from its newest event, and storing what `bus` emits. */
  static async open(opts: EventFeedOptions): Promise<EventFeed> {
    const feed = new EventFeed(opts);
    await feed.events.prune(opts.now());
    feed.cursor = (await feed.events.bounds()).newest ?? 0;
    const notifications = opts.store.notifications;
    if (notifications) {
      const wake = () => void feed.pull();
      feed.unlisten = await notifications.listen(notifications.channel(CHANNEL), { onNotify: wake, onReconnect: wake });
    }
    feed.offBus = opts.bus.subscribe((e) => feed.enqueue(e));
    return feed;
  }

  get head(): number {
    return this.cursor;
  }

  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async replay(after: number, limit: number): Promise<{ events: StoredEvent[]; oldest: number | null; newest: number | null }> {
    const [events, bounds] = await Promise.all([this.events.after(after, limit), this.events.bounds()]);
    return { events, ...bounds };
  }

  /** Everything emitted so far is stored and delivered (tests, and a clean stop). */
  async settled(): Promise<void> {
    await this.writing;
    await this.pull();
  }

  /** Store what is still queued, then stop listening. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.offBus?.();
    await this.settled().catch(() => undefined);
    this.closed = true;
    await this.unlisten?.();
    this.listeners.clear();
  }

  private enqueue(e: { type: string; at: number; data: Record<string, unknown> }): void {
    if (this.closed) return;
    this.queued.push({ type: e.type, at: e.at, data: e.data });
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    // After this turn, so a burst (a streamed reply's deltas) is one transaction.
    this.writing = this.writing
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        this.writeScheduled = false;
        return this.write();
      });
  }

  private async write(): Promise<void> {
    while (this.queued.length) {
      const batch = this.queued.splice(0, PAGE);
      try {
        await this.events.append(batch);
      } catch (err) {
        this.opts.log?.error({ err, events: batch.length }, 'could not store events: /events clients will not see them');
        continue;
      }
      this.sincePrune += batch.length;
      if (this.sincePrune >= PRUNE_EVERY) {
        this.sincePrune = 0;
        await this.events.prune(this.opts.now()).catch((err: unknown) => this.opts.log?.warn({ err }, 'could not prune the event log'));
      }
    }
    await this.pull();
  }

  /** Deliver every stored event after the cursor; one pull at a time, one more if woken meanwhile. */
  private pull(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.pulling) {
      this.pullAgain = true;
      return this.pulling;
    }
    const run = async () => {
      do {
        this.pullAgain = false;
        let page: StoredEvent[];
        do {
          page = await this.events.after(this.cursor, PAGE);
          for (const event of page) {
            this.cursor = event.id;
            for (const listener of [...this.listeners]) {
              try {
                listener(event);
              } catch {
                // a broken subscriber never stops delivery to the others
              }
            }
          }
        } while (page.length === PAGE && !this.closed);
      } while (this.pullAgain && !this.closed);
    };
    this.pulling = run()
      .catch((err: unknown) => this.opts.log?.warn({ err }, 'could not read the event log'))
      .finally(() => {
        this.pulling = null;
      });
    return this.pulling;
  }
}
