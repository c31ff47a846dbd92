/** The memory store, by key: the memory module provides it; conscious, memory, tasks and bots use it. */
import { serviceKey } from '../core/services.js';
import type { MemoryStore } from './store.js';

export const MemoryStoreKey = serviceKey<MemoryStore>('memory.store');
