/**
 * The memory layer's services, by key: the memory module provides both; conscious, memory, tasks
 * and bots use them.
 *
 *   const memory = services.get(MemoryStoreKey);           // documents, recall, head(), diffs
 *   await services.find(MemorySyncKey)?.ready(ctx.signal);  // in observe: the sources' first sync is done
 */
import { serviceKey } from '../core/services.js';
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
