/**
 * One world, run by the generic tick (DESIGN.md "The one idea"):
 *
 *   lock → timeout guard → rate-cap halt
 *     → observe ─┬─ (quiet) ─────────────────────────────────► commit
 *                └─► prepare_context ─► provider gate + reflect ─► commit
 *     → superseded-generation check → status update
 *
 * Every world gets the invariants from here: quiet ticks make no model call; state advances only
 * on success; a superseded tick is discarded (not a failure); a killed tick resumes from its last
 * finished stage; a permanent rate-cap error halts the world until its provider or model changes.
 */
import { SubconsciousError, describeError, isSubconsciousError } from '../core/errors.js';
import { untilAborted } from '../core/abort.js';
import { END, START, StateGraph, type Checkpointer } from '../graph/index.js';
import { InstanceState } from '../store/instance-state.js';
import { processOwner } from '../core/process-identity.js';
import { LEASE_TTL_MS, TickLease } from './lease.js';
import { readStatus, type EngineKeys, type OpenTick } from './status.js';
import type { AbandonReason, CommitSummary, EngineServices, InstanceStatus, Observation, TickContext, TickOutcome, World, WorldState } from './types.js';
import type { ModelRole } from '../llm/index.js';

export const DEFAULT_TICK_TIMEOUT_MS = 30 * 60_000;

export interface EngineDeps extends EngineServices {
  checkpointer: Checkpointer;
}

export interface InstanceOptions {
  /** Default: the world's kind. */
  name?: string;
  tickTimeoutMs?: number;
  /** Whether the instance runs when nothing was stored yet (the UI's toggle overrides it). */
  enabledByDefault?: boolean;
  /**
   * Why the instance is off whatever the toggle says (e.g. `[heartbeat] enabled = false` in the
   * config file): it never ticks, and switching it on is refused with this reason.
   */
  disabledBy?: string | undefined;
  /** Distinguishes lease holders within one process (tests run two "processes" in one). */
  holderTag?: string;
}

export interface TickOptions {
  /** Discard a tick that is running now and start over (seed 1's overlap guard). */
  supersede?: boolean;
}

interface TickState {
  observation?: Observation<unknown>;
  context?: unknown;
  reflection?: unknown;
  summary?: CommitSummary;
}

interface RunHandle {
  controller: AbortController;
  startedAt: number;
  done: Promise<TickOutcome>;
}

class Superseded extends Error {}
/** Another worker holds this world's lease now and may be resuming this very tick: hands off. */
class LeaseLost extends Error {}
class Shutdown extends Error {}
class GateClosed extends SubconsciousError {}

export class Instance {
  readonly name: string;
  private readonly state: InstanceState;
  private readonly lease: TickLease;
  private readonly tickTimeoutMs: number;
  private readonly enabledByDefault: boolean;
  private readonly disabledBy: string | null;
  private current: RunHandle | null = null;
  /** The stage the running tick is in; a committing tick is never superseded (its effects are real). */
  private stage: string | null = null;
  private generation = 0;
  private readonly graph;

  constructor(
    readonly world: World,
    private readonly deps: EngineDeps,
    opts: InstanceOptions = {},
  ) {
    this.name = opts.name ?? world.kind;
    this.tickTimeoutMs = opts.tickTimeoutMs ?? DEFAULT_TICK_TIMEOUT_MS;
    this.enabledByDefault = opts.enabledByDefault ?? true;
    this.disabledBy = opts.disabledBy ?? null;
    const now = () => deps.clock.now();
    this.state = new InstanceState(deps.db, now);
    this.lease = new TickLease(deps.db, this.name, processOwner(opts.holderTag ?? this.name), now);
    this.graph = this.buildGraph();
  }

  /** Read from the store only: never waits for a running tick. */
  status(): Promise<InstanceStatus> {
    return readStatus(this.deps.db, this.name, {
      intervalMinutes: this.world.intervalMinutes(),
      enabledByDefault: this.enabledByDefault,
      disabledBy: this.disabledBy,
      now: this.deps.clock.now(),
    });
  }

