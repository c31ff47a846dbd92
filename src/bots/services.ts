/** The bots host, by key: the bots module provides it; the heartbeat world and the memory world use narrow APIs of it. */
import { serviceKey } from '../core/services.js';
import type { BotsHeartbeatApi } from './index.js';
import type { ExternalHeartbeatHost } from './route.js';

export const BotsHeartbeatKey = serviceKey<BotsHeartbeatApi>('bots.heartbeat');

/**
 * The bots of external agent runtimes (issue 18 §6), on the same API as the built-in host plus
 * which ids are theirs: the heartbeat routes to it (`routeHeartbeatHosts`) when a module provides it.
 */
export const ExternalHeartbeatKey = serviceKey<ExternalHeartbeatHost>('bots.external_heartbeat');

/**
 * The memory world's delegation hand-off (seed 4): the bots, and a new task for one of them —
 * called only when a person accepted the delegation (so it is the person's message in the bot's
 * direct thread).
 */
export interface BotsDelegationApi {
  bots(): Promise<{ id: string; name: string; label: string; description: string }[]>;
  delegate(botId: string, text: string): Promise<{ task_id: string | null; thread_id: string }>;
}

export const BotsDelegationKey = serviceKey<BotsDelegationApi>('bots.delegation');
