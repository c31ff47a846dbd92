/**
 * The heartbeat for your own agent runtime (issue 18 §6): an external host registers its bots
 * and reports what they do over `runtime.*`; the heartbeat triages them through the same API as
 * the built-in bots (`ExternalHeartbeatKey`); resumes and check-ins go to the runtime as durable
 * dispatches, delivered by a signed webhook (retried with backoff, at least once, an idempotency
 * key) or by long-poll, and acknowledged with `runtime.ack`.
 *
 * As a module: `runtimesModule` (before the heartbeat in the module list). By hand:
 *   await applyMigrations(store.db, store.dialect, runtimesMigrations);
 *   const runtimes = createRuntimesHost({ db, clock, ids, log, emit, config: parseRuntimesConfig({}) });
 *   createHeartbeat({ host: routeHeartbeatHosts(bots.heartbeat, [runtimes.heartbeat]), … });
 *   implement(runtimesContract, runtimes.rpc).forEach((m) => dispatcher.add(m));
 *   runtimes.start();      // deliveries and leases; runtimes.stop() at shutdown
 */
export { runtimesModule } from './module.js';
export { createRuntimesHost, type RuntimesHost, type RuntimesHostDeps } from './host.js';
export { runtimesConfig, parseRuntimesConfig, type RuntimesConfig } from './config.js';
export { runtimesMigrations, RUNTIMES_TABLES } from './migrations.js';
export type { RuntimesTables } from './tables.js';
export type { RuntimesEmit } from './core.js';
export { signatureHeader, signatureValid, MIN_SECRET_CHARS } from './signature.js';
export { internalId, isExternalId, externalOf } from './rows.js';