  get running(): boolean {
    return this.current !== null;
  }

  /** The running tick is committing: its effects are real, so nothing may supersede it. */
  get committing(): boolean {
    return this.current !== null && this.stage === 'commit';
  }

  /** When the running tick started (ms), or null. */
  get runningSince(): number | null {
    return this.current?.startedAt ?? null;
  }

  async isEnabled(): Promise<boolean> {
    return this.enabledFrom({ enabled: await this.state.get<boolean>(this.name, 'enabled') });
  }

  /** The same answer from keys already read (the scheduler's pass). */
  enabledFrom(keys: Partial<Pick<EngineKeys, 'enabled'>>): boolean {
    return this.disabledBy === null && (keys.enabled ?? this.enabledByDefault);
  }

  async setEnabled(enabled: boolean): Promise<void> {
    if (enabled && this.disabledBy !== null) {
      throw new SubconsciousError('forbidden', `${this.name} cannot be switched on here: ${this.disabledBy}.`, {
        hint: 'Change that setting and restart the daemon.',
      });
    }
    await this.state.set(this.name, 'enabled', enabled);
    this.emit('status.changed', {});
  }

  /**
   * Lift a rate-cap halt by hand: the person changed what made the requests too large (a lower
   * context budget) rather than the model. False when the world was not halted.
   */
  async clearHalt(): Promise<boolean> {
    const halt = await this.state.get<EngineKeys['halt']>(this.name, 'halt');
    if (!halt) return false;
    await this.state.setMany(this.name, { halt: null, last_outcome: null, last_summary: 'halt cleared by hand; the next tick tries again' });
    this.deps.log.info({ world: this.name, reason: halt.reason }, 'rate-cap halt cleared by hand');
    this.emit('status.changed', {});
    return true;
  }

  /** Engine keys for the scheduler (last tick, next tick, open tick). */
  async keys(): Promise<Partial<EngineKeys>> {
    return (await this.state.all(this.name)) as Partial<EngineKeys>;
  }

  async setNextTickAt(at: number | null): Promise<void> {
    await this.state.set(this.name, 'next_tick_at', at);
  }

  /** Run one tick. Resolves with its outcome; never rejects. */
  async tick(opts: TickOptions = {}): Promise<TickOutcome> {
    const startedAt = this.deps.clock.now();
    // Claim the slot synchronously after the last check, so two callers never run one instance twice.
    for (let running = this.current; running; running = this.current) {
      if (!opts.supersede) return this.outcome('skipped', 'a tick is already running', startedAt, false);
      if (this.stage === 'commit') return this.skipAndRecord('the running tick is committing; not superseded', startedAt);
      running.controller.abort(new Superseded('superseded by a newer tick'));
      await running.done;
    }
    const controller = new AbortController();
    const handle: RunHandle = { controller, startedAt, done: Promise.resolve(undefined as never) };
    this.current = handle;
    handle.done = (async () => {
      if (!(await this.isEnabled())) return this.outcome('skipped', 'disabled', startedAt, false);
      return this.run(controller, startedAt);
    })();
    try {
      return await handle.done;
    } finally {
      if (this.current === handle) this.current = null;
    }
  }

  /** Stop the running tick (shutdown): it stays checkpointed and resumes at the next start. */
  async stop(): Promise<void> {
    const running = this.current;
    if (!running) return;
    running.controller.abort(new Shutdown('daemon shutting down'));
    await running.done;
  }

