export { openStore, defaultSqlitePath, type Store, type OpenStoreOptions, type DialectName } from './open.js';
export { InstanceState, stateKey, LEGACY_KEYS } from './instance-state.js';
export type * from './schema.js';
