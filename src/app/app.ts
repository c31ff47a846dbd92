/**
 * The composition root: config → store → llm → agent services → modules → registry, and the RPC
 * surface over them, all built from the module list (DESIGN.md "Layers"). Nothing here names a
 * world: a module's section, tables, services, world and methods come through its front door.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinatorKey, createCoordinator, type Coordinator } from '../coordination/index.js';
import {
  AgentRunner,
  AgentRunnerKey,
  ApprovalStore,
  ApprovalStoreKey,
  McpManager,
  SkillsKey,
  agentRpcHandlers,
  type AgentTables,
  type SkillsHealth,
} from '../agent/index.js';
import {
  EventBus,
  Presence,
  BotStatusKey,
  ExternalBotStatusKey,
  combineBotStatus,
  PresenceKey,
  RpcDispatcher,
  Services,
  createLogger,
  provide,
  systemClock,
  systemTimeZone,
  uuid,
  type BotStatusSource,
  type Clock,
  type IdGen,
  type Logger,
  type RpcMethod,
} from '../core/index.js';
import {
  InstanceState,
  Registry,
  engineRpcHandlers,
  type EngineDeps,
  type EngineTables,
  type ModuleInstance,
  type SharedContext,
  type WorldModule,
} from '../engine/index.js';
import { StoreCheckpointer, type GraphTables } from '../graph/index.js';
import {
  createLlm,
  usageRpcHandlers,
  type LedgerTables,
  type LlmService,
  type ModelEndpointConfig,
  type ModelRole,
  type ModelsConfig,
  type ProviderModel,
} from '../llm/index.js';
import { implement, type ProductEvents } from '../protocol/index.js';
import { EventFeed, applyMigrations, openStore, sharedSecret, tablesView, type SharedSecretsTables, type Store } from '../store/index.js';
import { loadConfig, type Config } from './config.js';
import { LiveConfig, fileOffReason } from './config-live.js';
import { ConfigWatcher } from './config-watch.js';
import { clusterStatus } from './cluster-status.js';
import { appContracts } from './contracts.js';
import { checkModules } from './module-checks.js';
import { productModules } from './modules.js';

export interface AppOptions {
  workspace: string;
  /** The modules to run (default: the product's). */
  modules?: readonly WorldModule[];
  env?: NodeJS.ProcessEnv;
  overrides?: { port?: number; host?: string };
  clock?: Clock;
  ids?: IdGen;
  log?: Logger;
  /** Run on this store instead of the configured database (`simulate`: a scratch store). The app closes it. */
  store?: Store;
  /** The model behind each role, in this process, instead of its endpoint (`simulate`: a dry-run model). */
  inProcessModel?: (role: ModelRole, endpoint: ModelEndpointConfig) => ProviderModel;
  /** What the modules see of the MCP servers instead of asking them (`simulate`: they are not started). */
  skills?: SkillsHealth;
  /** `worker`: a worker with no HTTP face (`start --worker`); shown in the workers list. Default `face`. */
  role?: 'face' | 'worker';
  /** The caller shows `config.warnings` itself (`start` prints them as notes): do not log them too. */
  showsWarnings?: boolean;
}

export interface AppServices {
  mcp: McpManager;
  approvals: ApprovalStore;
  agent: AgentRunner;
}

export interface App {
  workspace: string;
  config: Config;
  modules: readonly WorldModule[];
  store: Store;
  llm: LlmService;
  events: EventBus<ProductEvents>;
  /** Every worker's events on this store, with ids and recent history (`/events`). */
  feed: EventFeed;
  clock: Clock;
  log: Logger;
  registry: Registry;
  rpc: RpcDispatcher;
  services: AppServices;
  /** Bots by host and status for `/metrics` (absent: no module provides them). */
  botStatus: BotStatusSource | undefined;
  /** Clients following events (the daemon's `/events` counts them). */
  presence: Presence;
  /** A value every worker on this store shares (the first one stored wins): the cluster token. */
  sharedSecret(name: string, initial: string): Promise<string>;
  /** Durable jobs, tick leases and the workers list (also a service: `CoordinatorKey`). */
  coordinator: Coordinator;
  /** Hand edits of subconscious.toml, applied while the daemon runs (watched from `start`). */
  configWatcher: ConfigWatcher;
  /** The daemon's start: the modules' own start (host timers, repairs), then the scheduler and the file watcher. */
  start(): Promise<void>;
  /** Stop every tick (each stays checkpointed), close modules, tools and the store. Idempotent. */
  close(): Promise<void>;
}

