/**
 * `createRuntimesHost(deps)`: the external agent runtimes' side of the heartbeat, assembled from
 * injected parts (no globals): the store, the heartbeat's API over their bots (`heartbeat`, what
 * `ExternalHeartbeatKey` provides), the `runtime.*` methods, and the delivery loop (webhooks,
 * retries, leases) that `start()` runs and `stop()` ends.
 */
import type { Kysely } from 'kysely';
import type { ExternalHeartbeatHost } from '../bots/index.js';
import type { Clock, IdGen, Logger } from '../core/index.js';
import type { Handlers } from '../protocol/contract.js';
import type { RuntimesMethods } from '../protocol/runtimes.js';
import type { RuntimesConfig } from './config.js';
import { RuntimeCore, type RuntimesEmit } from './core.js';
import { Delivery } from './delivery.js';
import { externalHeartbeatApi } from './heartbeat-api.js';
import { runtimesRpcHandlers } from './rpc.js';
import { RuntimesService } from './service.js';
import { RuntimeStore } from './store.js';
import type { RuntimesTables } from './tables.js';

export interface RuntimesHostDeps {
  /** The module's view of the database, migrated with `runtimesMigrations`. */
  db: Kysely<RuntimesTables>;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  emit: RuntimesEmit;
  /** The resolved `[worlds.runtimes]` section. */
  config: RuntimesConfig;
  /** Where `secret_env` names are read (default: this process's environment). */
  env?: NodeJS.ProcessEnv;
  /** Webhook posts (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** The webhook's `User-Agent`. */
  userAgent?: string;
}

export interface RuntimesHost {
  core: RuntimeCore;
  /** The heartbeat's API over the external runtimes' bots (`ExternalHeartbeatKey`). */
  heartbeat: ExternalHeartbeatHost;
  service: RuntimesService;
  rpc: Handlers<RuntimesMethods>;
  delivery: Delivery;
  /** The delivery loop (webhooks due, retries, the sweep of leases). */
  start(): void;
  stop(): Promise<void>;
}

export function createRuntimesHost(deps: RuntimesHostDeps): RuntimesHost {
  const store = new RuntimeStore(deps.db, deps.clock);
  const core = new RuntimeCore({ store, clock: deps.clock, ids: deps.ids, log: deps.log, emit: deps.emit, config: deps.config, env: deps.env ?? process.env });
  const service = new RuntimesService(core);
  const delivery = new Delivery({
    core,
    service,
    fetch: deps.fetch ?? ((input, init) => fetch(input, init)),
    userAgent: deps.userAgent ?? 'subconscious-engine',
    log: deps.log,
  });
  return {
    core,
    heartbeat: externalHeartbeatApi(core),
    service,
    rpc: runtimesRpcHandlers(service),
    delivery,
    start: () => delivery.start(),
    stop: () => delivery.stop(),
  };
}
