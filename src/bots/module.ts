/**
 * The bots host as a module (issue 11): no world and no tick of its own. Its `[worlds.bots]`
 * section, its tables, the `bots.*` contract, the `bots` subcommands and the Bots tab; it needs
 * the agent runner and the approval store, uses the memory store (MEMORY: notes), the
 * memory world's notifications (delivered into the Subconscious thread, `notifications.ts`) and
 * the MCP servers' list (a bot's tools) when they exist, and provides `BotsHeartbeatKey` — the
 * narrow API the heartbeat world (seed 2) drives it through.
 *
 * `start()` repairs what a previous process left (before anything else runs), then starts the
 * routine timer; `close()` stops the timer and settles running work `interrupted`.
 */
import { AgentRunnerKey, ApprovalStoreKey, SkillsKey, type SkillsHealth } from '../agent/index.js';
import { CoordinatorKey } from '../coordination/index.js';
import { BotStatusKey, provide } from '../core/index.js';
import { defineModule } from '../engine/index.js';
import { botsContract } from '../protocol/bots.js';
import { registerBotsCommands } from './cli.js';
import { botsConfigSchema } from './config.js';
import { createBotsHost } from './host.js';
import type { BotsService } from './service.js';
import { MemoryNotificationsKey, MemoryStoreKey } from '../memory/index.js';
import { BOTS_TABLES, botsMigrations } from './migrations.js';
import { BotsDelegationKey, BotsHeartbeatKey, type BotsDelegationApi } from './services.js';
import { botsSimulation } from './simulate.js';
import type { BotsTables } from './tables.js';

export const botsModule = defineModule<typeof botsConfigSchema, BotsTables, typeof botsContract>({
  kind: 'bots',
  host: true,
  description: 'AI teammates: bots with a persona and tools, direct and group threads, tasks, routines, and approvals a person answers.',
  config: botsConfigSchema,
  tables: { names: BOTS_TABLES, migrations: botsMigrations },
  contract: botsContract,
  needs: [AgentRunnerKey, ApprovalStoreKey, CoordinatorKey],
  uses: [MemoryStoreKey, MemoryNotificationsKey, SkillsKey],
  provides: [BotsHeartbeatKey, BotsDelegationKey, BotStatusKey],
  tab: 'bots',
  simulate: botsSimulation,
  cli: {
    name: 'bots',
    description: 'bots: AI teammates with threads, tasks and routines (list, create, send, stop, approve, deny)',
    register: (command, cli) =>
      registerBotsCommands(command, cli.call, {
        // The daemon's `/events` when a daemon answered, else this process's bus.
        subscribe: (listener) => cli.subscribe((event) => listener(event)),
        daemonRunning: () => cli.daemonRunning(),
        print: cli.print,
      }),
  },
  create(ctx) {
    const { services } = ctx;
    const skills = services.find(SkillsKey);
    const host = createBotsHost({
      db: ctx.db,
      ...(ctx.reads ? { reads: ctx.reads } : {}),
      clock: ctx.clock,
      ids: ctx.ids,
      log: ctx.log,
      runner: services.get(AgentRunnerKey),
      approvals: services.get(ApprovalStoreKey),
      emit: (type, data) => ctx.events.emit(type, data),
      config: { ...ctx.config, timezone: ctx.config.timezone ?? ctx.timezone },
      coordinator: services.get(CoordinatorKey),
      // Asked when needed: the memory module may come after this one in the list, or be absent.
      memoryNotes: () => services.find(MemoryStoreKey),
      // The memory world's notify_user notifications land in the Subconscious thread.
      notifications: () => services.find(MemoryNotificationsKey),
      ...(skills ? { mcpServers: () => serverNames(skills) } : {}),
    });
    return {
      handlers: host.rpc,
      provides: [
        provide(BotsHeartbeatKey, host.heartbeat),
        provide(BotsDelegationKey, delegation(host.service)),
        provide(BotStatusKey, {
          statusCounts: async () => Object.entries(await host.service.statusCounts()).map(([status, count]) => ({ host: 'builtin', status, count })),
        }),
      ],
      start: async () => {
        await host.start();
      },
      close: () => host.stop(),
    };
  },
});

/** A person's accepted delegation is their message to the bot: one new task in its direct thread. */
function delegation(service: BotsService): BotsDelegationApi {
  return {
    bots: async () => (await service.listBots()).map((b) => ({ id: b.id, name: b.name, label: b.label, description: b.description })),
    async delegate(botId, text) {
      const sent = await service.sendMessage({ bot_id: botId, text });
      return { task_id: sent.dispatched[0]?.task_id ?? null, thread_id: sent.thread_id };
    },
  };
}

async function serverNames(skills: SkillsHealth): Promise<string[]> {
  return (await skills.health()).map((s) => s.name);
}
