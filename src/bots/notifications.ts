/**
 * The memory world's `notify_user` notifications, delivered into the host's Subconscious thread
 * (`SUBCONSCIOUS_THREAD_ID`, kind `system`, created on the first one) as system messages.
 *
 * The memory module cannot depend on this host (the host already uses its store), so this reads
 * its feed by cursor: each message's id is `memory-notification:<notification id>`, the thread's
 * newest message is where the next pass starts, and `addMessageOnce` refuses an id twice — a
 * restart, an overlap or two processes never duplicate one. Passes run one at a time.
 */
import type { Logger } from '../core/index.js';
import type { MemoryNotificationFeed } from '../memory/index.js';
import { SUBCONSCIOUS_THREAD_ID } from '../protocol/bots.js';
import type { MemoryNotification } from '../protocol/memory.js';
import type { BotsEmit } from './events.js';
import type { ThreadStore } from './thread-store.js';

const ID_PREFIX = 'memory-notification:';
const BATCH = 50;

export interface NotificationDeliveryDeps {
  threads: ThreadStore;
  emit: BotsEmit;
  log: Logger;
  /** The memory module's feed, when there is one (asked at each pass: it may be absent). */
  feed: () => MemoryNotificationFeed | undefined;
}

export class NotificationDelivery {
  private running: Promise<number> | null = null;
  private again = false;

  constructor(private readonly d: NotificationDeliveryDeps) {}

  /** Deliver what is new; a call during a pass runs one more pass after it. Resolves to the messages written. */
  deliver(): Promise<number> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      let written = 0;
      try {
        do {
          this.again = false;
          written += await this.pass();
        } while (this.again);
      } catch (err) {
        this.d.log.warn({ err: String(err) }, 'memory notifications were not delivered to the Subconscious thread; the next pass retries');
      } finally {
        this.running = null;
      }
      return written;
    })();
    return this.running;
  }

  /** Resolves when no pass is running (shutdown). */
  async idle(): Promise<void> {
    await this.running;
  }

  private async pass(): Promise<number> {
    const feed = this.d.feed();
    if (!feed) return 0;
    let written = 0;
    let cursor = await this.cursor();
    for (;;) {
      const batch = await feed.after(cursor, BATCH);
      for (const n of batch) if (await this.deliverOne(n)) written++;
      if (batch.length < BATCH) return written;
      cursor = batch[batch.length - 1]!.id;
    }
  }

  /** The notification id of the thread's newest message (null: none yet). */
  private async cursor(): Promise<string | null> {
    const last = (await this.d.threads.lastMessages([SUBCONSCIOUS_THREAD_ID])).get(SUBCONSCIOUS_THREAD_ID);
    return last?.id.startsWith(ID_PREFIX) ? last.id.slice(ID_PREFIX.length) : null;
  }

  private async deliverOne(n: MemoryNotification): Promise<boolean> {
    const { thread, created } = await this.d.threads.system(SUBCONSCIOUS_THREAD_ID, 'Subconscious');
    if (created) this.d.emit('bots.thread_changed', { thread_id: thread.id, id: thread.id, thread });
    const text = n.priority === 'normal' ? n.message : `${n.priority === 'critical' ? 'Critical' : 'Important'}: ${n.message}`;
    const message = await this.d.threads.addMessageOnce(ID_PREFIX + n.id, { threadId: thread.id, role: 'system', text, status: 'done' });
    if (!message) return false;
    this.d.emit('bots.message_changed', { message });
    return true;
  }
}
