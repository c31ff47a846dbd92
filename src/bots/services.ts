/** The bots host, by key: the bots module provides it; the heartbeat world uses its narrow API. */
import { serviceKey } from '../core/services.js';
import type { BotsHeartbeatApi } from './index.js';

export const BotsHeartbeatKey = serviceKey<BotsHeartbeatApi>('bots.heartbeat');
