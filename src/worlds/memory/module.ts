/**
 * The memory module (issue 13): it owns the memory store and the configured sources, and runs
 * the memory world (seed 4's memory profile). Its `[worlds.memory]` section holds the world's
 * settings and the sources (`[[worlds.memory.sources]]`); its tables are the store's and the
 * world's outputs; its contract is `memory.*`; its tab is Memory.
 *
 * It provides `MemoryStoreKey` (the store: conscious, tasks and bots read and write it),
 * `MemorySyncKey` (the sources' first sync) and `MemoryNotificationsKey` (its notifications,
 * which the bots host, when enabled, delivers into its `subconscious:user` thread). When do the folders sync?
 *
 * - The daemon: `start()` registers the namespaces and begins the first sync, the watchers and
 *   the periodic syncs; `close()` stops them (and waits for a sync in flight).
 * - A one-shot `subconscious tick` runs no module's `start()`: each world that reads memory
 *   awaits `MemorySync.ready()` at the top of its observe (this world's and the conscious
 *   world's do), and the first to ask begins the sync. So the tick reads the folders first.
 *
 * `[worlds.memory] enabled = false` stops the memory world's reviews only: the store, its RPC
 * and the sources keep running (other modules read them).
 */
import { AgentRunnerKey } from '../../agent/index.js';
import { BotsDelegationKey } from '../../bots/index.js';
import { provide } from '../../core/index.js';
import { defineModule } from '../../engine/index.js';
import { tablesView } from '../../store/index.js';
import {
  MEMORY_STORE_TABLES,
  MemoryNotificationsKey,
  MemorySources,
  MemoryStore,
  MemoryStoreKey,
  MemorySyncKey,
  memoryMigrations,
  type MemoryTables,
} from '../../memory/index.js';
import { memoryContract, type MemoryEvents } from '../../protocol/memory.js';
import { registerSourcesCommands } from './cli.js';
import { memoryWorldConfigSchema } from './config.js';
import { MEMORY_WORLD_TABLES, memoryWorldMigrations } from './migrations.js';
import { notificationFeed } from './notification-feed.js';
import { OutputStore } from './outputs.js';
import { memoryRpcHandlers } from './rpc.js';
import { memorySimulation } from './simulate.js';
import type { MemoryWorldTables } from './tables.js';
import { createMemoryWorld } from './world.js';

export type MemoryModuleTables = MemoryTables & MemoryWorldTables;

export const memoryModule = defineModule<typeof memoryWorldConfigSchema, MemoryModuleTables, typeof memoryContract>({
  kind: 'memory',
  description:
    'Keeps your connected memory sources in step, and reviews what changed since its last look: it tells you what matters and keeps to-dos and goals.',
  config: memoryWorldConfigSchema,
  tables: { names: [...MEMORY_STORE_TABLES, ...MEMORY_WORLD_TABLES], migrations: { ...memoryMigrations, ...memoryWorldMigrations } },
  // Seed 4 back-compat: the memory world's keys from before state was namespaced.
  legacyStateKeys: ['last_tick_at', 'baseline_checkpoint_id'],
  contract: memoryContract,
  needs: [AgentRunnerKey],
  // The bots host comes later in the module list (it reads this module's notifications): asked at tick time.
  uses: [BotsDelegationKey],
  provides: [MemoryStoreKey, MemorySyncKey, MemoryNotificationsKey],
  tab: 'memory',
  // The world reads its settings object at each use.
  live: ['interval_minutes'],
  cli: {
    name: 'sources',
    description: 'memory sources (mail, calendars, MCP servers, folders): list, test, add, pause, resume, resync, remove, sync',
    register: (command, cli) => registerSourcesCommands(command, cli),
  },
  simulate: memorySimulation,
  create(ctx) {
    const feed = notificationFeed(new OutputStore(tablesView<MemoryWorldTables>(ctx.db)));
    const emit = <K extends keyof MemoryEvents>(type: K, data: MemoryEvents[K]) => {
      ctx.events.emit(type, data);
      // Emitted after the commit: the bots host (when there is one) copies it into its thread.
      if (type === 'memory.notification') feed.notified();
    };
    // The store's tables and the world's: one module, two narrower views of its own tables.
    const storeDb = tablesView<MemoryTables>(ctx.db);
    const store = new MemoryStore({ db: storeDb, dialect: ctx.dialect, clock: ctx.clock, ids: ctx.ids, emit, log: ctx.log });
    const sources = new MemorySources({ store, db: storeDb, clock: ctx.clock, log: ctx.log, emit, workspace: ctx.workspace, sources: ctx.config.sources });
    const ready = (signal?: AbortSignal) => sources.ready(signal);
    const world = createMemoryWorld({
      db: tablesView<MemoryWorldTables>(ctx.db),
      memory: store,
      agent: ctx.services.get(AgentRunnerKey),
      settings: ctx.config,
      clock: ctx.clock,
      ids: ctx.ids,
      emit,
      log: ctx.log,
      label: ctx.name,
      ready,
      bots: () => ctx.services.find(BotsDelegationKey),
    });
    return {
      world,
      handlers: memoryRpcHandlers(store, sources, world.service),
      provides: [provide(MemoryStoreKey, store), provide(MemorySyncKey, { ready }), provide(MemoryNotificationsKey, feed)],
      start: () => sources.start(),
      close: () => sources.stop(),
    };
  },
});
