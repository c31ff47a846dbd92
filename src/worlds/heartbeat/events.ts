/** The heartbeat's events (payload types live in its contract, `protocol/heartbeat.ts`). */
import type { HeartbeatEvents } from '../../protocol/heartbeat.js';

export type { HeartbeatEvents } from '../../protocol/heartbeat.js';

export type HeartbeatEmit = <K extends keyof HeartbeatEvents>(type: K, data: HeartbeatEvents[K]) => void;
