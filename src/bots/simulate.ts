/**
 * The bots host's side of `subconscious simulate`: copy the person's bots and their direct
 * threads (read-only) into the scratch store, so a simulated day runs the heartbeat over the
 * same bots and says what N idle bots cost. Messages, tasks and routines are not copied: the day
 * is the steady state, nothing left unfinished.
 */
import type { SimulateHooks } from '../engine/index.js';
import type { botsContract } from '../protocol/bots.js';
import { copyRows } from '../store/index.js';
import type { BotsConfig } from './config.js';
import type { BotsBotsTable, BotsTables, BotsThreadsTable } from './tables.js';

const BOT_COLUMNS = [
  'id',
  'name',
  'label',
  'description',
  'persona',
  'model_role',
  'model',
  'tools',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof BotsBotsTable)[];

const THREAD_COLUMNS = ['id', 'kind', 'name', 'direct_bot_id', 'next_seq', 'created_at', 'updated_at'] as const satisfies readonly (keyof BotsThreadsTable)[];

export const botsSimulation: SimulateHooks<BotsConfig, BotsTables, (typeof botsContract)['methods']> = {
  async copy(from, to) {
    const bots = await copyRows(from, to, 'bots_bots', BOT_COLUMNS);
    // Direct threads only (one per bot), started empty: the scratch day writes its own messages.
    const threads = await from.selectFrom('bots_threads').select(THREAD_COLUMNS).where('kind', '=', 'direct').execute();
    for (let i = 0; i < threads.length; i += 50)
      await to
        .insertInto('bots_threads')
        .values(threads.slice(i, i + 50).map((t) => ({ ...t, next_seq: 0 })))
        .execute();
    return { copied: bots, what: 'bots' };
  },
};
