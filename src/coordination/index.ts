/**
 * The coordination layer's surface: `createCoordinator` picks the implementation by the store's
 * dialect (pg-boss on Postgres, our own tables on SQLite) after applying the layer's migrations.
 * Modules get the app's coordinator as a service: `ctx.services.get(CoordinatorKey)`.
 */
import { serviceKey } from '../core/services.js';
import { silentLogger, type Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import type { IdGen } from '../core/ids.js';
import { applyMigrations, tablesView, type Store } from '../store/index.js';
import { coordinationMigrations } from './migrations/index.js';
import { SqliteCoordinator } from './sqlite.js';
import type { CoordinationTables } from './tables.js';
import type { Coordinator, WorkerInfo } from './types.js';

export type * from './types.js';
export { coordinationMigrations } from './migrations/index.js';
export { DEFAULT_LEASE_MS, DEFAULT_RETENTION_MS } from './base.js';
export { localLeases, type LeaseProvider } from './leases.js';
export type { CoordinationTables } from './tables.js';

/** The app's coordinator, for modules: `ctx.services.get(CoordinatorKey)`. */
export const CoordinatorKey = serviceKey<Coordinator>('coordination.coordinator');

/** The pg-boss schema in the product (tests give each run its own). */
export const PGBOSS_SCHEMA = 'pgboss';

export interface CreateCoordinatorOptions {
  store: Pick<Store, 'db' | 'dialect'> & { schema?: string | null | undefined };
  clock: Clock;
  ids: IdGen;
  role?: WorkerInfo['role'];
  log?: Logger;
  /** Default: a fresh `host:pid:<random>`. */
  workerId?: string;
  /** The lease period (default 60 s): a dead worker's jobs are taken over within two. */
  leaseMs?: number;
  /** How long finished jobs are kept before the maintenance loop prunes them (default 24 h). */
  retentionMs?: number;
  /** Postgres: pg-boss's schema. Default `pgboss`, or `<store schema>_pgboss` for a store in its own schema. */
  bossSchema?: string;
}

export async function createCoordinator(opts: CreateCoordinatorOptions): Promise<Coordinator> {
  await applyMigrations(opts.store.db, opts.store.dialect, coordinationMigrations);
  const db = tablesView<CoordinationTables>(opts.store.db);
  const base = {
    db,
    clock: opts.clock,
    log: opts.log ?? silentLogger,
    ...(opts.role ? { role: opts.role } : {}),
    ...(opts.workerId ? { workerId: opts.workerId } : {}),
    ...(opts.leaseMs ? { leaseMs: opts.leaseMs } : {}),
    ...(opts.retentionMs ? { retentionMs: opts.retentionMs } : {}),
  };
  if (opts.store.dialect === 'sqlite') return new SqliteCoordinator({ ...base, ids: opts.ids });
  const { PgBossCoordinator } = await import('./pgboss.js');
  const schema = opts.bossSchema ?? (opts.store.schema ? `${opts.store.schema}_pgboss` : PGBOSS_SCHEMA);
  return new PgBossCoordinator({ ...base, schema });
}
