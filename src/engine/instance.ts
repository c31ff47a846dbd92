/**
 * One world instance: the slot that makes ticks never stack (a newer tick supersedes a running
 * one, unless it is committing), enable/disable, status read from the store, and the parts each
 * tick uses — the tick runner, the lease and its keeper, the provider gate with the rate-cap
 * breaker (see their files).
 */
import type { Kysely } from 'kysely';
import { localLeases, type CoordinationTables, type LeaseProvider } from '../coordination/index.js';
import { tablesView } from '../store/index.js';
import { SubconsciousError, processOwner, type Clock, type Emitter, type IdGen, type Logger } from '../core/index.js';
import type { Checkpointer } from '../graph/index.js';
import type { Llm } from '../llm/index.js';
import type { EngineEvents } from '../protocol/engine.js';
import { ProviderGate } from './gate.js';
import { LEASE_TTL_MS, TickLease } from './lease.js';
import { QuietCounters } from './quiet-counters.js';
import { InstanceState, WorldKeys } from './state.js';
import { readStatus, type EngineKeys } from './status.js';
import type { EngineTables } from './tables.js';
import { Shutdown, Superseded, TickRunner } from './tick-runner.js';
import type { InstanceStatus, TickOutcome, World } from './types.js';

export const DEFAULT_TICK_TIMEOUT_MS = 30 * 60_000;

export interface EngineDeps {
  db: Kysely<EngineTables>;
  llm: Llm;
  clock: Clock;
  ids: IdGen;
  events: Emitter<EngineEvents>;
  log: Logger;
  checkpointer: Checkpointer;
  /**
   * Where tick leases come from: the app's coordinator (its worker id holds them, and they count
   * in the workers list). Without one, leases are taken on the same table under this process's id.
   */
  leases?: LeaseProvider;
  /**
   * No other worker or face is alive on the store now (the coordinator's count): nobody else reads
   * or writes the instances' keys. Their keys are then kept in memory between ticks, and a quiet
   * tick's counters and `next_tick_at` wait longer before they are written. Absent: never alone.
   */
  alone?: () => boolean;
}

export interface InstanceOptions {
  /** Default: the world's kind. */
  name?: string;
  /** What the world does, and the page tab that shows its work (for status). */
  description?: string;
  tab?: string | null;
  tickTimeoutMs?: number;
  /** Whether the instance runs when nothing was stored yet (the UI's toggle overrides it). */
  enabledByDefault?: boolean;
  /**
   * Why the instance is off whatever the toggle says (e.g. `[worlds.tasks] enabled = false` in the
   * config file): it does not tick, and switching it on is refused with this reason, until
   * `setDisabledBy(null)` (the setting changed live).
   */
  disabledBy?: string | undefined;
  /** A lease holder of its own within this process (tests run two "processes" in one). */
  holderTag?: string;
}

export interface TickOptions {
  /** Discard a tick that is running now and start over (seed 1's overlap guard). */
  supersede?: boolean;
  /**
   * The engine keys the caller read just now (the scheduler's pass reads them to see whether the
   * world is due): a probed tick uses them instead of reading them again. The full tick always
   * reads its own under the lease.
   */
  keys?: Partial<EngineKeys>;
}

interface RunHandle {
  controller: AbortController;
  startedAt: number;
  done: Promise<TickOutcome>;
}

export class Instance {
  readonly name: string;
  private readonly engineKeys: WorldKeys<EngineKeys>;
  private readonly gate: ProviderGate;
  private readonly runner: TickRunner;
  private readonly enabledByDefault: boolean;
  private disabledBy: string | null;
  private current: RunHandle | null = null;

  constructor(
    readonly world: World,
    private readonly deps: EngineDeps,
    private readonly opts: InstanceOptions = {},
  ) {
    this.name = opts.name ?? world.kind;
    this.enabledByDefault = opts.enabledByDefault ?? true;
    this.disabledBy = opts.disabledBy ?? null;
    const now = () => deps.clock.now();
    const state = new InstanceState(deps.db, now, deps.alone);
    this.engineKeys = new WorldKeys<EngineKeys>(state, this.name);
    this.gate = new ProviderGate(world, deps.llm, this.engineKeys, now, deps.log, () => this.changed());
    const leases =
      opts.holderTag === undefined && deps.leases
        ? deps.leases
        : localLeases(tablesView<CoordinationTables>(deps.db), processOwner(opts.holderTag ?? this.name), deps.clock, LEASE_TTL_MS);
    const lease = new TickLease(leases, this.name);
    this.runner = new TickRunner(
      world,
      deps,
      state,
      this.engineKeys,
      lease,
      this.gate,
      opts.tickTimeoutMs ?? DEFAULT_TICK_TIMEOUT_MS,
      (...a) => this.outcome(...a),
      deps.events,
      (keys) => this.enabledFrom(keys),
      new QuietCounters(this.engineKeys, now, deps.alone),
    );
  }

  /** Read from the store (with the quiet-tick counters not written yet): never waits for a running tick. */
  async status(): Promise<InstanceStatus> {
    const status = await readStatus(this.deps.db, this.name, {
      description: this.opts.description ?? '',
      tab: this.opts.tab ?? null,
      intervalMinutes: this.world.intervalMinutes(),
      enabledByDefault: this.enabledByDefault,
      disabledBy: this.disabledBy,
      now: this.deps.clock.now(),
    });
    return this.runner.counters.overlay(status);
  }

