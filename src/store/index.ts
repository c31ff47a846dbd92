export { openStore, defaultSqlitePath, type Store, type OpenStoreOptions, type DialectName, type AnyTables } from './open.js';
export { openReadOnlyStore, hasTable, type ReadOnlyStoreOptions } from './read-only.js';
export { applyMigrations, pendingMigrations, type Migration, type MigrationContext, type MigrationSet } from './migrate.js';
export { baseMigrations } from './migrations/index.js';
export { tablesView } from './view.js';
export { EventFeed, type EventFeedOptions } from './event-feed.js';
export { EventLog, EVENT_LOG_KEEP, EVENT_LOG_MAX_AGE_MS, type EventLogBounds, type EventLogTables } from './event-log.js';
export type { Notifications } from './notify.js';
export { sharedSecret, type SharedSecretsTables } from './shared-secrets.js';