const CHECKPOINT_RETENTION_MS = 7 * 24 * 3_600_000;

/** Where the built page lives (same relative place from src/ and dist/). */
export const WEB_ROOT = path.resolve(fileURLToPath(new URL('../../web/dist', import.meta.url)));

export function modelsConfig(config: Config): ModelsConfig {
  const role = (m: Config['models']['local']) => ({
    baseUrl: m.base_url,
    model: m.model,
    apiKey: m.api_key,
    timeoutMs: Math.round(m.timeout_seconds * 1000),
    maxTokens: m.max_tokens,
    structuredOutput: m.structured_output,
  });
  return { local: role(config.models.local), agent: role(config.models.agent) };
}

export async function createApp(opts: AppOptions): Promise<App> {
  const workspace = path.resolve(opts.workspace);
  const modules = opts.modules ?? productModules;
  checkModules(modules);
  const config = loadConfig({ workspace, modules, ...(opts.env ? { env: opts.env } : {}), ...(opts.overrides ? { overrides: opts.overrides } : {}) });
  const clock = opts.clock ?? systemClock;
  const ids = opts.ids ?? uuid;
  const log = opts.log ?? createLogger();
  if (!opts.showsWarnings) for (const warning of config.warnings) log.warn(warning);
  const events = new EventBus<ProductEvents>(() => clock.now());
  const moduleMigrations = modules.flatMap((m) => (m.tables ? [m.tables.migrations] : []));
  const store =
    opts.store ?? (await openStore({ workspace, migrations: moduleMigrations, ...(config.database.url ? { databaseUrl: config.database.url } : {}) }));
  const closers: Array<() => Promise<void>> = [];
  try {
    if (opts.store) await applyMigrations(store.db, store.dialect, moduleMigrations);
    const feed = await EventFeed.open({ store, bus: events, now: () => clock.now(), log });
    closers.push(() => feed.close());
    const engineDb = tablesView<EngineTables>(store.db);
    // Seed 4 back-compat: bare state keys from before namespacing go to the module that claims them.
    const state = new InstanceState(engineDb, () => clock.now());
    for (const m of modules) await state.migrateLegacyKeys(m.kind, m.legacyStateKeys);
    const llm = createLlm({ models: modelsConfig(config), db: tablesView<LedgerTables>(store.db), clock, ids, log, inProcessModel: opts.inProcessModel });
    // Calls a killed process left in flight are counted, as interrupted (issue 17 §4). Seam for
    // the worker registry: pass a predicate that also knows lapsed workers on other hosts.
    const interrupted = await llm.ledger.closeInterrupted(clock.now());
    if (interrupted) log.warn({ calls: interrupted }, 'model calls cut off by an earlier process were closed as interrupted in the ledger');
    const checkpointer = new StoreCheckpointer(tablesView<GraphTables>(store.db), clock);
    // Retention: ticks prune their own checkpoints; this sweeps what older versions or odd exits left.
    await checkpointer.pruneFinished(CHECKPOINT_RETENTION_MS);
    const coordinator = await createCoordinator({
      store,
      clock,
      ids,
      log,
      role: opts.role ?? 'face',
      leaseMs: config.database.lease_seconds * 1000,
      retentionMs: config.database.job_retention_hours * 3_600_000,
    });
    // Alone on the store (no other worker or face counted at the last heartbeat): quiet ticks read
    // their keys from memory and write nothing.
    const alone = () => coordinator.othersAlive() === 0;
    const deps: EngineDeps = { db: engineDb, llm, clock, ids, events, log, checkpointer, leases: coordinator, alone };
    const registry = new Registry(deps);

    const agentServices = await createAgentServices(config, tablesView<AgentTables>(store.db), { llm, clock, ids, events, log });
    closers.push(async () => {
      // Runs started outside a tick (approved escalations) stop before their tools go away.
      await agentServices.agent.cancelAll('external');
      await agentServices.mcp.close();
    });
    const services = new Services();
    services.add(provide(AgentRunnerKey, agentServices.agent));
    services.add(provide(ApprovalStoreKey, agentServices.approvals));
    services.add(provide(SkillsKey, opts.skills ?? agentServices.mcp));
    const presence = new Presence();
    services.add(provide(PresenceKey, presence));
    services.add(provide(CoordinatorKey, coordinator));

    const tickTimeoutMs = config.engine.tick_timeout_minutes * 60_000;
    const shared: SharedContext = {
      workspace,
      db: store.db,
      reads: store.reads,
      dialect: store.dialect,
      llm,
      clock,
      ids,
      log,
      events,
      services,
      timezone: config.timezone ?? systemTimeZone(),
      tickTimeoutMs,
      alone,
      trigger: (kind) => void registry.trigger(kind),
      worldOff: async (kind) => (registry.names().includes(kind) ? registry.get(kind).offReason() : null),
    };
    const methods: RpcMethod[] = [];
    const starts: Array<() => void | Promise<void>> = [];
    const instances = new Map<string, ModuleInstance>();
    for (const module of modules) {
      const section = config.worlds[module.kind] ?? { enabled: true, settings: {} };
      const instance = await module.instantiate(shared, section.settings);
      instances.set(module.kind, instance);
      if (instance.close) closers.push(instance.close);
      for (const provision of instance.provides) services.add(provision);
      if (instance.start) starts.push(instance.start);
      methods.push(...instance.methods);
      if (instance.world) {
        registry.add(instance.world, {
          description: module.description,
          tab: module.tab ?? null,
          enabledByDefault: module.enabledByDefault,
          disabledBy: section.enabled ? undefined : fileOffReason(module.kind),
          tickTimeoutMs,
        });
      }
    }

    const live = new LiveConfig({ config, workspace, modules, instances, registry, events, worker: coordinator.workerId, log });
    // Another worker's live change reaches this one through the cluster event feed.
    const offFeed = feed.subscribe((e) => live.adopt(e));
    closers.push(async () => offFeed());
    const configWatcher = new ConfigWatcher({
      live,
      load: () => loadConfig({ workspace, modules, ...(opts.env ? { env: opts.env } : {}), ...(opts.overrides ? { overrides: opts.overrides } : {}) }),
      log,
    });
    closers.push(() => configWatcher.close());
    // Status answers at once even while heavy calls queue (issue 22): it never waits in their lane.
    const rpc = new RpcDispatcher([], { log, neverQueued: ['subconscious.status'] });
    const timezone = config.timezone ?? systemTimeZone();
    const [engineContract, usageContract, agentContract] = appContracts;
    for (const m of [
      ...implement(
        engineContract,
        engineRpcHandlers(
          registry,
          () => rpc.list(),
          llm,
          () => clusterStatus(coordinator, store.dialect),
          () => live.effective(existsSync(live.file) ? live.file : null),
          (key, value) => live.set(key, value),
          () => ({ error: live.fileState.error, needs_restart: live.fileState.needsRestart }),
        ),
      ),
      ...implement(usageContract, usageRpcHandlers(tablesView<LedgerTables>(store.reads ?? store.db), clock, timezone, store.readColumns)),
      ...implement(agentContract, agentRpcHandlers(agentServices)),
      ...methods,
    ])
      rpc.add(m);

    let closed: Promise<void> | null = null;
    return {
      workspace,
      config,
      modules,
      store,
      llm,
      events,
      feed,
      clock,
      log,
      registry,
      rpc,
      services: agentServices,
      botStatus: combineBotStatus(services.find(BotStatusKey), services.find(ExternalBotStatusKey)),
      presence,
      sharedSecret: (name, initial) => sharedSecret(tablesView<SharedSecretsTables>(store.db), name, initial, clock.now()),
      coordinator,
      configWatcher,
      async start() {
        await coordinator.start();
        for (const start of starts) await start();
        registry.start();
        configWatcher.start();
      },
      close: () =>
        (closed ??= (async () => {
          await configWatcher.close();
          await registry.stop();
          for (const close of closers.reverse()) await close().catch((err) => log.error({ err }, 'a module failed to close'));
          // Its jobs go back in line for another worker; it shows stopped in the workers list.
          await coordinator.stop().catch((err) => log.error({ err }, 'the coordinator failed to stop'));
          await store.close();
        })()),
    };
  } catch (err) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
}

async function createAgentServices(
  config: Config,
  db: ConstructorParameters<typeof ApprovalStore>[0]['db'],
  base: { llm: LlmService; clock: Clock; ids: IdGen; events: EventBus<ProductEvents>; log: Logger },
): Promise<AppServices> {
  const { llm, clock, ids, events, log } = base;
  const mcp = new McpManager({ servers: config.mcp.servers, clock, log, events });
  const approvals = new ApprovalStore({ db, clock, ids, events, pollMs: 1000 });
  const agent = new AgentRunner({
    llm,
    mcp,
    approvals,
    clock,
    ids,
    events,
    log,
    capMs: config.agent.run_cap_minutes * 60_000,
    maxSteps: config.agent.max_steps,
  });
  await agent.recover();
  return { mcp, approvals, agent };
}
