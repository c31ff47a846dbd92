export { openStore, defaultSqlitePath, type Store, type OpenStoreOptions, type DialectName } from './open.js';
export { openReadOnlyStore, hasTable, type ReadOnlyStoreOptions } from './read-only.js';
export { InstanceState, stateKey, LEGACY_KEYS } from './instance-state.js';
export type * from './schema.js';
export { applyMigrations, type Migration, type MigrationContext } from './migrate.js';
export { tablesView } from './view.js';
