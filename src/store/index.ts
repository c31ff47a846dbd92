export { openStore, defaultSqlitePath, type Store, type OpenStoreOptions, type DialectName, type AnyTables } from './open.js';
export { openReadOnlyStore, hasTable, type ReadOnlyStoreOptions } from './read-only.js';
export { applyMigrations, pendingMigrations, type Migration, type MigrationContext, type MigrationSet } from './migrate.js';
export { baseMigrations } from './migrations/index.js';
export { tablesView } from './view.js';
