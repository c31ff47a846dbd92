/** The conscious world's events (payload types live in its protocol contract, which the page imports). */
import type { ConsciousEvents } from '../../protocol/conscious.js';

export type { ConsciousEvents };
export type ConsciousEmit = <K extends keyof ConsciousEvents>(type: K, data: ConsciousEvents[K]) => void;
