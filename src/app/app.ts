/**
 * The composition root: config → store → llm → worlds → scheduler, and the RPC surface over
 * them. The only place where concrete pieces are wired together (DESIGN.md "Layers").
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { EventBus, RpcDispatcher, createLogger, defineMethod, systemClock, uuid, type Clock, type IdGen, type Logger, type RpcMethod } from '../core/index.js';
import { Registry, engineRpcMethods, type EngineDeps } from '../engine/index.js';
import { StoreCheckpointer } from '../graph/index.js';
import { createLlm, type Llm, type ModelEndpointConfig, type ModelRole, type ModelsConfig, type ProviderModel } from '../llm/index.js';
import { InstanceState, openStore, type Store } from '../store/index.js';
import type { SkillsHealth } from '../worlds/tasks/index.js';
import { loadConfig, type Config } from './config.js';
import { defineWorlds, type AppServices } from './worlds.js';

export interface AppOptions {
  workspace: string;
  env?: NodeJS.ProcessEnv;
  overrides?: { port?: number; host?: string };
  clock?: Clock;
  ids?: IdGen;
  log?: Logger;
  /** Run on this store instead of the configured database (`simulate`: a scratch store). The app closes it. */
  store?: Store;
  /** The model behind each role, in this process, instead of its endpoint (`simulate`: a dry-run model). */
  inProcessModel?: (role: ModelRole, endpoint: ModelEndpointConfig) => ProviderModel;
  /** What the worlds see of the MCP servers instead of asking them (`simulate`: they are not started). */
  skills?: SkillsHealth;
}

export interface App {
  workspace: string;
  config: Config;
  store: Store;
  llm: Llm;
  events: EventBus;
  clock: Clock;
  log: Logger;
  registry: Registry;
  rpc: RpcDispatcher;
  services: AppServices;
  /** Stop every tick (each stays checkpointed), close worlds, tools and the store. Idempotent. */
  close(): Promise<void>;
}

const CHECKPOINT_RETENTION_MS = 7 * 24 * 3_600_000;

/** Where the built page lives (same relative place from src/ and dist/). */
export const WEB_ROOT = path.resolve(fileURLToPath(new URL('../../web/dist', import.meta.url)));

export function modelsConfig(config: Config): ModelsConfig {
  const role = (m: Config['models']['local']) => ({ baseUrl: m.base_url, model: m.model, apiKey: m.api_key, timeoutMs: Math.round(m.timeout_seconds * 1000) });
  return { local: role(config.models.local), agent: role(config.models.agent) };
}

export async function createApp(opts: AppOptions): Promise<App> {
  const workspace = path.resolve(opts.workspace);
  const config = loadConfig({ workspace, ...(opts.env ? { env: opts.env } : {}), ...(opts.overrides ? { overrides: opts.overrides } : {}) });
  const clock = opts.clock ?? systemClock;
  const ids = opts.ids ?? uuid;
  const log = opts.log ?? createLogger();
  const events = new EventBus(() => clock.now());
  const store = opts.store ?? (await openStore({ workspace, ...(config.database.url ? { databaseUrl: config.database.url } : {}) }));
  try {
    // Seed 4 back-compat: bare keys from before namespacing belonged to the memory world.
    await new InstanceState(store.db, () => clock.now()).migrateLegacyKeys('memory');
    const llm = createLlm({ models: modelsConfig(config), db: store.db, clock, ids, log, inProcessModel: opts.inProcessModel });
    const checkpointer = new StoreCheckpointer(store.db, clock);
    // Retention: ticks prune their own checkpoints; this sweeps what older versions or odd exits left.
    await checkpointer.pruneFinished(CHECKPOINT_RETENTION_MS);
    const deps: EngineDeps = { db: store.db, llm, clock, ids, events, log, checkpointer };
    const registry = new Registry(deps);
    const services = await defineWorlds({ workspace, config, deps, registry, skills: opts.skills });
    const rpc = new RpcDispatcher();
    const methods: RpcMethod[] = [...engineRpcMethods(registry), ...services.rpcMethods];
    for (const m of methods) rpc.add(m);
    rpc.add(defineMethod('rpc.methods', z.object({}).strict(), 'The methods this daemon serves.', () => rpc.list()));
    let closed: Promise<void> | null = null;
    return {
      workspace,
      config,
      store,
      llm,
      events,
      clock,
      log,
      registry,
      rpc,
      services,
      close: () =>
        (closed ??= (async () => {
          await registry.stop();
          await services.close();
          await store.close();
        })()),
    };
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
}
