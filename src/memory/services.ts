/**
 * The memory layer's services, by key: the memory module provides them; conscious, memory, tasks
 * and bots use them.
 *
 *   const memory = services.get(MemoryStoreKey);           // documents, recall, head(), diffs
 *   await services.find(MemorySyncKey)?.ready(ctx.signal);  // in observe: the sources' first sync is done
 */
import { serviceKey } from '../core/services.js';
import type { MemoryNotification } from '../protocol/memory.js';
import type { MemoryStore } from './store.js';

export const MemoryStoreKey = serviceKey<MemoryStore>('memory.store');

/**
 * The configured sources' first sync. A world that reads memory awaits `ready()` at the top of
 * its observe: in the daemon the memory module's `start()` began that sync; a one-shot
 * `subconscious tick` (which runs no module's `start()`) begins it there, so a tick sees the
 * folders as they are. Once done it is a resolved promise. It never rejects for a failed sync
 * (that is logged and shown on the namespace); with a signal it stops waiting when it aborts.
 */
export interface MemorySync {
  ready(signal?: AbortSignal): Promise<void>;
}

export const MemorySyncKey = serviceKey<MemorySync>('memory.sync');

/**
 * The memory world's `notify_user` notifications, for a host that shows them (the bots host puts
 * them in its `subconscious:user` thread). The memory module provides it; it never depends on the
 * reader, so a reader polls `after()` from where it left off and `onNotification` only wakes it.
 */
export interface MemoryNotificationFeed {
  /** Notifications committed after the one with id `afterId` (all when null or unknown), oldest first, at most `limit`. */
  after(afterId: string | null, limit: number): Promise<MemoryNotification[]>;
  /** Called after each notification committed in this process; returns the unsubscribe. */
  onNotification(listener: () => void): () => void;
}

export const MemoryNotificationsKey = serviceKey<MemoryNotificationFeed>('memory.notifications');
