/**
 * What the parts of the runtimes module share (issue 18 §6): the store, the injected clock and
 * ids, the single-flight state of external bots as this process knows it, the heartbeat's
 * listeners, and the few transitions that always come with their events and listener calls —
 * a resume settled, a resume set aside before it started, a dispatch changed.
 *
 * Single-flight for an external bot (`isIdle` is synchronous, as the heartbeat asks it): a pulse
 * or a dispatch being written here, or — read from the store and kept here, refreshed whenever
 * the heartbeat reads the bot's work and on every write this process makes — a live resume (not
 * yet acknowledged: until its claim could be taken over; acknowledged: until its lease ends) or a
 * run the runtime reported running (until its lease ends).
 */
import {
  STALE_CLAIM_MS,
  type AttentionSource,
  type ControlLinesInfo,
  type DroppedJobInfo,
  type HumanAction,
  type PersonaSection,
  type RuntimeStatus,
  type SettledInfo,
} from '../bots/index.js';
import { describeError, type Clock, type IdGen, type Logger } from '../core/index.js';
import type { RuntimeDispatch, RuntimesEvents } from '../protocol/runtimes.js';
import type { RuntimesConfig } from './config.js';
import { externalOf, toDispatch, toTask } from './rows.js';
import type { DispatchRow, RuntimeStore, TaskRow } from './store.js';

export type RuntimesEmit = <K extends keyof RuntimesEvents & string>(type: K, data: RuntimesEvents[K]) => void;

interface Busy {
  until: number;
  status: 'working' | 'queued';
  taskId: string | null;
}

type Listener<T> = (info: T) => void | Promise<void>;

export interface CoreDeps {
  store: RuntimeStore;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  emit: RuntimesEmit;
  config: RuntimesConfig;
  env: NodeJS.ProcessEnv;
}

export class RuntimeCore {
  readonly pulses = new Map<string, AbortController>();
  private readonly holds = new Map<string, number>();
  private readonly busy = new Map<string, Busy[]>();
  readonly settled = new Set<Listener<SettledInfo>>();
  readonly controls = new Set<Listener<ControlLinesInfo>>();
  readonly dropped = new Set<Listener<DroppedJobInfo>>();
  readonly human = new Set<Listener<HumanAction>>();
  readonly personas = new Set<PersonaSection>();
  readonly attention = new Set<AttentionSource>();
  /** Told when a dispatch is written (the delivery loop, waiting polls). */
  readonly wake = new Set<(runtimeId: string) => void>();

  constructor(readonly d: CoreDeps) {}

  get store(): RuntimeStore {
    return this.d.store;
  }

  now(): number {
    return this.d.clock.now();
  }

  get leaseMs(): number {
    return this.d.config.lease_seconds * 1000;
  }

  // ── single-flight ───────────────────────────────────────────────────────

  isIdle(botId: string): boolean {
    return !this.pulses.has(botId) && !this.holds.has(botId) && this.live(botId).length === 0;
  }

  statusOf(botId: string): RuntimeStatus {
    const live = this.live(botId);
    const working = live.find((b) => b.status === 'working');
    if (working) return { status: 'working', queued: live.length - 1, taskId: working.taskId };
    if (live.length > 0 || this.holds.has(botId)) return { status: 'queued', queued: live.length, taskId: null };
    return { status: 'idle', queued: 0, taskId: null };
  }

  private live(botId: string): Busy[] {
    const now = this.now();
    return (this.busy.get(botId) ?? []).filter((b) => b.until > now);
  }

