/**
 * External agent runtimes as a module (issue 18 §6): a host (no world, no tick of its own) with
 * its `[worlds.runtimes]` section, its tables, the `runtime.*` contract, and what it provides —
 * `ExternalHeartbeatKey`, the heartbeat's API over the bots of those runtimes, which the heartbeat
 * module routes to beside the built-in bots host. It comes before the heartbeat in the list.
 */
import { readFileSync } from 'node:fs';
import { ExternalHeartbeatKey } from '../bots/index.js';
import { ExternalBotStatusKey, provide } from '../core/index.js';
import { defineModule } from '../engine/index.js';
import { runtimesContract } from '../protocol/runtimes.js';
import { runtimesConfig } from './config.js';
import { createRuntimesHost } from './host.js';
import { RUNTIMES_TABLES, runtimesMigrations } from './migrations.js';
import type { RuntimesTables } from './tables.js';

const { version: VERSION } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export const runtimesModule = defineModule<typeof runtimesConfig, RuntimesTables, typeof runtimesContract>({
  kind: 'runtimes',
  host: true,
  description:
    'Your own agent runtimes on the heartbeat: their bots registered and reported over the wire, resumes and check-ins delivered by signed webhook or long-poll.',
  config: runtimesConfig,
  tables: { names: RUNTIMES_TABLES, migrations: runtimesMigrations },
  contract: runtimesContract,
  provides: [ExternalHeartbeatKey, ExternalBotStatusKey],
  create(ctx) {
    const host = createRuntimesHost({
      db: ctx.db,
      clock: ctx.clock,
      ids: ctx.ids,
      log: ctx.log,
      emit: (type, data) => ctx.events.emit(type, data),
      config: ctx.config,
      userAgent: `subconscious-engine/${VERSION}`,
    });
    return {
      handlers: host.rpc,
      provides: [provide(ExternalHeartbeatKey, host.heartbeat), provide(ExternalBotStatusKey, { statusCounts: () => host.core.statusCounts() })],
      start: () => host.start(),
      close: () => host.stop(),
    };
  },
});
