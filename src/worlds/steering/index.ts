/**
 * The steering world (seeds 4 and 5, issue 14): reviews the harness's 20:1 compressed history and
 * world timeline, and emits short directives that steer the harness's reasoning tier.
 *
 *   const steering = createSteeringWorld({ db: tablesView<SteeringTables>(store.db), harness: harness.store, settings, emit });
 *   registry.add(steering)                                          // the engine runs its ticks (cron trigger)
 *   createHarness({ …, steering: steering.directives,              // injection into the reasoning prompt
 *                   requestReview: () => instance.tick() })         // event trigger after a forwarded cycle
 *   dispatcher: implement(steeringContract, steeringRpcHandlers(steering.service))
 *
 * In the app: `steeringModule` (module.ts) does this wiring through service keys.
 */
export { steeringModule } from './module.js';
export { createSteeringWorld, type SteeringWorld, type SteeringWorldDeps } from './world.js';
export { SteeringService } from './service.js';
export { SteeringStore, withStatus, type ReviewCursor, type CommitReview, type StoredDirective } from './store.js';
export { steeringRpcHandlers } from './rpc.js';
export { steeringMigrations } from './migrations.js';
export { STEERING_TABLES, type SteeringTables } from './tables.js';
export { steeringConfigSchema, DEFAULT_STEERING_CONFIG, MAX_EXPIRES_AFTER_CYCLES, type SteeringConfig, type SteeringConfigInput } from './config.js';
export type { SteeringEvents, SteeringEmit } from './events.js';
export {
  reflectSteering,
  parseSteeringAnswer,
  fencedLines,
  steeringReplySchema,
  STEERING_MAX_OUTPUT_TOKENS,
  steeringPrompt,
  STEERING_SYSTEM,
  STEERING_TEMPERATURE,
  MAX_DIRECTIVE_CHARS,
  DEFAULT_EXPIRES_AFTER_CYCLES,
  REVIEW_BATCH,
  REVIEW_MUTATIONS,
  type SteeringAnswer,
  type SteeringCall,
} from './reflect.js';
export type * from './types.js';
