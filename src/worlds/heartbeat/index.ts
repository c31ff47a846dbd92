/**
 * The heartbeat world (seed 2, issue 12): Tier 0 triage → Tier 1 pulse → Tier 2 resume over the
 * bots host. Its front door is `heartbeatModule` (it needs `BotsHeartbeatKey`); the rest is
 * exported for tests and benchmarks.
 */
export { heartbeatModule } from './module.js';
export { createHeartbeat, type Heartbeat } from './heartbeat.js';
export { HeartbeatCore, type HeartbeatDeps } from './core.js';
export { heartbeatConfig, DEFAULT_QUIET_HOURS, type HeartbeatConfig } from './config.js';
export { heartbeatMigrations } from './migrations.js';
export { HEARTBEAT_TABLES, type HeartbeatTables } from './tables.js';
export type { HeartbeatEmit, HeartbeatEvents } from './events.js';
export { createHeartbeatWorld, maxPulsesPerTick, type HeartbeatWorld } from './world.js';
export { observe, DUE_LIMIT, DEEP_LIMIT, type HeartbeatObservation, type Plan } from './triage.js';
export { runPulses, PULSE_PURPOSE, type HeartbeatReflection, type PulseResult } from './reflect.js';
export { commitTick, type CommitCounts } from './commit.js';
export { triageBot, asksQuestion, ORPHAN_AGE_MS, STALE_STREAMING_MS, type BotView, type Candidate, type Triage } from './rules.js';
export { buildDigest, digestOpenTasks, isoLocal, DIGEST_BUDGET_TOKENS, type Digest, type DigestInput } from './digest.js';
export { PULSE_SYSTEM, pulsePrompt, parseVerdict, MIN_RESUME_CONFIDENCE, type PulseVerdict } from './pulse.js';
export { resumePreamble, wakeNote } from './preamble.js';
export { HostResumeQueue, type ResumeQueue, type ResumeClaim, type ResumeJob } from './claims.js';
export { HeartbeatService, INTERVAL_BASELINE_MINUTES } from './service.js';
export { defaultBotRow } from './bot-state.js';
export { heartbeatRpcHandlers } from './rpc.js';
export { HeartbeatListeners, PERSONA_FOLLOWUPS } from './listeners.js';
export { SettingsStore, pulseModel, type BotSettings } from './settings.js';
export * as schedule from './schedule.js';