  get running(): boolean {
    return this.current !== null;
  }

  /** The running tick is committing: its effects are real, so nothing may supersede it. */
  get committing(): boolean {
    return this.current !== null && this.runner.stage === 'commit';
  }

  /** When the running tick started (ms), or null. */
  get runningSince(): number | null {
    return this.current?.startedAt ?? null;
  }

  async isEnabled(): Promise<boolean> {
    const enabled = await this.engineKeys.get('enabled');
    return this.enabledFrom(enabled === undefined ? {} : { enabled });
  }

  /**
   * Why the instance is off, or null when it is on: the config (a restart is needed) or the
   * page's switch. Run now of a world that is off is refused with this (nothing would run).
   */
  async offReason(): Promise<string | null> {
    if (this.disabledBy !== null) {
      return `${this.disabledBy} (set enabled = true under [worlds.${this.world.kind}] in Settings on the Subconscious tab: it applies at once)`;
    }
    return (await this.isEnabled()) ? null : 'switched off on the page (switch it on first)';
  }

  /** The same answer from keys already read (the scheduler's pass). */
  enabledFrom(keys: Partial<Pick<EngineKeys, 'enabled'>>): boolean {
    return this.disabledBy === null && (keys.enabled ?? this.enabledByDefault);
  }

  /**
   * The config's hard off changed while running (`[worlds.<kind>] enabled` through config_set):
   * the scheduler's next pass and a running tick's next check read it; null switches it back on.
   */
  setDisabledBy(reason: string | null): void {
    if (reason === this.disabledBy) return;
    this.disabledBy = reason;
    this.changed();
  }

  async setEnabled(enabled: boolean): Promise<void> {
    if (enabled && this.disabledBy !== null) {
      throw new SubconsciousError('forbidden', `${this.name} cannot be switched on here: ${this.disabledBy}.`, {
        hint: `Set enabled = true under [worlds.${this.world.kind}] (Settings on the Subconscious tab, or subconscious.config_set): it applies at once.`,
      });
    }
    await this.engineKeys.set('enabled', enabled);
    this.changed();
  }

  /**
   * Lift a rate-cap halt by hand: the person changed what made the requests too large (a lower
   * context budget) rather than the model. False when the world was not halted.
   */
  clearHalt(): Promise<boolean> {
    return this.gate.clear();
  }

  /** Engine keys for the scheduler (last tick, next tick, open tick). */
  async keys(): Promise<Partial<EngineKeys>> {
    return this.runner.counters.overlay(await this.engineKeys.all());
  }

  /** When the world ticks next; after a quiet tick it waits in memory with the quiet counters. */
  async setNextTickAt(at: number | null, afterQuiet = false): Promise<void> {
    if (afterQuiet && at !== null) return this.runner.counters.nextTickAfterQuiet(at);
    this.runner.counters.forgetNextTick();
    await this.engineKeys.set('next_tick_at', at);
  }

  /** Run one tick. Resolves with its outcome; never rejects. */
  async tick(opts: TickOptions = {}): Promise<TickOutcome> {
    const startedAt = this.deps.clock.now();
    // Claim the slot synchronously after the last check, so two callers never run one instance twice.
    for (let running = this.current; running; running = this.current) {
      if (!opts.supersede) return this.outcome('skipped', 'a tick is already running', startedAt, false);
      if (this.runner.stage === 'commit') return this.runner.skipAndRecord('the running tick is committing; not superseded', startedAt);
      running.controller.abort(new Superseded('superseded by a newer tick'));
      await running.done;
    }
    const controller = new AbortController();
    const handle: RunHandle = { controller, startedAt, done: Promise.resolve(undefined as never) };
    this.current = handle;
    // Whether it is on is read with the tick's other keys (one read), after its lease.
    handle.done = this.runner.run(controller, startedAt, opts.keys);
    try {
      return await handle.done;
    } finally {
      if (this.current === handle) this.current = null;
    }
  }

  /** Stop the running tick (shutdown): it stays checkpointed and resumes at the next start. */
  async stop(): Promise<void> {
    const running = this.current;
    if (running) {
      running.controller.abort(new Shutdown('daemon shutting down'));
      await running.done;
    }
    await this.runner.counters.flush().catch((err) => this.deps.log.warn({ err, world: this.name }, 'could not write the quiet-tick counters'));
  }

  /** `countsAsFailure`: the tick raised consecutive_failures (a failure, or a provider-gate skip). */
  private outcome(kind: TickOutcome['kind'], message: string, startedAt: number, resumed: boolean, countsAsFailure = false): TickOutcome {
    const generation = this.runner.generation;
    const outcome: TickOutcome = { world: this.name, kind, message, generation, durationMs: this.deps.clock.now() - startedAt, resumed };
    this.deps.events.emit('tick.finished', {
      world: this.name,
      outcome: kind,
      message,
      generation,
      resumed,
      duration_ms: outcome.durationMs,
      counts_as_failure: countsAsFailure,
    });
    this.changed();
    return outcome;
  }

  private changed(): void {
    this.deps.events.emit('status.changed', { world: this.name });
  }
}
