/**
 * The heartbeat's side of `subconscious simulate`: copy every bot's heartbeat state (its
 * settings, schedule, backoff) and the store-wide settings (read-only) into the scratch store,
 * beside the bots the bots host copied, so the simulated day says what these bots cost when
 * idle: a bot with nothing unfinished is never read, one that is due is triaged once and sleeps.
 */
import type { SimulateHooks } from '../../engine/index.js';
import type { heartbeatContract } from '../../protocol/heartbeat.js';
import { copyRows } from '../../store/index.js';
import { defaultBotRow } from './bot-state.js';
import type { HeartbeatConfig } from './config.js';
import type { HeartbeatTables } from './tables.js';

/** Every column of a bot's heartbeat row, as this version writes it. */
const BOT_COLUMNS = Object.keys(defaultBotRow('', null, 0));

export const heartbeatSimulation: SimulateHooks<HeartbeatConfig, HeartbeatTables, (typeof heartbeatContract)['methods']> = {
  async copy(from, to) {
    const bots = await copyRows(from, to, 'heartbeat_bots', BOT_COLUMNS);
    await copyRows(from, to, 'heartbeat_settings', ['id', 'overrides', 'updated_at']);
    return { copied: bots, what: "bots' heartbeat state" };
  },
};
