/**
 * One tick of one world (DESIGN.md "The one idea"):
 *
 *   lease → timeout guard → rate-cap halt
 *     → observe ─┬─ (quiet) ─────────────────────────────────► commit
 *                └─► prepare_context ─► provider gate + reflect ─► commit
 *     → superseded-generation check → status update
 *
 * Quiet and busy ticks take the same path through the checks: the commit stage refuses a stale
 * generation or a lost lease in both. Only the busy path is checkpointed (a crash resumes it
 * from its last finished stage); a quiet tick that crashes simply observes again.
 */
import { SubconsciousError, describeError, isSubconsciousError, untilAborted, type Emitter } from '../core/index.js';
import { END, START, StateGraph } from '../graph/index.js';
import type { EngineEvents } from '../protocol/engine.js';
import { GateClosed, modelErrorKind, type ProviderGate } from './gate.js';
import { LEASE_TTL_MS, type TickLease } from './lease.js';
import { LeaseLost, keepLease } from './lease-keeper.js';
import type { QuietCounters } from './quiet-counters.js';
import type { InstanceState, WorldKeys } from './state.js';
import type { EngineKeys, OpenTick } from './status.js';
import type { AbandonReason, CommitSummary, Observation, TickContext, TickOutcome, World, WorldState } from './types.js';
import type { EngineDeps } from './instance.js';

export class Superseded extends Error {}
/** The reason a finished tick's signal is aborted with (its timers stop): one shared error, not one per tick. */
const TICK_FINISHED = new SubconsciousError('cancelled', 'tick finished');
export class Shutdown extends Error {}

interface TickState {
  observation?: Observation<unknown>;
  context?: unknown;
  reflection?: unknown;
  summary?: CommitSummary;
}

type Stage = 'observe' | 'prepare_context' | 'reflect' | 'commit';

export class TickRunner {
  /** The stage the running tick is in; a committing tick is never superseded (its effects are real). */
  stage: Stage | null = null;
  /** The generation of the lease last taken; a tick of an older one never commits. */
  generation = 0;
  private readonly graph;

  constructor(
    private readonly world: World,
    private readonly deps: EngineDeps,
    private readonly state: InstanceState,
    private readonly keys: WorldKeys<EngineKeys>,
    private readonly lease: TickLease,
    private readonly gate: ProviderGate,
    private readonly tickTimeoutMs: number,
    private readonly outcome: (kind: TickOutcome['kind'], message: string, startedAt: number, resumed: boolean, countsAsFailure?: boolean) => TickOutcome,
    private readonly events: Emitter<EngineEvents>,
    /** Whether the instance is on, from its keys (read once per tick, with the rest). */
    private readonly enabled: (keys: Partial<EngineKeys>) => boolean,
    readonly counters: QuietCounters,
  ) {
    this.graph = this.buildGraph();
  }

  get name(): string {
    return this.keys.world;
  }

  async run(controller: AbortController, startedAt: number, knownKeys?: Partial<EngineKeys>): Promise<TickOutcome> {
    if (this.world.probe) {
      const quiet = await this.probeQuiet(controller, startedAt, knownKeys);
      if (quiet) return quiet;
    }
    const { clock, log } = this.deps;
    const lease = await this.lease.acquire().catch((err) => {
      log.error({ err, world: this.name }, 'could not take the tick lease');
      return null;
    });
    if (!lease) {
      const holder = await this.lease.currentHolder().catch(() => null);
      return { ...(await this.skipAndRecord(tickLockHeld(holder), startedAt)), retryAfterMs: LEASE_RETRY_MS };
    }
    this.generation = lease.generation;
    const stopRenewal = keepLease({ lease: this.lease, clock, log, world: this.name, tick: controller, committing: () => this.stage === 'commit' });
    let resumed = false;
    let ctx: TickContext | undefined;
    let openWritten = false;
    let usedGraph = false;
    let observed: Observation<unknown> | undefined;
    try {
      // Under the lease the keys come from the store, even when kept in memory (a full tick is rare).
      const keys = this.counters.overlay(await this.keys.all(true));
      if (!this.enabled(keys)) return this.outcome('skipped', 'disabled', startedAt, false);
      const halted = await this.gate.haltReason(keys.halt);
      if (halted) return this.skipAndRecord(`halted: ${halted}`, startedAt);

      const open = keys.open_tick ?? null;
      resumed = open !== null;
      openWritten = resumed;
      const tick: OpenTick = open ?? { tickId: this.deps.ids(), startedAt, since: keys.last_tick_at ?? null };
      ctx = this.context(tick, lease.generation, controller.signal, resumed);
      this.events.emit('tick.started', { world: this.name, generation: lease.generation, resumed });
      log.debug({ world: this.name, generation: lease.generation, resumed }, 'tick started');
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
          // Quiet: nothing to reflect on, nothing worth checkpointing — but the same commit checks.
          if (controller.signal.aborted) throw controller.signal.reason;
          result = { observation, summary: await this.commit(ctx, { observation }) };
        } else {
          await this.keys.set('open_tick', tick);
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
      if (!controller.signal.aborted) controller.abort(TICK_FINISHED);
      stopRenewal();
      await this.lease.release().catch((err) => log.warn({ err, world: this.name }, 'could not release the tick lease'));
    }
  }

