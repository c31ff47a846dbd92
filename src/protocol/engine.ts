/**
 * The engine's face: every world instance's status (read from the store, never through a tick
 * lock), Run now, switching a world on or off, lifting a rate-cap halt, and the method list.
 */
import { z } from 'zod';
import type { Backoff } from './backoff.js';
import { defineContract, method } from './contract.js';

export { describeBackoff, type Backoff } from './backoff.js';

export type ModelRole = 'local' | 'agent';
export type TickOutcomeKind = 'committed' | 'quiet' | 'skipped' | 'superseded' | 'failed';

export type InstanceStatus = {
  world: string;
  /** What the world does, in a sentence (its module's description). */
  description: string;
  /** The page tab that shows this world's work, when it has one. */
  tab: string | null;
  enabled: boolean;
  /** Why the world is off whatever its toggle says (a config setting), or null. */
  disabled_by: string | null;
  /** null until the endpoint was probed. */
  provider_available: boolean | null;
  provider_unavailable_reason: string | null;
  /** Optional models that did not answer at the last gate. */
  optional_models_unavailable: Array<{ role: ModelRole; reason: string }>;
  interval_minutes: number;
  last_tick_at: number | null;
  total_ticks: number;
  consecutive_failures: number;
  halted: boolean;
  halt_reason: string | null;
  running: boolean;
  last_outcome: TickOutcomeKind | null;
  last_summary: string | null;
  last_error: string | null;
  next_tick_at: number | null;
  /**
   * Why the world waits longer than its cadence: its ticks failed `failures` times in a row, so
   * the scheduler backs off (cadence × 2^(failures-1), capped; a success resets it). Null when
   * the last tick did not fail, and while halted (the halt says why then).
   */
  backoff: Backoff | null;
};

/** A structured-output mode: how a JSON schema is sent as `response_format` (`[models.<role>] structured_output`). */
export type StructuredOutputMode = 'auto' | 'json_schema' | 'json_object' | 'off';

/**
 * How one model role's endpoint takes structured output: the configured mode, the one in use,
 * and what `auto` learned (the server refused a `response_format`), kept across restarts.
 */
export type ModelStructuredOutput = {
  role: ModelRole;
  base_url: string;
  model: string;
  configured: StructuredOutputMode;
  in_use: Exclude<StructuredOutputMode, 'auto'>;
  /** null: nothing refused (or the mode is pinned). */
  learned: { mode: Exclude<StructuredOutputMode, 'auto'>; learned_at: number; reason: string } | null;
};

/** One process of the cluster (on SQLite: the one daemon, and any CLI that started work). */
export type WorkerStatus = {
  id: string;
  host: string;
  pid: number;
  /** `face`: HTTP + scheduler + workers; `worker`: scheduler and job workers, no HTTP (`start --worker`). */
  role: 'face' | 'worker';
  started_at: number;
  last_seen_at: number;
  /** Jobs and tick leases it holds now. */
  jobs_held: number;
  /** Not stopped, seen within two lease periods, and (on this host) its process still runs. */
  alive: boolean;
};

/** Jobs per queue now. */
export type QueueSizeStatus = { queue: string; queued: number; active: number; failed: number; dead: number };

/** A job moved aside (its payload no longer parses, or its work can never run), with why. */
export type DeadLetterStatus = {
  id: string;
  queue: string;
  key: string | null;
  group: string | null;
  reason: string;
  created_at: number;
  moved_at: number | null;
};

/** The cluster's workers, queues and dead letters (`subconscious.status`'s `cluster`). */
export type ClusterStatus = {
  /** `sqlite` (one process owns the file) or `postgres` (several workers share it). */
  store: 'sqlite' | 'postgres';
  /** The lease period (ms): a dead worker's jobs are taken over within two. */
  lease_ms: number;
  /** Workers seen in the last day, newest first. */
  workers: WorkerStatus[];
  queues: QueueSizeStatus[];
  /** The newest jobs moved aside (at most 50). */
  dead_letters: DeadLetterStatus[];
};