  /** A dispatch for this bot is being written: busy until the returned function is called. */
  hold(botId: string): () => void {
    this.holds.set(botId, (this.holds.get(botId) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const n = (this.holds.get(botId) ?? 1) - 1;
      if (n > 0) this.holds.set(botId, n);
      else this.holds.delete(botId);
    };
  }

  /** Re-read what keeps these bots busy (live resumes, running runs) from the store. */
  async refreshBusy(botIds?: readonly string[]): Promise<void> {
    const now = this.now();
    const [resumes, runs] = await Promise.all([this.store.liveResumes(botIds), this.store.liveRuns(now, botIds)]);
    const next = new Map<string, Busy[]>();
    const add = (botId: string, b: Busy) => next.set(botId, [...(next.get(botId) ?? []), b]);
    for (const r of resumes) {
      if (r.state === 'acked') add(r.bot_id, { until: Number(r.lease_until ?? 0), status: 'working', taskId: r.task_id });
      else add(r.bot_id, { until: Number(r.created_at) + STALE_CLAIM_MS, status: 'queued', taskId: r.task_id });
    }
    for (const r of runs) add(r.bot_id, { until: Number(r.lease_until ?? 0), status: 'working', taskId: r.task_id });
    if (botIds) for (const id of botIds) this.busy.delete(id);
    else this.busy.clear();
    for (const [id, list] of next) this.busy.set(id, list);
  }

  /**
   * Bots by runtime and status (`idle`, `queued`, `working`), every status listed for each
   * registered runtime (0 where no bot has it): the `subconscious_bots` gauge's external hosts.
   */
  async statusCounts(): Promise<Array<{ host: string; status: RuntimeStatus['status']; count: number }>> {
    await this.refreshBusy();
    const hosts = await this.store.hosts();
    const out: Array<{ host: string; status: RuntimeStatus['status']; count: number }> = [];
    for (const h of hosts) {
      const counts: Record<RuntimeStatus['status'], number> = { idle: 0, queued: 0, working: 0 };
      for (const b of await this.store.botsOf(h.id)) counts[this.statusOf(b.id).status]++;
      for (const [status, count] of Object.entries(counts)) out.push({ host: h.id, status: status as RuntimeStatus['status'], count });
    }
    return out;
  }

  // ── events and listeners ────────────────────────────────────────────────

  emitDispatch(row: DispatchRow | undefined): RuntimeDispatch | undefined {
    if (!row) return undefined;
    const dispatch = this.wire(row);
    this.d.emit('runtime.dispatch_changed', { dispatch });
    return dispatch;
  }

  wire(row: DispatchRow): RuntimeDispatch {
    return toDispatch(
      row,
      { bot: externalOf(row.bot_id), thread: externalOf(row.thread_id), task: row.task_id === null ? null : externalOf(row.task_id) },
      this.d.config.lease_seconds,
    );
  }

  async tell<T>(listeners: Set<Listener<T>>, info: T): Promise<void> {
    for (const l of [...listeners]) {
      try {
        await l(info);
      } catch (err) {
        this.d.log.warn({ err: describeError(err) }, 'a heartbeat listener of an external runtime threw');
      }
    }
  }

  async humanAction(a: Omit<HumanAction, 'at'>): Promise<void> {
    await this.tell(this.human, { ...a, at: this.now() });
  }

  /** A task's end, told as the built-in host tells a settle (cooldown, the log, the bot marked due). */
  async tellSettled(task: TaskRow, opts: { heartbeat: boolean; messageId: string | null; usage?: SettledInfo['usage'] }): Promise<void> {
    await this.tell(this.settled, {
      task: toTask(task),
      botId: task.bot_id,
      threadId: task.thread_id,
      messageId: opts.messageId ?? task.message_id ?? '',
      source: opts.heartbeat ? 'heartbeat' : 'external',
      heartbeat: opts.heartbeat,
      outcome: null,
      usage: opts.usage ?? { calls: 0, inputTokens: 0, outputTokens: 0 },
    });
  }

  /**
   * A resume acknowledged and now over: its dispatch in its final state, the heartbeat told (it
   * settles the bot: cooldown, the log). `task` is the task as it stands after.
   */
  async settleResume(dispatch: DispatchRow, state: 'done' | 'failed' | 'expired' | 'preempted', task: TaskRow, why: string | null = null): Promise<void> {
    const now = this.now();
    const ended = await this.store.updateDispatch(
      dispatch.id,
      { state, finished_at: now, lease_until: null, next_attempt_at: null, ...(why ? { last_error: why } : {}) },
      { states: ['acked'] },
    );
    if (!ended) return; // another writer settled it first
    this.emitDispatch(ended);
    await this.refreshBusy([dispatch.bot_id]);
    const usage = await this.usageSince(task.id, Number(dispatch.acked_at ?? dispatch.created_at));
    await this.tellSettled(task, { heartbeat: true, messageId: dispatch.message_id, usage });
  }

  /**
   * A resume not acknowledged yet and no longer wanted: its dispatch cancelled, the claim
   * released and (nothing ran) its attempt refunded, the heartbeat told (the job was dropped).
   * One nobody took within `dispatch_ttl_seconds` expires instead, its attempt kept counted.
   */
  async dropResume(
    dispatch: DispatchRow,
    reason: DroppedJobInfo['reason'],
    why: string,
    opts: { state?: 'cancelled' | 'expired'; refund?: boolean } = {},
  ): Promise<boolean> {
    const now = this.now();
    const cancelled = await this.store.updateDispatch(
      dispatch.id,
      { state: opts.state ?? 'cancelled', finished_at: now, next_attempt_at: null, last_error: why },
      { states: ['pending', 'delivered'] },
    );
    if (!cancelled) return false;
    this.emitDispatch(cancelled);
    let refunded = false;
    if (dispatch.task_id && dispatch.claim_token) {
      const released = await this.store.releaseClaim(dispatch.task_id, { token: dispatch.claim_token, refund: opts.refund ?? true });
      refunded = released !== undefined && (opts.refund ?? true);
    }
    await this.refreshBusy([dispatch.bot_id]);
    await this.tell(this.dropped, {
      botId: dispatch.bot_id,
      threadId: dispatch.thread_id,
      taskId: dispatch.task_id ?? '',
      messageId: dispatch.message_id ?? dispatch.id,
      source: 'heartbeat',
      heartbeat: true,
      reason,
      refunded,
    });
    return true;
  }

  /** Model calls and tokens of the task's runs reported since `since` (a resume's cost). */
  private async usageSince(taskId: string, since: number): Promise<SettledInfo['usage']> {
    const rows = await this.store.db
      .selectFrom('runtimes_runs')
      .select(['calls', 'input_tokens', 'output_tokens'])
      .where('task_id', '=', taskId)
      .where('updated_at', '>=', since)
      .execute();
    return rows.reduce(
      (u, r) => ({
        calls: u.calls + Number(r.calls),
        inputTokens: u.inputTokens + Number(r.input_tokens),
        outputTokens: u.outputTokens + Number(r.output_tokens),
      }),
      { calls: 0, inputTokens: 0, outputTokens: 0 },
    );
  }

  kick(runtimeId: string): void {
    for (const w of [...this.wake]) w(runtimeId);
  }
}