  private async run(controller: AbortController, startedAt: number): Promise<TickOutcome> {
    const { clock, log } = this.deps;
    const lease = await this.lease.acquire().catch((err) => {
      log.error({ err, world: this.name }, 'could not take the tick lease');
      return null;
    });
    if (!lease) {
      const holder = await this.lease.currentHolder().catch(() => null);
      return this.skipAndRecord(`tick lock held${holder ? ` by ${holder}` : ''}`, startedAt);
    }
    this.generation = lease.generation;
    const generation = lease.generation;
    const stopRenewal = this.keepLease(controller);
    let resumed = false;
    let ctx: TickContext | undefined;
    let openWritten = false;
    let usedGraph = false;
    let observed: Observation<unknown> | undefined;
    try {
      const keys = await this.keys();
      const halted = await this.checkHalt(keys.halt ?? null);
      if (halted) return this.skipAndRecord(`halted: ${halted}`, startedAt);

      const open = keys.open_tick ?? null;
      resumed = open !== null;
      openWritten = resumed;
      const tick: OpenTick = open ?? { tickId: this.deps.ids(), startedAt, since: keys.last_tick_at ?? null };
      ctx = this.context(tick, generation, controller.signal, resumed);
      this.emit('tick.started', { generation, resumed });
      log.debug({ world: this.name, generation, resumed }, 'tick started');
      void clock.sleep(this.tickTimeoutMs, controller.signal).then(
        () => controller.abort(new SubconsciousError('tick_timeout', `tick ran past its ${Math.round(this.tickTimeoutMs / 60_000)}-minute timeout`)),
        () => undefined,
      );

      let result: TickState;
      if (resumed) {
        // A tick left open by a crash: continue from its last finished stage.
        usedGraph = true;
        result = await this.graph.invoke({}, { threadId: this.threadId(tick.tickId), ctx, signal: controller.signal });
      } else {
        this.stage = 'observe';
        const observation = await this.world.observe(ctx);
        observed = observation;
        ctx.tainted = observation.tainted;
        if (observation.quiet) {
          // Quiet fast path: nothing to reflect on, nothing worth checkpointing (a crash just re-observes).
          if (controller.signal.aborted) throw controller.signal.reason;
          this.stage = 'commit';
          result = { observation, summary: await this.world.commit(ctx, { observation }) };
        } else {
          await this.state.set(this.name, 'open_tick', tick);
          openWritten = true;
          usedGraph = true;
          result = await this.graph.invoke({ observation }, { threadId: this.threadId(tick.tickId), ctx, signal: controller.signal });
        }
      }
      const quiet = result.observation?.quiet ?? false;
      const summary = result.summary ?? { summary: 'committed' };
      await this.succeed(tick, keys, summary, quiet, openWritten, usedGraph);
      return this.outcome(quiet ? 'quiet' : 'committed', summary.summary, startedAt, resumed);
    } catch (err) {
      return await this.fail(err, controller.signal, ctx, startedAt, resumed, openWritten, observed);
    } finally {
      this.stage = null;
      if (!controller.signal.aborted) controller.abort(new SubconsciousError('cancelled', 'tick finished'));
      stopRenewal();
      await this.lease.release().catch((err) => log.warn({ err, world: this.name }, 'could not release the tick lease'));
    }
  }