/**
 * Every world's status in `instances`, in registration order (the module list's order).
 *
 * Legacy fields (seed 4 back-compat, from when the daemon ran one world): `enabled`,
 * `total_ticks`, `consecutive_failures` and `last_tick_at` mirror `instances[0]`, the first
 * registered world — in the shipped daemon the memory world, seed 4's own. They say nothing about
 * the other worlds: read `instances` for those. With no world registered they are `false`, `0`,
 * `0` and `null`.
 */
export type StatusResult = {
  instances: InstanceStatus[];
  /** Legacy: `instances[0].enabled` (false when there is no world). */
  enabled: boolean;
  /** Legacy: `instances[0].total_ticks` (0 when there is no world). */
  total_ticks: number;
  /** Legacy: `instances[0].consecutive_failures` (0 when there is no world). */
  consecutive_failures: number;
  /** Legacy: `instances[0].last_tick_at` (null when there is no world). */
  last_tick_at: number | null;
  /** Per model role (`local`, `agent`): how its endpoint takes structured output (empty without a model layer). */
  structured_output: ModelStructuredOutput[];
  /** The cluster's workers, queue sizes and dead letters (absent from an engine run without a coordinator). */
  cluster?: ClusterStatus;
  /**
   * subconscious.toml as last edited by hand (absent from an engine without a file): `error` when
   * it cannot be used (the daemon keeps the last good settings), the keys that need a restart.
   */
  config_file?: { error: string | null; needs_restart: string[] };
};

export type EngineEvents = {
  /**
   * Sent by the server first on every `/events` connection: `last_event_id` is where the stream
   * starts (reconnect with it as `Last-Event-ID` to get what follows). The page also sends itself
   * one (`reconnected`) when its views must reload.
   */
  hello: { reconnected?: boolean; last_event_id?: number };
  /**
   * `/events` could not replay everything after the client's `Last-Event-ID`: events from
   * `last_event_id` + 1 to `oldest_id` - 1 are no longer kept (or the store was reset). The
   * stream goes on after `head_id`; reload what you show.
   */
  'events.gap': { last_event_id: number; oldest_id: number; head_id: number };
  'tick.started': { world: string; generation: number; resumed: boolean };
  'tick.finished': {
    world: string;
    outcome: TickOutcomeKind;
    message: string;
    generation: number;
    resumed: boolean;
    duration_ms: number;
    /** The tick raised consecutive_failures (a failure, or a model-unreachable skip). */
    counts_as_failure: boolean;
  };
  'status.changed': { world: string };
  /**
   * A setting was changed live (`subconscious.config_set`): read `subconscious.config` again.
   * `worker` took the change; `adopted`: that worker applied another worker's change to itself.
   */
  'config.changed': { key: string; value: number | boolean | string; worker: string; adopted?: boolean };
  /**
   * subconscious.toml was edited by hand and what that left changed: `error` (the file does not
   * parse or validate; the daemon keeps the last good settings; null once it is fixed) and the keys
   * it sets that apply only at the next start. Read `subconscious.config` again.
   */
  'config.file': { error: string | null; needs_restart: string[] };
};

export const worldName = z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be a world name such as "tasks"');

/** Where a configuration value came from: its default, `subconscious.toml`, a `SUBCONSCIOUS_*` variable, or a command-line flag. */
export type ConfigSource = 'default' | 'file' | 'environment' | 'command line';

/** One value of the effective configuration (`subconscious.config`). Secrets are never sent: `value` says only whether one is set. */
export type ConfigValue = {
  /** Dotted key as in subconscious.toml: `models.local.model`, `worlds.tasks.interval_minutes`. */
  key: string;
  value: unknown;
  source: ConfigSource;
  /** A secret (an API key, a database URL with its password): `value` is `"(set)"`. */
  secret: boolean;
  /** Where it can be changed without a restart, in words (null: edit the file and restart). */
  live: string | null;
  /**
   * `subconscious.config_set` takes this key: it is written to subconscious.toml and applied at
   * once. False for everything else, and for a value the environment or the command line set
   * (those win over the file, so the page cannot change them).
   */
  editable: boolean;
};

