/**
 * The harness as a host service: channel messages in, one graph cycle each, run one at a time over
 * the committed state, every cycle persisted.
 *
 *   send(channel, text)   queue a cycle and answer at once with its id (the cycle row exists
 *                         already, status `queued`); `{ wait: true }` answers when it finished.
 *   state() / cycles()    read from the store, never wait for a running cycle.
 *   recover()             at start: pick up cycles a dead process left queued or running (a
 *                         running one resumes from its last finished node when the checkpointer
 *                         is durable).
 *   close()               stop: the running cycle is left `running` and resumes at the next start.
 *
 * State advances only on success: a failed cycle is marked `failed` with its error and the harness
 * state stays as it was before it (semantic history, queued diffs, triggers — nothing is lost).
 * Live eviction's memory writes happen only after the commit (see `storeEvictions`).
 * After a cycle the gate forwarded commits, `requestReview` asks the steering world to review now
 * (the event trigger); its own schedule is the cron trigger.
 *
 * Retention: `prune()` deletes finished cycles past `retention_days` / `retention_cycles` with
 * their world diff and history rows; it runs after a committed cycle at most once an hour.
 */
import type { Kysely } from 'kysely';
import type { ZodType } from 'zod';
import type { Clock } from '../core/clock.js';
import { SubconsciousError, describeError } from '../core/errors.js';
import type { IdGen } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import { ownedByThisProcess, ownerIsGone, processOwner } from '../core/process-identity.js';
import { MemoryCheckpointer, type Checkpointer } from '../graph/index.js';
import type { Llm } from '../llm/types.js';
import {
  channelParam,
  messageTextParam,
  type CycleRow,
  type GateReason,
  type HarnessMode,
  type HarnessStateView,
  type SendResult,
} from '../protocol/orchestration.js';
import type { OrchestrationConfig } from './config.js';
import type { OrchestrationEmit } from './events.js';
import { buildHarnessGraph } from './graph.js';
import { liveRuntime } from './live.js';
import { offlineRuntime } from './offline.js';
import type { CycleContext, HarnessRuntime } from './runtime.js';
import { initialState, startCycle } from './state.js';
import { HarnessStore, type PruneResult } from './store.js';
import type { OrchestrationTables } from './tables.js';
import type { EvictionSink, ReasoningAgent, Retriever, SteeringSource, SystemState } from './types.js';

export interface HarnessServiceDeps {
  db: Kysely<OrchestrationTables>;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  emit: OrchestrationEmit;
  settings: OrchestrationConfig | (() => OrchestrationConfig);
  /** Live mode: the quick tier's model layer. */
  llm?: Llm | undefined;
  /** Live mode: the reasoning tier (the agent runner). */
  agent?: ReasoningAgent | undefined;
  /** Live mode: the memory store's recall. */
  retriever?: Retriever | undefined;
  /** Live mode: where evicted semantic history goes (memory documents). */
  eviction?: EvictionSink | undefined;
  /** Live mode: the steering world's current directive. */
  steering?: SteeringSource | undefined;
  /** Use this runtime instead of the one the mode names (for every cycle). */
  runtime?: HarnessRuntime | undefined;
  /** Where each node's checkpoint goes (default: in memory; a store checkpointer makes a killed cycle resume). */
  checkpointer?: Checkpointer | undefined;
  /** After a forwarded cycle committed: wake the steering world (it must not block; errors are logged). */
  requestReview?: ((req: { cycle_id: string; seq: number; reasons: GateReason[] }) => void | Promise<unknown>) | undefined;
  /** Distinguishes two harnesses in one process (tests). */
  ownerTag?: string | undefined;
}

export interface SendOptions {
  /** Answer once the cycle finished (default: at once). */
  wait?: boolean | undefined;
  /** A scheduled consolidation is due: the gate forwards this cycle whatever its diffs. */
  cronDue?: boolean | undefined;
}

class Shutdown extends Error {}

const DAY_MS = 24 * 3_600_000;
/** Retention runs after a committed cycle when the last run is at least this old. */
const PRUNE_EVERY_MS = 3_600_000;