  private buildGraph() {
    const world = this.world;
    const superseded = (ctx: TickContext) => ctx.generation !== this.generation || abortedBy(ctx.signal, Superseded);
    return (
      new StateGraph<TickState, TickContext>()
        // A stage that ignores its signal must not hold the tick past its timeout: stop waiting for
        // prepare and reflect (their late results are discarded). Observe writes bookkeeping (rows
        // a later stage or abandon() closes) and commit has real effects: both always finish.
        .addNode('observe', async (_s, ctx) => {
          this.stage = 'observe';
          return { observation: await world.observe(ctx) };
        })
        .addNode('prepare_context', async (s, ctx) => {
          this.stage = 'prepare_context';
          ctx.tainted = s.observation!.tainted;
          return { context: await untilAborted(world.prepareContext(ctx, s.observation!), ctx.signal) };
        })
        .addNode('reflect', async (s, ctx) => {
          this.stage = 'reflect';
          ctx.tainted = s.observation!.tainted; // a resumed tick may start here
          await this.gate(ctx);
          return { reflection: await untilAborted(world.reflect(ctx, s.context, s.observation!), ctx.signal) };
        })
        .addNode('commit', async (s, ctx) => {
          // The superseded-generation check: a stale tick never commits, nor one whose lease
          // another worker holds now (it may be resuming this very tick).
          if (superseded(ctx)) throw new Superseded('superseded before commit');
          if (!(await this.lease.renew())) throw new LeaseLost('the tick lease was lost to another worker before commit');
          this.stage = 'commit';
          ctx.tainted = s.observation!.tainted;
          const input = s.reflection === undefined ? { observation: s.observation! } : { observation: s.observation!, reflection: s.reflection };
          return { summary: await world.commit(ctx, input) };
        })
        .addConditionalEdges(START, (s) => (s.observation ? (s.observation.quiet ? 'commit' : 'prepare_context') : 'observe'), [
          'observe',
          'prepare_context',
          'commit',
        ])
        .addConditionalEdges('observe', (s) => (s.observation?.quiet ? 'commit' : 'prepare_context'), ['commit', 'prepare_context'])
        .addEdge('prepare_context', 'reflect')
        .addEdge('reflect', 'commit')
        .addEdge('commit', END)
        .compile({ name: `tick:${this.name}`, checkpointer: this.deps.checkpointer })
    );
  }

  /**
   * Provider gate: every role reflect needs must answer; optional roles are probed only to be
   * reported (their absence fails the work that uses them, not the tick). Kept for status.
   */
  private async gate(ctx: TickContext): Promise<void> {
    for (const role of this.world.roles) {
      const probe = await this.deps.llm.probe(role);
      await this.state.set(this.name, 'provider', { available: probe.available, reason: probe.reason ?? null, at: this.deps.clock.now() });
      if (!probe.available) {
        throw new GateClosed('model_unreachable', `the ${role} model is unavailable: ${probe.reason ?? 'no answer'}`);
      }
    }
    await this.recordOptionalModels();
    void ctx;
  }

  /** Probe the optional roles and keep the ones that did not answer for status (written on change). */
  private async recordOptionalModels(): Promise<void> {
    const optional = this.world.optionalRoles ?? [];
    if (!optional.length) return;
    const unavailable: Array<{ role: ModelRole; reason: string }> = [];
    for (const role of optional) {
      const probe = await this.deps.llm.probe(role);
      if (!probe.available) unavailable.push({ role, reason: probe.reason ?? 'no answer' });
    }
    const before = (await this.keys()).optional_unavailable ?? [];
    if (JSON.stringify(before) === JSON.stringify(unavailable)) return;
    await this.state.set(this.name, 'optional_unavailable', unavailable);
    this.emit('status.changed', {});
  }

  /** The rate-cap breaker: halted while the provider/model signature is the one that failed. */
  private async checkHalt(halt: EngineKeys['halt']): Promise<string | null> {
    if (!halt) return null;
    if (halt.signature === this.signature()) return halt.reason;
    await this.state.set(this.name, 'halt', null);
    this.deps.log.info({ world: this.name }, 'provider or model changed: rate-cap halt lifted');
    this.emit('status.changed', {});
    return null;
  }

  private signature(): string {
    return this.world.roles.map((r) => `${r}=${this.deps.llm.signature(r)}`).join(',');
  }

  /** Success: move `last_tick_at` and the counters; write only what changed (quiet ticks stay cheap). */
  private async succeed(
    open: OpenTick,
    keys: Partial<EngineKeys>,
    summary: CommitSummary,
    quiet: boolean,
    openWritten: boolean,
    usedGraph: boolean,
  ): Promise<void> {
    const outcome = quiet ? 'quiet' : 'committed';
    const updates: Record<string, unknown> = { last_tick_at: open.startedAt, total_ticks: (keys.total_ticks ?? 0) + 1 };
    if (keys.consecutive_failures) updates.consecutive_failures = 0;
    if (keys.last_outcome !== outcome) updates.last_outcome = outcome;
    if (keys.last_summary !== summary.summary) updates.last_summary = summary.summary;
    if (keys.last_error) updates.last_error = null;
    if (openWritten) updates.open_tick = null;
    await this.state.setMany(this.name, updates);
    if (usedGraph) await this.deps.checkpointer.prune(this.threadId(open.tickId));
  }

