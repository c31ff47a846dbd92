/**
 * The heartbeat (seed 2) as a module: its `[worlds.heartbeat]` section, its tables, its contract
 * (the `bots.*` heartbeat methods and `heartbeat.*` events), and its world. It needs the bots host
 * (`BotsHeartbeatKey`, which the bots module provides) and, when the runtimes module is there, the
 * bots of external agent runtimes (`ExternalHeartbeatKey`) through the same API; the Bots tab shows it.
 *
 * Not to be confused with seed 1's `[heartbeat]` section and HEARTBEAT.md, which belong to the
 * tasks world (its legacy names).
 */
import { BotsHeartbeatKey, ExternalHeartbeatKey, routeHeartbeatHosts } from '../../bots/index.js';
import { defineModule } from '../../engine/index.js';
import { heartbeatContract } from '../../protocol/heartbeat.js';
import { heartbeatConfig } from './config.js';
import { createHeartbeat } from './heartbeat.js';
import { heartbeatMigrations } from './migrations.js';
import { heartbeatSimulation } from './simulate.js';
import { HEARTBEAT_TABLES, type HeartbeatTables } from './tables.js';

export const heartbeatModule = defineModule<typeof heartbeatConfig, HeartbeatTables, typeof heartbeatContract>({
  kind: 'heartbeat',
  description: 'Notices work a bot left unfinished (a crash, a timeout, an expired approval, a promise to follow up) and resumes it; idle bots cost nothing.',
  config: heartbeatConfig,
  tables: { names: HEARTBEAT_TABLES, migrations: heartbeatMigrations },
  contract: heartbeatContract,
  needs: [BotsHeartbeatKey],
  uses: [ExternalHeartbeatKey],
  tab: 'bots',
  simulate: heartbeatSimulation,
  create(ctx) {
    // External agent runtimes' bots (when that module is there) beside the built-in ones, one API for both.
    const external = ctx.services.find(ExternalHeartbeatKey);
    const heartbeat = createHeartbeat({
      db: ctx.db,
      host: routeHeartbeatHosts(ctx.services.get(BotsHeartbeatKey), external ? [external] : []),
      llm: ctx.llm,
      clock: ctx.clock,
      ids: ctx.ids,
      log: ctx.log,
      emit: (type, data) => ctx.events.emit(type, data),
      config: ctx.config,
      timezone: ctx.config.timezone ?? ctx.timezone,
      world: ctx.name,
      trigger: () => ctx.trigger(),
      ...(ctx.alone ? { alone: ctx.alone } : {}),
    });
    return {
      world: heartbeat.world,
      handlers: heartbeat.handlers,
      start: async () => void (await heartbeat.start()),
      close: () => heartbeat.close(),
    };
  },
});
