/**
 * The conscious world (seed 3) as a module: its `[worlds.conscious]` section, its tables
 * (actionables and runs), its contract (`conscious.*`), its `simulate` hooks and the Actionables
 * tab. It needs the memory store (`MemoryStoreKey`, from the memory module, listed before it) and
 * waits for the sources' first sync (`MemorySyncKey`) at the top of each observe, so a one-shot
 * `subconscious tick` digests the folders as they are. Its first run waits
 * `initial_delay_seconds` (60) after the daemon starts, then every `interval_minutes` (5) — and
 * a run whose memory did not change is quiet (no model call). `conscious.run` is Run now.
 */
import { defineModule } from '../../engine/index.js';
import { MemoryStoreKey, MemorySyncKey } from '../../memory/index.js';
import { consciousContract, type ConsciousEvents } from '../../protocol/conscious.js';
import { consciousConfigSchema } from './config.js';
import { CONSCIOUS_TABLES, consciousMigrations } from './migrations.js';
import { consciousRpcHandlers } from './rpc.js';
import { consciousSimulation } from './simulate.js';
import type { ConsciousTables } from './tables.js';
import { createConsciousWorld } from './world.js';

export const consciousModule = defineModule<typeof consciousConfigSchema, ConsciousTables, typeof consciousContract>({
  kind: 'conscious',
  description: 'Digests what changed in your memory into actionable items, grouped by priority; quiet while memory is unchanged.',
  config: consciousConfigSchema,
  tables: { names: CONSCIOUS_TABLES, migrations: consciousMigrations },
  contract: consciousContract,
  needs: [MemoryStoreKey],
  uses: [MemorySyncKey],
  tab: 'actionables',
  // The world reads its settings object at each use.
  live: ['interval_minutes', 'context_budget_tokens'],
  simulate: consciousSimulation,
  create(ctx) {
    const sync = ctx.services.find(MemorySyncKey);
    const world = createConsciousWorld({
      db: ctx.db,
      memory: ctx.services.get(MemoryStoreKey),
      settings: ctx.config,
      workspace: ctx.workspace,
      clock: ctx.clock,
      emit: <K extends keyof ConsciousEvents>(type: K, data: ConsciousEvents[K]) => ctx.events.emit(type, data),
      log: ctx.log,
      ...(sync ? { ready: (signal: AbortSignal) => sync.ready(signal) } : {}),
    });
    return { world, handlers: consciousRpcHandlers(world.service, ctx.trigger, ctx.log) };
  },
});
