/**
 * The contract between the engine and a world. A world is four stages; the engine owns every
 * invariant around them (lock, generation, timeout, provider gate, rate-cap halt, failures,
 * checkpoints, status). See DESIGN.md "The one idea".
 *
 * Stage outputs must be JSON-serialisable: they are checkpointed so a killed tick resumes
 * from its last finished stage.
 */
import type { Clock, IdGen, Logger } from '../core/index.js';
import type { Llm, ModelRole } from '../llm/types.js';
import type { InstanceStatus, TickOutcomeKind } from '../protocol/engine.js';

export type { InstanceStatus, TickOutcomeKind };

/** A world's view of its own namespaced state (`<world>:<key>`). */
export interface WorldState {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
}

/**
 * What a tick works with besides its world's own services (its tables, settings and neighbours,
 * which the world got from its module's `create`). No database: a world reads only its own tables.
 */
export interface TickContext {
  llm: Llm;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  /** The instance name (the world's kind unless configured otherwise). */
  world: string;
  /** This tick's id; stable across a crash-resume of the same tick. */
  tickId: string;
  generation: number;
  /** When this tick started (epoch ms); kept across a resume. */
  startedAt: number;
  /** `last_tick_at` before this tick: the start of the window this tick covers (null: never). */
  since: number | null;
  /** Aborted on timeout, supersession and shutdown: pass it to every model call and tool. */
  signal: AbortSignal;
  /** True when this tick was resumed from a checkpoint after a crash. */
  resumed: boolean;
  state: WorldState;
  /**
   * The observation reacted to external content (DESIGN invariant 6). Set by the engine once the
   * observation is known, for every later stage and across a resume; false during observe.
   */
  tainted: boolean;
  /**
   * The permission mode work in this tick may use: `full` becomes `tainted` (writes need an
   * approval) when the tick is tainted. Worlds pass every agent run's mode through it.
   */
  permit<M extends 'full' | 'analysis' | 'tainted'>(mode: M): M | 'tainted';
}

export interface Observation<O> {
  /** Nothing to reflect on: the engine skips prepare/reflect (no model call) and commits. */
  quiet: boolean;
  /** The observation reacted to external content: tools with external effects need approval. */
  tainted: boolean;
  data: O;
}

export interface CommitInput<O, R> {
  observation: Observation<O>;
  /** Absent on a quiet tick. */
  reflection?: R;
}

/** What the engine shows in status and logs about a committed tick. */
export interface CommitSummary {
  /** One short line for `subconscious tick` and the activity feed. */
  summary: string;
  /** World-specific counters, e.g. `{ acted: 2, escalated: 1 }`. */
  counts?: Record<string, number>;
}

export type AbandonReason = 'superseded' | 'failed' | 'timeout' | 'shutdown';

export interface World<O = unknown, C = unknown, R = unknown> {
  readonly kind: string;
  /** Minutes between ticks (the scheduler sleeps, never a fixed interval). */
  intervalMinutes(): number;
  /** How long after start the first tick waits (default 0: at once; seed 3's conscious loop waits 60 s). */
  initialDelayMs?(): number;
  /** Model roles `reflect` needs; the provider gate probes them before reflecting. */
  readonly roles: readonly ModelRole[];
  /**
   * Model roles only some of the world's work uses (the tasks world's agent runs). The gate
   * probes them too but never closes for them: status says which did not answer, and why.
   */
  readonly optionalRoles?: readonly ModelRole[];
  /**
   * Optional: a read-only look the engine takes before the tick lease. It returns the summary of a
   * tick that is surely quiet — observe would find nothing, and commit would write nothing — and
   * the tick ends there, quiet, having written nothing and taken no lease (a quiet tick at the
   * floor). It returns null when there may be work: the engine then takes the lease and runs the
   * full tick, observe included. It must write nothing (it runs without the lease, maybe beside
   * another worker's tick); an error in it only means the full tick runs.
   */
  probe?(ctx: TickContext): Promise<string | null>;
  /** Deterministic, 0 tokens. May write bookkeeping (e.g. `in_progress` rows). */
  observe(ctx: TickContext): Promise<Observation<O>>;
  prepareContext(ctx: TickContext, observation: Observation<O>): Promise<C>;
  reflect(ctx: TickContext, context: C, observation: Observation<O>): Promise<R>;
  /** Apply the result. Must be idempotent for a resumed tick (the engine may re-run it after a crash). */
  commit(ctx: TickContext, input: CommitInput<O, R>): Promise<CommitSummary>;
  /**
   * The tick will not commit: undo or mark what observe wrote (seed 1: superseded rows become
   * `cancelled`, failed rows `failed`). Must not throw for lack of an observation.
   */
  abandon?(ctx: TickContext, reason: AbandonReason, observation: Observation<O> | undefined, error: unknown): Promise<void>;
  /**
   * What a person can do about this failure in this world's own terms (its config keys, its page
   * card), appended to the lower layers' message; undefined when the world has nothing to add.
   */
  hint?(error: unknown): string | undefined;
  /** Release resources at shutdown. */
  close?(): Promise<void>;
}

export interface TickOutcome {
  world: string;
  kind: TickOutcomeKind;
  /** One line for people: the commit summary, the skip reason or the error. */
  message: string;
  generation: number;
  durationMs: number;
  resumed: boolean;
  /**
   * A skip worth trying again before the cadence (ms): the tick lock another worker holds, which
   * lapses within its TTL if that worker died — so its open tick is taken over within two lease
   * periods, not a whole interval later.
   */
  retryAfterMs?: number;
}