export type EffectiveConfig = {
  /** The configuration file read at start (null: none, every value is a default or from the environment). */
  file: string | null;
  values: ConfigValue[];
  /**
   * The file was edited by hand into something the daemon cannot use (bad TOML, an unknown or
   * ill-typed key): what is wrong, where. The daemon keeps running on the last good settings.
   */
  file_error: string | null;
  /** Keys the file now sets differently from what the daemon runs with: they apply at the next start. */
  needs_restart: string[];
};

export const engineContract = defineContract<EngineEvents>()({
  methods: {
    'subconscious.status': method(
      z.strictObject({}),
      "Status of every world instance, read from the store, and the cluster's workers (id, host, pid, role, last seen, jobs held, alive), queue sizes and dead letters (jobs moved aside, with their reason) in `cluster`. The legacy top-level fields (enabled, total_ticks, consecutive_failures, last_tick_at) mirror the first registered world only.",
    ).returns<StatusResult>(),
    'subconscious.trigger': method(
      z.strictObject({ world: z.union([z.literal('all'), worldName]).optional() }),
      'Run a tick now in the background (while one runs, one more follows it; a running tick is never superseded); returns at once. A world that is off is not run: asked by name, that is a world_off error saying why; asked for all, it is listed in skipped with why.',
      { renamed: { kind: 'world' } },
    ).returns<{ triggered: string[]; skipped: Array<{ world: string; reason: string }> }>(),
    'subconscious.set_enabled': method(
      z.strictObject({ world: worldName, enabled: z.boolean() }),
      'Enable or disable one world instance (kept across restarts).',
    ).returns<{ world: string; enabled: boolean }>(),
    'subconscious.clear_halt': method(
      z.strictObject({ world: worldName }),
      "Lift a world's rate-cap halt after changing what made its requests too large (what its halt_reason says to change); it ticks at once and halts again if they still do not fit. {cleared: false} when it was not halted.",
    ).returns<{ world: string; cleared: boolean }>(),
    'subconscious.config': method(
      z.strictObject({}),
      'The effective configuration the daemon runs with (resolved at start, with any change made since by subconscious.config_set or by a hand edit of subconscious.toml, which the daemon watches): every value with where it came from (default, file, environment, command line), whether config_set takes it (editable) and, for those that can change without a restart, where. Secrets are never sent (only whether one is set). file_error: the file as edited by hand cannot be used (the last good settings stay); needs_restart: keys the file changed that apply at the next start.',
    ).returns<EffectiveConfig>(),
    'subconscious.config_set': method(
      z.strictObject({
        key: z.string().min(1).max(200),
        value: z.union([z.number(), z.boolean(), z.string().max(10_000)]),
      }),
      "Change one setting that is safe to change live (one whose `editable` is true in subconscious.config: a world's on/off, its interval, its budgets): the value is checked against the setting's rules (invalid_params names the key and the reason, and nothing changes), written to subconscious.toml keeping the rest of the file and its comments, and applied at once (a new interval moves the world's next tick; `worlds.<kind>.enabled` false stops its ticks, true ticks it now). Every other worker on the same database takes the change from the cluster event feed (config.changed carries the value) into its own file and memory. A key the environment or the command line set is refused (forbidden), as is one that needs a restart.",
    ).returns<{ value: ConfigValue; file: string }>(),
    'rpc.methods': method(z.strictObject({}), 'The methods this daemon serves.').returns<Array<{ name: string; description: string }>>(),
  },
  events: ['hello', 'events.gap', 'tick.started', 'tick.finished', 'status.changed', 'config.changed', 'config.file'],
});