  private async fail(
    err: unknown,
    signal: AbortSignal,
    ctx: TickContext | undefined,
    startedAt: number,
    resumed: boolean,
    openWritten: boolean,
    observed: Observation<unknown> | undefined,
  ): Promise<TickOutcome> {
    const cause = signal.aborted ? signal.reason : undefined;
    const tickId = ctx?.tickId;
    const observation = observed ?? (ctx ? await this.loadObservation(tickId) : undefined);
    // Shutdown: leave the tick open and checkpointed; the next start resumes it.
    if (cause instanceof Shutdown) {
      return this.outcome('skipped', 'stopped by shutdown; resumes at next start', startedAt, resumed);
    }
    // Lease lost: the tick's rows, checkpoints and state now belong to the worker that took it —
    // also when this tick ended for another reason before its renewal loop noticed.
    const lost = await this.leaseLost(err, cause);
    if (lost) {
      this.deps.log.warn({ world: this.name }, `${lost.message}: this worker stops and leaves the tick to it`);
      return this.outcome('superseded', `${lost.message}; left to that worker`, startedAt, resumed);
    }
    const isSuperseded = err instanceof Superseded || cause instanceof Superseded;
    const reason: AbandonReason = isSuperseded ? 'superseded' : isSubconsciousError(cause, 'tick_timeout') ? 'timeout' : 'failed';
    const error = reason === 'timeout' ? cause : err;
    if (ctx) await this.abandon(ctx, reason, observation, error);
    if (tickId) {
      if (openWritten) await this.state.set(this.name, 'open_tick', null);
      await this.deps.checkpointer.prune(this.threadId(tickId)).catch(() => undefined);
    }
    if (reason === 'superseded') {
      await this.state.set(this.name, 'last_outcome', 'superseded');
      return this.outcome('superseded', 'superseded by a newer tick; result discarded', startedAt, resumed);
    }
    const message = describeError(error);
    const failures = ((await this.state.get<number>(this.name, 'consecutive_failures')) ?? 0) + 1;
    const kind = error instanceof GateClosed ? 'skipped' : 'failed';
    const updates: Record<string, unknown> = { consecutive_failures: failures, last_outcome: kind, last_error: message };
    if (isRateCap(error)) {
      updates.halt = { signature: this.signature(), reason: message, at: this.deps.clock.now() };
    }
    if (!(error instanceof GateClosed) && modelKind(error) === 'unreachable') {
      updates.provider = { available: false, reason: message, at: this.deps.clock.now() };
    }
    await this.state.setMany(this.name, updates);
    this.deps.log.warn({ world: this.name, err: message, failures }, 'tick failed');
    return this.outcome(kind, message, startedAt, resumed, true);
  }

  /** Why this tick no longer owns its lease (said by the error, or found by a renewal), or null. */
  private async leaseLost(err: unknown, cause: unknown): Promise<LeaseLost | null> {
    if (err instanceof LeaseLost) return err;
    if (cause instanceof LeaseLost) return cause;
    const held = await this.lease.renew().catch(() => true); // a store hiccup is not a lost lease
    return held ? null : new LeaseLost('the tick lease was lost to another worker');
  }

  private async abandon(ctx: TickContext, reason: AbandonReason, observation: Observation<unknown> | undefined, error: unknown): Promise<void> {
    if (!this.world.abandon) return;
    try {
      await this.world.abandon({ ...ctx, signal: new AbortController().signal }, reason, observation, error);
    } catch (err) {
      this.deps.log.error({ err, world: this.name }, 'world.abandon failed');
    }
  }