export class HarnessService {
  readonly store: HarnessStore;
  /** The runtime the mode names: live in `live`, and in `auto` where the live parts exist; else offline. */
  readonly runtime: HarnessRuntime;
  /** `auto`: the stand-ins a cycle falls back to while the local model does not answer. */
  private readonly fallback: HarnessRuntime | undefined;
  private readonly graph;
  private readonly checkpointer: Checkpointer;
  private readonly owner: string;
  private readonly controller = new AbortController();
  private readonly finished = new Map<string, Promise<void>>();
  private tail: Promise<void> = Promise.resolve();
  private queueing: Promise<void> = Promise.resolve();
  private runningId: string | null = null;
  private waiting = 0;
  private closed = false;
  private lastPruneAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: HarnessServiceDeps) {
    this.store = new HarnessStore(deps.db);
    this.checkpointer = deps.checkpointer ?? new MemoryCheckpointer(deps.clock);
    this.graph = buildHarnessGraph({ checkpointer: this.checkpointer });
    this.owner = processOwner(deps.ownerTag ?? 'harness');
    this.runtime = deps.runtime ?? this.makeRuntime();
    this.fallback = !deps.runtime && this.settings.mode === 'auto' && this.runtime.mode === 'live' ? offlineRuntime({ steering: deps.steering }) : undefined;
  }

  /**
   * The mode of the next cycle, and why when `auto` chose the stand-ins: live needs the local
   * model to answer its probe (cached for a few seconds), so a daemon with no model server still
   * answers its channels, and says so.
   */
  async nextMode(): Promise<{ mode: HarnessMode; reason: string | null }> {
    const configured = this.settings.mode;
    if (this.deps.runtime || configured !== 'auto') return { mode: this.runtime.mode, reason: null };
    const llm = this.deps.llm;
    if (!this.fallback || !llm)
      return { mode: 'offline', reason: 'auto: the memory store or the agent runner is not configured, so the offline stand-ins answer' };
    const probe = await llm.probe('local').catch((err: unknown) => ({ available: false, reason: describeError(err) }));
    if (probe.available) return { mode: 'live', reason: null };
    return { mode: 'offline', reason: `auto: the local model does not answer (${probe.reason ?? 'no reply'}), so the offline stand-ins answer until it does` };
  }

  /** The runtime a cycle queued in `mode` runs on (a live cycle whose live parts are gone fails, saying so). */
  private runtimeFor(mode: HarnessMode): HarnessRuntime {
    if (mode === this.runtime.mode) return this.runtime;
    if (mode === 'offline' && this.fallback) return this.fallback;
    if (mode === 'offline') return offlineRuntime({ steering: this.deps.steering });
    throw new SubconsciousError(
      'config_invalid',
      'This cycle was queued in live mode, which this harness cannot run now (worlds.orchestration.mode changed).',
      {
        details: { key: 'worlds.orchestration.mode' },
      },
    );
  }

  get settings(): OrchestrationConfig {
    return typeof this.deps.settings === 'function' ? this.deps.settings() : this.deps.settings;
  }

  /** Queue one cycle for a channel message. */
  async send(channel: string, text: string, opts: SendOptions = {}): Promise<SendResult> {
    if (this.closed)
      throw new SubconsciousError('conflict', 'The harness is shutting down; the message was not accepted.', { hint: 'Send it again after the restart.' });
    const ch = checked('channel', channelParam, channel);
    const body = checked('text', messageTextParam, text);
    const id = this.deps.ids();
    const cronDue = opts.cronDue === true;
    // Numbered and queued under one lock, so cycles run in the order of their numbers.
    const { mode, reason } = await this.nextMode();
    if (reason) this.deps.log.info({ cycle: id, reason }, 'harness cycle runs offline');
    const queued = this.queueing.then(async () => {
      const seq = await this.store.queue({ id, channel: ch, text: body, mode, owner: this.owner, cronDue, at: this.deps.clock.now() });
      this.emitCycle({ id, seq, status: 'queued', channel: ch });
      return { seq, done: this.enqueue(id, seq, ch, body, cronDue, mode) };
    });
    this.queueing = queued.then(
      () => undefined,
      () => undefined,
    );
    const { seq, done } = await queued;
    if (!opts.wait) return { cycle_id: id, seq, status: 'queued', cycle: null };
    await done;
    const cycle = (await this.store.cycle(id)) ?? null;
    return { cycle_id: id, seq, status: cycle?.status ?? 'failed', cycle };
  }

  /** Resolves when the cycle finished (done or failed); immediately for an unknown id. */
  async settled(cycleId: string): Promise<void> {
    await this.finished.get(cycleId);
  }

  async state(): Promise<HarnessStateView> {
    const stored = await this.store.loadState();
    const s = stored?.state ?? initialState();
    const settings = this.settings;
    const next = await this.nextMode();
    return {
      mode: next.mode,
      configured_mode: settings.mode,
      mode_reason: next.reason,
      cycle: stored?.cycle ?? 0,
      running: this.runningId,
      queued: this.waiting,
      context_utilization: s.context_utilization,
      eviction_threshold: settings.eviction_threshold,
      gate_threshold: settings.gate_threshold,
      sequential_diffs: s.sequential_diffs,
      semantic_history: s.semantic_history,
      trigger_subconscious: s.trigger_subconscious,
      cron_due: s.cron_due,
      world_signature: s.world_signature,
      subconscious_steering: s.subconscious_steering,
      long_term_memory: s.long_term_memory.length,
      last_response: s.channel_response,
      updated_at: stored?.updatedAt ?? null,
    };
  }

  cycles(limit = 20): Promise<CycleRow[]> {
    return this.store.cycles(Math.max(1, Math.min(200, Math.floor(limit))));
  }

  /**
   * Pick up cycles left queued or running by a process that is gone (or by an earlier harness
   * in this process). Cycles of a live process elsewhere are left to it. Returns how many.
   */
  async recover(): Promise<number> {
    let n = 0;
    for (const c of await this.store.open()) {
      if (this.finished.has(c.id)) continue;
      // Ours or an earlier harness's in this very process (not tracked here), or a dead process's.
      const orphan = c.owner === null || ownerIsGone(c.owner) || ownedByThisProcess(c.owner);
      if (!orphan || !(await this.store.claim(c.id, c.owner, this.owner))) continue;
      this.deps.log.info({ cycle: c.id, seq: c.seq, status: c.status }, 'picking up an unfinished harness cycle');
      void this.enqueue(c.id, c.seq, c.channel, c.text, c.cronDue, c.mode);
      n++;
    }
    return n;
  }

  /** Delete finished cycles past the retention bounds (with their world diff and history rows). */
  async prune(): Promise<PruneResult> {
    const now = this.deps.clock.now();
    this.lastPruneAt = now;
    const s = this.settings;
    const result = await this.store.prune({ before: now - s.retention_days * DAY_MS, keep: s.retention_cycles });
    if (result.cycles) this.deps.log.info({ ...result }, 'harness retention: deleted old cycles');
    return result;
  }

  /** Stop taking messages and stop the running cycle (it resumes at the next start). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.controller.abort(new Shutdown('harness shutting down'));
    await this.tail;
  }

  private enqueue(id: string, seq: number, channel: string, text: string, cronDue: boolean, mode: HarnessMode): Promise<void> {
    this.waiting++;
    const done = this.tail.then(async () => {
      this.waiting--;
      if (this.controller.signal.aborted) return; // shutdown: stays queued for the next start
      this.runningId = id;
      try {
        await this.run(id, seq, channel, text, cronDue, mode);
      } finally {
        this.runningId = null;
      }
    });
    this.tail = done.catch(() => undefined);
    const settled = done.catch(() => undefined);
    this.finished.set(id, settled);
    void settled.then(() => this.finished.delete(id));
    return settled;
  }

  private async run(id: string, seq: number, channel: string, text: string, cronDue: boolean, mode: HarnessMode): Promise<void> {
    const { clock, log } = this.deps;
    const threadId = `orchestration:${id}`;
    let path: SystemState['path'] = [];
    try {
      await this.store.markRunning(id, clock.now());
      this.emitCycle({ id, seq, status: 'running', channel });
      const stored = await this.store.loadState();
      const initial = startCycle(stored?.state ?? initialState(), { cycle_id: id, channel, text }, seq, {
        cronDue,
        now: clock.now(),
        consolidateEveryMs: this.settings.consolidation_minutes * 60_000,
      });
      const ctx: CycleContext = { runtime: this.runtimeFor(mode), settings: this.settings, now: () => clock.now(), signal: this.controller.signal };
      const result = await this.graph.run(initial, { threadId, ctx, signal: this.controller.signal });
      const state = result.state;
      path = state.path;
      await this.store.commit({ id, seq, state, expectedVersion: stored?.version ?? 0, at: clock.now() });
      await this.checkpointer.prune(threadId).catch(() => undefined);
      await this.storeEvictions(state, (stored?.version ?? 0) + 1, ctx);
      this.emitCycle({ id, seq, status: 'done', channel, path, forwarded: !!state.gated_world_summary, evicted: state.evictions.length });
      log.info({ cycle: id, seq, path: path.join('>'), resumed: result.resumed }, 'harness cycle finished');
      if (state.gated_world_summary) this.askForReview(id, seq, state.gated_world_summary.reasons);
      if (clock.now() - this.lastPruneAt >= PRUNE_EVERY_MS) {
        await this.prune().catch((err: unknown) => log.warn({ err: describeError(err) }, 'harness retention failed; it is tried again in an hour'));
      }
    } catch (err) {
      if (this.controller.signal.aborted && this.controller.signal.reason instanceof Shutdown) {
        log.info({ cycle: id, seq }, 'harness cycle stopped by shutdown; it resumes at the next start');
        return;
      }
      const message = describeError(err);
      await this.checkpointer.prune(threadId).catch(() => undefined);
      await this.store.fail(id, message, clock.now());
      this.emitCycle({ id, seq, status: 'failed', channel, path, error: message });
      log.warn({ cycle: id, seq, err: message }, 'harness cycle failed; the harness state is unchanged');
    }
  }

  /**
   * Live: write the committed state's evicted traces to the memory store, then drop them from the
   * state. A failing store keeps them there (the next committed cycle writes them again, in place);
   * the cycle itself is done either way.
   */
  private async storeEvictions(state: SystemState, version: number, ctx: CycleContext): Promise<void> {
    const docs = state.unstored_evictions ?? [];
    if (!docs.length || !ctx.runtime.storeEvicted) return;
    const { log, clock } = this.deps;
    try {
      await ctx.runtime.storeEvicted(docs, ctx);
      // When another commit got in first it carries these docs and writes them again, in place.
      await this.store.replaceState({ ...state, unstored_evictions: [] }, version, clock.now());
    } catch (err) {
      log.warn({ err: describeError(err), docs: docs.length }, 'storing evicted traces in memory failed; they stay in the harness state for the next cycle');
    }
  }

  private askForReview(id: string, seq: number, reasons: GateReason[]): void {
    this.deps.emit('orchestration.review_requested', { cycle_id: id, seq, reasons });
    if (!this.deps.requestReview) return;
    try {
      const r = this.deps.requestReview({ cycle_id: id, seq, reasons });
      if (r && typeof (r as Promise<unknown>).catch === 'function') {
        (r as Promise<unknown>).catch((err: unknown) => this.deps.log.warn({ err: describeError(err) }, 'steering review request failed'));
      }
    } catch (err) {
      this.deps.log.warn({ err: describeError(err) }, 'steering review request failed');
    }
  }

  private emitCycle(c: {
    id: string;
    seq: number;
    status: 'queued' | 'running' | 'done' | 'failed';
    channel: string;
    path?: SystemState['path'];
    forwarded?: boolean;
    evicted?: number;
    error?: string;
  }): void {
    this.deps.emit('orchestration.cycle', {
      cycle_id: c.id,
      seq: c.seq,
      status: c.status,
      channel: c.channel,
      path: c.path ?? [],
      forwarded: c.forwarded ?? false,
      evicted: c.evicted ?? 0,
      error: c.error ?? null,
    });
  }

  private makeRuntime(): HarnessRuntime {
    if (this.settings.mode === 'offline') return offlineRuntime({ steering: this.deps.steering });
    const { llm, agent, retriever, eviction } = this.deps;
    if (this.settings.mode === 'auto' && (!llm || !agent || !retriever || !eviction)) return offlineRuntime({ steering: this.deps.steering });
    const missing = [!llm && 'the model layer', !agent && 'the agent runner', !retriever && 'memory recall', !eviction && 'memory storage'].filter(Boolean);
    if (missing.length || !llm || !agent || !retriever || !eviction) {
      throw new SubconsciousError('config_invalid', `worlds.orchestration.mode = "live" needs ${missing.join(', ')}, which this host did not provide.`, {
        hint: 'Set [worlds.orchestration] mode = "offline", or run the harness where the memory store and the agent runner are configured.',
        details: { key: 'worlds.orchestration.mode' },
      });
    }
    return liveRuntime({ llm, agent, retriever, eviction, steering: this.deps.steering, log: this.deps.log });
  }
}

function checked<T>(field: string, schema: ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new SubconsciousError('invalid_params', `orchestration.send: ${field}: ${r.error.issues[0]?.message ?? 'invalid'}`, { details: { field } });
}
