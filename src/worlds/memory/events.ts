/** The memory module's events (payload types live in its protocol contract, which the page imports). */
import type { MemoryEvents } from '../../protocol/memory.js';

export type { MemoryEvents };
export type MemoryWorldEmit = <K extends keyof MemoryEvents>(type: K, data: MemoryEvents[K]) => void;