  private async loadObservation(tickId: string | undefined): Promise<Observation<unknown> | undefined> {
    if (!tickId) return undefined;
    const saved = await this.deps.checkpointer.load(this.threadId(tickId)).catch(() => null);
    return (saved?.state as TickState | undefined)?.observation;
  }

  /**
   * Renew the lease while the tick runs. A lease lost to another worker (it expired and was
   * taken) ends the tick as superseded: the other worker owns it now. A committing tick is not
   * stopped (its effects are real); the commit itself re-checks the lease before it starts.
   */
  private keepLease(controller: AbortController): () => void {
    const stop = new AbortController();
    const both = AbortSignal.any([controller.signal, stop.signal]);
    void (async () => {
      for (;;) {
        try {
          await this.deps.clock.sleep(LEASE_TTL_MS / 3, both);
        } catch {
          return;
        }
        const ok = await this.lease.renew().catch((err) => {
          this.deps.log.warn({ err, world: this.name }, 'could not renew the tick lease; trying again');
          return true; // a store hiccup is not a lost lease
        });
        if (ok || both.aborted) continue;
        this.deps.log.warn({ world: this.name }, 'tick lease lost to another worker');
        if (!this.committing) controller.abort(new LeaseLost('the tick lease was lost to another worker'));
      }
    })();
    return () => stop.abort();
  }

  private context(open: OpenTick, generation: number, signal: AbortSignal, resumed: boolean): TickContext {
    const { db, llm, clock, ids, events, log } = this.deps;
    const name = this.name;
    const state = this.state;
    const worldState: WorldState = {
      get: (key) => state.get(name, key),
      set: (key, value) => state.set(name, key, value),
    };
    const ctx: TickContext = {
      world: name,
      tickId: open.tickId,
      generation,
      startedAt: open.startedAt,
      since: open.since,
      signal,
      resumed,
      tainted: false,
      permit: (mode) => (mode === 'full' && ctx.tainted ? 'tainted' : mode),
      db,
      llm,
      clock,
      ids,
      events,
      log: log.child({ world: name, tick: open.tickId }),
      state: worldState,
    };
    return ctx;
  }

  private threadId(tickId: string): string {
    return `${this.name}:${tickId}`;
  }

  /** A skip a person should be able to see (why did Run now do nothing?): kept in status. */
  private async skipAndRecord(message: string, startedAt: number): Promise<TickOutcome> {
    await this.state.setMany(this.name, { last_outcome: 'skipped', last_summary: message }).catch(() => undefined);
    return this.outcome('skipped', message, startedAt, false);
  }

  /** `countsAsFailure`: the tick raised consecutive_failures (a failure, or a provider-gate skip). */
  private outcome(kind: TickOutcome['kind'], message: string, startedAt: number, resumed: boolean, countsAsFailure = false): TickOutcome {
    const outcome: TickOutcome = { world: this.name, kind, message, generation: this.generation, durationMs: this.deps.clock.now() - startedAt, resumed };
    this.emit('tick.finished', {
      outcome: kind,
      message,
      generation: this.generation,
      resumed,
      duration_ms: outcome.durationMs,
      counts_as_failure: countsAsFailure,
    });
    this.emit('status.changed', {});
    return outcome;
  }

  private emit(type: string, data: Record<string, unknown>): void {
    this.deps.events.emit(type, { world: this.name, ...data });
  }
}

function abortedBy(signal: AbortSignal, type: new (...args: never[]) => Error): boolean {
  return signal.aborted && signal.reason instanceof type;
}

function modelKind(err: unknown): string | undefined {
  const kind = (err as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? kind : undefined;
}

function isRateCap(err: unknown): boolean {
  return isSubconsciousError(err, 'model_rate_cap') || modelKind(err) === 'rate_cap';
}
