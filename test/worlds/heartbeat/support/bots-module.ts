/**
 * A stand-in for the bots module (the bots-ui branch wires the real one): the bots host behind the
 * module front door, providing `BotsHeartbeatKey`, so an app can be built with
 * `[...productModules, botsTestModule, heartbeatModule]` before the real module lands.
 */
import { z } from 'zod';
import { AgentRunnerKey, ApprovalStoreKey } from '../../../../src/agent/index.js';
import { BotsHeartbeatKey, botsMigrations, createBotsHost, parseBotsConfig, type BotsTables } from '../../../../src/bots/index.js';
import { PresenceKey, provide } from '../../../../src/core/index.js';
import { defineModule } from '../../../../src/engine/index.js';
import { botsContract } from '../../../../src/protocol/bots.js';

const BOTS_TABLES = [
  'bots_bots',
  'bots_threads',
  'bots_thread_members',
  'bots_messages',
  'bots_tasks',
  'bots_approvals',
  'bots_routines',
  'bots_thread_activity',
  'bots_notes',
] as const;

export const botsTestModule = defineModule<z.ZodObject, BotsTables, typeof botsContract>({
  kind: 'bots',
  description: 'The bots host (a test stand-in for the real module).',
  config: z.strictObject({ next_job_delay_ms: z.number().int().min(0).max(5000).default(250) }),
  tables: { names: BOTS_TABLES, migrations: botsMigrations },
  contract: botsContract,
  needs: [AgentRunnerKey, ApprovalStoreKey],
  uses: [PresenceKey],
  provides: [BotsHeartbeatKey],
  create(ctx) {
    const presence = ctx.services.find(PresenceKey);
    const host = createBotsHost({
      db: ctx.db,
      clock: ctx.clock,
      ids: ctx.ids,
      runner: ctx.services.get(AgentRunnerKey),
      approvals: ctx.services.get(ApprovalStoreKey),
      emit: (type, data) => ctx.events.emit(type, data),
      log: ctx.log,
      presence: () => presence?.attached ?? false,
      config: parseBotsConfig(ctx.config),
    });
    return {
      handlers: host.rpc,
      provides: [provide(BotsHeartbeatKey, host.heartbeat)],
      start: async () => void (await host.start()),
      close: () => host.stop(),
    };
  },
});