  /**
   * The world's read-only probe, before any lease: a tick it finds surely quiet ends here (keys
   * read, the probe's reads, nothing written; its counters wait in memory like any quiet tick's).
   * Null: run the full tick under the lease — also when the tick has an open tick to resume, is
   * halted, or the probe failed (the full tick then reports what is wrong).
   */
  private async probeQuiet(controller: AbortController, startedAt: number, knownKeys?: Partial<EngineKeys>): Promise<TickOutcome | null> {
    const { signal } = controller;
    let tick: OpenTick;
    let keys: Partial<EngineKeys>;
    let summary: string | null;
    const generation = this.generation;
    try {
      keys = knownKeys ?? this.counters.overlay(await this.keys.all());
      if (!this.enabled(keys)) return this.outcome('skipped', 'disabled', startedAt, false);
      if (keys.open_tick || keys.halt) return null;
      tick = { tickId: this.deps.ids(), startedAt, since: keys.last_tick_at ?? null };
      this.stage = 'observe';
      summary = await this.world.probe!(this.context(tick, generation, signal, false));
    } catch (err) {
      if (signal.aborted) return this.probeStopped(signal.reason, startedAt);
      this.deps.log.debug({ err, world: this.name }, 'probe failed; running the full tick');
      return null;
    } finally {
      this.stage = null;
    }
    if (signal.aborted || generation !== this.generation) return this.probeStopped(signal.reason, startedAt);
    if (summary === null) return null;
    this.events.emit('tick.started', { world: this.name, generation, resumed: false });
    try {
      await this.succeed(tick, keys, { summary }, true, false, false);
    } catch (err) {
      // Its one write (the status it changed) failed: the full tick runs and reports the store's error.
      this.deps.log.debug({ err, world: this.name }, 'could not record a probed quiet tick; running the full tick');
      return null;
    }
    return this.outcome('quiet', summary, startedAt, false);
  }

  /** A probe stopped by shutdown or a newer tick: nothing was written, nothing is left open. */
  private async probeStopped(reason: unknown, startedAt: number): Promise<TickOutcome> {
    if (reason instanceof Shutdown) return this.outcome('skipped', 'stopped by shutdown', startedAt, false);
    await this.keys.set('last_outcome', 'superseded').catch(() => undefined);
    return this.outcome('superseded', 'superseded by a newer tick; result discarded', startedAt, false);
  }

  /** A skip a person should be able to see (why did Run now do nothing?): kept in status. */
  async skipAndRecord(message: string, startedAt: number): Promise<TickOutcome> {
    await this.keys.setMany({ last_outcome: 'skipped', last_summary: message }).catch(() => undefined);
    return this.outcome('skipped', message, startedAt, false);
  }

  /**
   * The commit stage, for quiet and busy ticks alike. The superseded-generation check: a stale tick
   * never commits, nor one whose lease another worker holds now (it may be resuming this very tick).
   */
  private async commit(ctx: TickContext, state: TickState): Promise<CommitSummary> {
    if (ctx.generation !== this.generation || abortedBy(ctx.signal, Superseded)) throw new Superseded('superseded before commit');
    // A quiet tick only checks the lease (a read; the keeper renews a long tick), a busy one extends it.
    const held = state.observation!.quiet && state.reflection === undefined ? await this.lease.held() : await this.lease.renew();
    if (!held) throw new LeaseLost('the tick lease was lost to another worker before commit');
    this.stage = 'commit';
    ctx.tainted = state.observation!.tainted;
    const input = state.reflection === undefined ? { observation: state.observation! } : { observation: state.observation!, reflection: state.reflection };
    return this.world.commit(ctx, input);
  }

  private buildGraph() {
    const world = this.world;
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
          await this.gate.open();
          return { reflection: await untilAborted(world.reflect(ctx, s.context, s.observation!), ctx.signal) };
        })
        .addNode('commit', async (s, ctx) => ({ summary: await this.commit(ctx, s) }))
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
    const updates: Partial<EngineKeys> = { last_tick_at: open.startedAt, total_ticks: (keys.total_ticks ?? 0) + 1 };
    if (keys.consecutive_failures) updates.consecutive_failures = 0;
    if (keys.last_outcome !== outcome) updates.last_outcome = outcome;
    if (keys.last_summary !== summary.summary) updates.last_summary = summary.summary;
    if (keys.last_error) updates.last_error = null;
    if (openWritten) updates.open_tick = null;
    await this.counters.record(updates);
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
    const cause: unknown = signal.aborted ? signal.reason : undefined;
    const tickId = ctx?.tickId;
    const observation = observed ?? (ctx ? await this.loadObservation(tickId) : undefined);
    // Shutdown: leave the tick open and checkpointed; the next start resumes it.
    if (cause instanceof Shutdown) return this.outcome('skipped', 'stopped by shutdown; resumes at next start', startedAt, resumed);
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
      if (openWritten) await this.keys.set('open_tick', null);
      await this.deps.checkpointer.prune(this.threadId(tickId)).catch(() => undefined);
    }
    if (reason === 'superseded') {
      await this.keys.set('last_outcome', 'superseded');
      return this.outcome('superseded', 'superseded by a newer tick; result discarded', startedAt, resumed);
    }
    const extra = this.world.hint?.(error);
    const halt = this.gate.haltFor(error, describeError(error));
    const message = [
      describeError(error),
      halt ? 'The world is halted until its model or provider changes, or a person clears the halt (subconscious.clear_halt).' : '',
      extra ?? '',
    ]
      .filter(Boolean)
      .join(' ');
    const failures = ((await this.keys.get('consecutive_failures')) ?? 0) + 1;
    const kind = error instanceof GateClosed ? 'skipped' : 'failed';
    const updates: Partial<EngineKeys> = { consecutive_failures: failures, last_outcome: kind, last_error: message };
    if (halt) updates.halt = { ...halt, reason: message };
    if (!(error instanceof GateClosed) && modelErrorKind(error) === 'unreachable')
      updates.provider = { available: false, reason: message, at: this.deps.clock.now() };
    await this.keys.setMany(updates);
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

  private context(open: OpenTick, generation: number, signal: AbortSignal, resumed: boolean): TickContext {
    const { llm, clock, ids, log } = this.deps;
    const { state, name } = this;
    let child: TickContext['log'] | undefined;
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
      llm,
      clock,
      ids,
      state: worldState,
      // Made when first used: a quiet tick logs nothing, and a child logger costs.
      get log() {
        return (child ??= log.child({ world: name, tick: open.tickId }));
      },
    };
    return ctx;
  }

  private threadId(tickId: string): string {
    return `${this.name}:${tickId}`;
  }
}

function abortedBy(signal: AbortSignal, type: new (...args: never[]) => Error): boolean {
  return signal.aborted && signal.reason instanceof type;
}

/** A tick skipped for the lock tries again this soon: a dead holder's lease lapses within `LEASE_TTL_MS`. */
export const LEASE_RETRY_MS = LEASE_TTL_MS / 2;

/** Why a tick was skipped for the lock, and what (not) to do about it. */
export function tickLockHeld(holder: string | null): string {
  return (
    `tick lock held${holder ? ` by ${holder}` : ''}: another tick of this world is running (here or in another subconscious on this database), ` +
    `so this one was skipped. Nothing to do: the next tick runs after it; a lock left by a process that died expires within ${Math.round(LEASE_TTL_MS / 1000)} s.`
  );
}
