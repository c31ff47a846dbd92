/**
 * The bot runtime (issue 11 §2, seed 2 §5.1 and §7): one run per bot at a time, a per-bot queue
 * with priorities, dispatch (new task, or a claimed task reused by the heartbeat), begin (claim
 * and status re-checked), settle with seed 2 §7.5's precedence and control lines, preemption by
 * people, stop and shutdown. Which registries make a bot busy, and why there is no idle gap
 * between them, is in `single-flight.ts`.
 */
import {
  continuationNote,
  type AgentRunner,
  type Approval,
  type ApprovalStore,
  type CancelCause,
  type ControlLine,
  type Run,
  type RunOptions,
  type RunOutcome,
} from '../agent/index.js';
import { SubconsciousError, describeError, processOwner, type Clock, type IdGen, type Logger } from '../core/index.js';
import { cleanLine } from '../llm/index.js';
import type { Bot, Task, TaskSource, TaskStatus, Thread } from '../protocol/bots.js';
import type { Coordinator, Job as CoordJob } from '../coordination/index.js';
import type { ApprovalLinks } from './approval-links.js';
import type { BotStore } from './bot-store.js';
import type { BotsConfig } from './config.js';
import type { BotsEmit } from './events.js';
import type { NoteStore } from './note-store.js';
import { taskTitle, type PersonaSection } from './prompt.js';
import { buildRunOptions } from './run-options.js';
import { ProgressCheckpoint } from './progress.js';
import { answerOf, answeredOutcome, replyText, type AnswerRecord } from './answer.js';
import { ControlActions, settledCheckpoint, settledStatus } from './settle.js';
import { BOTS_RUN_QUEUE, jobKey, jobSpec, parseJobPayload } from './jobs.js';
import { chargedCutOffs, cutOffBackoffMs, cutOffTooOften, cutOffTooOftenError, cutOffsOf, runCountOf } from './cut-offs.js';
import type { Job, JobPriority } from './queue.js';
import { SingleFlight, type RuntimeStatus, type Starting } from './single-flight.js';
import { toTask } from './rows.js';
import { StreamWriter } from './stream-writer.js';
import { FINAL_STATUSES, type TaskRow, type TaskStore } from './task-store.js';
import type { ThreadStore } from './thread-store.js';

export type { RuntimeStatus } from './single-flight.js';

export interface DispatchOptions {
  /** Who asks (default `user`); `heartbeat: true` means `heartbeat`. Only `user` runs are attended. */
  source?: TaskSource | undefined;
  /** Default `normal`; `low` for heartbeat resumes (they wait behind everything else). */
  priority?: JobPriority | undefined;
  heartbeat?: boolean | undefined;
  /** Reuse this task instead of creating one (seed 2 §7.1): it must hold `claimToken`'s claim. */
  taskId?: string | undefined;
  claimToken?: string | undefined;
  /**
   * A heartbeat follow-up (seed 2 §8) of this finished (`done`/`review`) task: the run continues
   * that task in its thread (it is queued again, its title kept) instead of starting a new one.
   */
  followUpOf?: string | undefined;
  /** The person's message that is the request (the run's history ends with it). */
  requestMessageId?: string | undefined;
  fromBotId?: string | undefined;
  routineId?: string | undefined;
  handoffDepth?: number | undefined;
  /** A system note shown just before the bot's message (a routine's prompt, a handoff). */
  note?: string | undefined;
  /** The ledger purpose (default from the source). */
  purpose?: string | undefined;
}

export interface Dispatched {
  botId: string;
  threadId: string;
  taskId: string;
  messageId: string;
  jobId: string;
}

/** Told after every settle (the heartbeat's cooldown and log). */
export interface SettledInfo {
  task: Task;
  botId: string;
  threadId: string;
  messageId: string;
  source: TaskSource;
  heartbeat: boolean;
  /** null when the run never started (refused or failed in `begin`). */
  outcome: RunOutcome | null;
  /** The run's model calls and tokens (step by step, as the ledger counts them); zeros when it never started. */
  usage: RunUsage;
}

export interface RunUsage {
  calls: number;
  inputTokens: number;
  outputTokens: number;
}

/** Told after every settled run that ended with control lines (memory store, heartbeat). */
export interface ControlLinesInfo {
  botId: string;
  threadId: string;
  threadKind: Thread['kind'];
  taskId: string;
  messageId: string;
  source: TaskSource;
  heartbeat: boolean;
  status: TaskStatus;
  controls: ControlLine[];
  at: number;
}

/** A job removed before its run started. */
export interface DroppedJobInfo {
  botId: string;
  threadId: string;
  taskId: string;
  messageId: string;
  source: TaskSource;
  heartbeat: boolean;
  /** `user_message`: a person's message came first (§7.4); `stopped`: stop/cancel; `refused`: begin() refused it; `shutdown`. */
  reason: 'user_message' | 'stopped' | 'refused' | 'shutdown';
  /** The claim was released and its attempt given back. */
  refunded: boolean;
}

export interface BotRuntimeDeps {
  bots: BotStore;
  threads: ThreadStore;
  tasks: TaskStore;
  links: ApprovalLinks;
  notes: NoteStore;
  runner: Pick<AgentRunner, 'start'>;
  approvals: Pick<ApprovalStore, 'get'>;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  emit: BotsEmit;
  config: BotsConfig;
  /** Durable jobs (issue 17): every dispatch is a `bots.run` job; runs start from it, on any worker. */
  coordinator: Coordinator;
}

/** Jobs taken per fetch (one per bot at most: the bot is the job's group). */
const FETCH_BATCH = 20;

// The cut-off rule (what counts as one, the backoff, the cap) lives in ./cut-offs.ts.
export { MAX_CUT_OFF_RUNS, cutOffTooOften, cutOffTooOftenError } from './cut-offs.js';

/** What `adopt` made of a left-over open task. */
export type Adopted = 'job' | 'cut-off-too-often' | false;

/** The error a continued task carries until its next run starts (it is cleared then). */
export const CONTINUED_ERROR = 'Cut off when its worker stopped; its job continues it from its checkpoint.';

interface ActiveRun {
  job: Job;
  /** The coordinator's job as fetched (attempt, take-over). */
  held: CoordJob;
  /** The lease was lost (another worker took the job over): this run's outcome is not written. */
  leaseLost: boolean;
  /** Stopped (shutdown) while waiting before a continued run: the job is handed back, not completed. */
  handedBack: boolean;
  /** Wakes the wait before a continued run (`backOff`) when the run is cancelled. */
  pause: AbortController | null;
  run: Run | null;
  /** A cancel asked for before (or while) the run started. */
  stopCause: CancelCause | null;
  writer: StreamWriter | null;
  /** The checkpoint written as the run goes (§7.6), so a crash leaves one. */
  progress: ProgressCheckpoint | null;
  /** Approvals of this run still pending (their links are refreshed as the run goes). */
  pendingApprovals: Set<string>;
  usage: RunUsage;
  done: Promise<void>;
  resolveDone: () => void;
}

const PURPOSES: Record<TaskSource, string> = {
  user: 'bot_turn',
  routine: 'bot_routine',
  handoff: 'bot_handoff',
  external: 'bot_external',
  heartbeat: 'heartbeat_resume',
};

const CANCEL_RANK: Record<CancelCause, number> = { external: 1, preempted: 2, user: 3 };

export class BotRuntime {
  private readonly flight = new SingleFlight<ActiveRun>();
  private readonly stopEpochs = new Map<string, number>();
  private readonly lastStatus = new Map<string, string>();
  private readonly settledListeners = new Set<(info: SettledInfo) => void | Promise<void>>();
  private readonly controlListeners = new Set<(info: ControlLinesInfo) => void | Promise<void>>();
  private readonly droppedListeners = new Set<(info: DroppedJobInfo) => void | Promise<void>>();
  private readonly personaSections = new Set<PersonaSection>();
  private readonly owner = processOwner();
  private disposing = false;
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;
  private lastTimerPump = -Infinity;

  private readonly controls: ControlActions;

  constructor(private readonly d: BotRuntimeDeps) {
    this.controls = new ControlActions({
      bots: d.bots,
      threads: d.threads,
      tasks: d.tasks,
      notes: d.notes,
      clock: d.clock,
      log: d.log,
      emit: d.emit,
      maxHandoffs: d.config.max_handoffs,
      dispatch: (botId, threadId, text, options) => this.dispatchToBot(botId, threadId, text, options),
    });
  }

  // ── single-flight ───────────────────────────────────────────────────────

  /** Seed 2 §5.1: nothing runs, waits, starts, dispatches or pulses for this bot (see single-flight.ts). */
  isIdle(botId: string): boolean {
    return this.flight.isIdle(botId);
  }

  /** The read model for the page: working (a run), queued (waiting or about to start), idle. */
  statusOf(botId: string): RuntimeStatus {
    return this.flight.statusOf(botId);
  }

  /**
   * Register an in-flight heartbeat pulse (seed 2 §5.1 `pulses`), atomically with the idle
   * check: null when the bot is not idle (nothing registered). Call the returned function in a
   * `finally`. A person's message or `stop` aborts `controller`.
   */
  beginPulse(botId: string, controller: AbortController): (() => void) | null {
    if (!this.isIdle(botId) || this.disposing) return null;
    this.flight.pulses.set(botId, controller);
    this.emitStatus(botId);
    return () => {
      if (this.flight.pulses.get(botId) !== controller) return;
      this.flight.pulses.delete(botId);
      this.emitStatus(botId);
    };
  }

  /** A pulse is in flight for this bot (the page's "Checking in…"). */
  isChecking(botId: string): boolean {
    return this.flight.pulses.has(botId);
  }

  /** A job of this task is known here: waiting, about to start, or running. */
  hasJobFor(taskId: string): boolean {
    if (this.flight.queues.find((j) => j.taskId === taskId)) return true;
    for (const s of this.flight.starting.values()) if (s.job.taskId === taskId) return true;
    for (const a of this.flight.runs.values()) if (a.job.taskId === taskId) return true;
    return false;
  }

  /**
   * Seed 2 rules 2 and 7: an open task (or its message) with no live run — its bot idle here, no
   * job of it here, and its owner this process, or one whose lease ran out before `leaseBefore`
   * (dead, on this host or another), or nobody. A task another live daemon owns (Postgres) keeps
   * its lease renewed and is never an orphan here.
   */
  isOrphan(t: { id: string; bot_id: string; owner: string | null; owner_seen_at: number | null }, leaseBefore: number): boolean {
    if (!this.isIdle(t.bot_id) || this.hasJobFor(t.id)) return false;
    return t.owner === null || t.owner === this.owner || t.owner_seen_at === null || Number(t.owner_seen_at) < leaseBefore;
  }

  /**
   * Renew this process's lease on the tasks it really holds a job of (the host's timer, every
   * tick): a task it owns but lost track of lets its lease run out and becomes an orphan too.
   */
  async renewLease(): Promise<number> {
    const ids = new Set<string>();
    for (const botId of this.flight.queues.botIds()) for (const j of this.flight.queues.jobs(botId)) ids.add(j.taskId);
    for (const s of this.flight.starting.values()) ids.add(s.job.taskId);
    for (const a of this.flight.runs.values()) ids.add(a.job.taskId);
    return ids.size ? this.d.tasks.renewOwnerLease(this.owner, [...ids]) : 0;
  }

  /**
   * Restart and upgrade in place (issue 17 §7): a `queued` task whose owner is gone gets its job —
   * sent again by key, so a job that survived the restart is found, not doubled — and simply runs;
   * one of a release that kept jobs in memory gets one now. A `working` task's run was cut off:
   * its job continues it, unless it was cut off too often (`leaveCutOff`: failed + interrupted,
   * for the heartbeat). `'job'`: the task is a job's now; `'cut-off-too-often'`: it was settled
   * so (either way restart repair leaves it and its message alone); false: repair marks it.
   */
  async adopt(row: TaskRow): Promise<Adopted> {
    if ((row.status !== 'queued' && row.status !== 'working') || row.message_id === null) return false;
    const source = row.source;
    const job: Job = {
      id: '',
      botId: row.bot_id,
      threadId: row.thread_id,
      taskId: row.id,
      messageId: row.message_id,
      priority: source === 'heartbeat' ? 'low' : 'normal',
      source,
      request: row.request_message_id ? null : row.prompt,
      claimToken: row.claim_token,
      purpose: PURPOSES[source],
      enqueuedAt: Number(row.created_at),
    };
    try {
      const jobId = await this.d.coordinator.send(jobSpec(job));
      if (row.status === 'working') {
        // Its run was cut off: the job continues it (a new run from the checkpoint), unless it was cut off too often.
        // Every run the job started was cut off (the task is still `working`); fetches that never began one are not counted.
        const held = await this.d.coordinator.getJob(jobId);
        const from = held?.takenOverFrom ?? row.owner ?? 'a previous worker';
        const cutOffs = cutOffsOf(held?.checkpoint ?? null);
        // Not fetched at this restart yet: all its fetches so far are earlier holders.
        if (cutOffTooOften(chargedCutOffs(held?.checkpoint ?? null, held?.attempt ?? 0))) {
          await this.d.coordinator.cancel({ id: jobId });
          return (await this.leaveCutOff(row, from, cutOffs)) ? 'cut-off-too-often' : false;
        }
        return (await this.continueCutOff(row, from)) !== undefined ? 'job' : false;
      }
      await this.d.tasks.update(row.id, { owner: this.owner }, { status: ['queued'] });
      return 'job';
    } catch (err) {
      this.d.log.warn({ err: describeError(err), task: row.id }, 'could not make a queued task a job; it is marked interrupted');
      return false;
    }
  }

  /** A queued or active coordinator job stands behind this task (on any worker): a read, nothing sent. */
  async hasLiveJob(row: Pick<TaskRow, 'id' | 'message_id'>): Promise<boolean> {
    if (row.message_id === null) return false;
    return (await this.d.coordinator.liveJob(jobKey(row.id, row.message_id))) !== null;
  }

  /** A run of this bot started outside the queue (another module driving it): the bot is busy until released. */
  trackExternalRun(botId: string): () => void {
    const release = this.flight.holdExternalRun(botId);
    this.emitStatus(botId);
    return () => {
      release();
      this.emitStatus(botId);
    };
  }

  // ── registrations (the heartbeat, the memory store) ─────────────────────

  onSettled(listener: (info: SettledInfo) => void | Promise<void>): () => void {
    this.settledListeners.add(listener);
    return () => this.settledListeners.delete(listener);
  }

  /** Control lines of settled runs (`FOLLOWUP:`/`BLOCKED:` for the heartbeat, `MEMORY:` for memory). */
  onControlLines(listener: (info: ControlLinesInfo) => void | Promise<void>): () => void {
    this.controlListeners.add(listener);
    return () => this.controlListeners.delete(listener);
  }

  onJobDropped(listener: (info: DroppedJobInfo) => void | Promise<void>): () => void {
    this.droppedListeners.add(listener);
    return () => this.droppedListeners.delete(listener);
  }

  /** Add text to every bot's persona (the heartbeat's follow-up lines). */
  addPersonaSection(section: PersonaSection): () => void {
    this.personaSections.add(section);
    return () => this.personaSections.delete(section);
  }

  // ── dispatch ────────────────────────────────────────────────────────────

  /**
   * Give a bot work in a thread: a new task (or a claimed one reused) and its bot message,
   * queued behind the bot's current run. A person's message first drops waiting heartbeat jobs
   * and preempts a running one (§7.4). `text` is host-trusted: callers fence untrusted parts.
   */
  async dispatchToBot(botId: string, threadId: string, text: string, options: DispatchOptions = {}): Promise<Dispatched> {
    if (this.disposing) throw new SubconsciousError('conflict', 'The bots host is shutting down; nothing new is started.');
    const release = this.flight.holdDispatch(botId);
    const epoch = this.stopEpochs.get(botId) ?? 0;
    const heartbeat = options.heartbeat === true || options.source === 'heartbeat';
    const source: TaskSource = heartbeat ? 'heartbeat' : (options.source ?? 'user');
    let job: Job;
    try {
      job = await this.prepare(botId, threadId, text, options, source, heartbeat);
    } catch (err) {
      release();
      this.emitStatus(botId);
      throw err;
    }
    try {
      // Committed before the dispatch answers: from here on the work survives a kill.
      job.id = await this.d.coordinator.send(jobSpec(job));
    } catch (err) {
      release();
      await this.failStuck(job, `its job could not be committed: ${describeError(err)}`);
      this.emitStatus(botId);
      throw err;
    }
    if ((this.stopEpochs.get(botId) ?? 0) !== epoch) {
      // `stop` came while this dispatch was being written: it was pending, so it stops too.
      release();
      await this.cancelJob(job, 'Stopped before it started.', 'stopped');
      this.emitStatus(botId);
    } else {
      // The local mirror of a job not yet started: single-flight and status see it at once.
      this.flight.queues.push(job);
      release();
      this.emitStatus(botId);
      // Answered once the job is started here or waits its turn (a bot busy here or elsewhere).
      await this.pump();
    }
    return { botId, threadId, taskId: job.taskId, messageId: job.messageId, jobId: job.id };
  }

  private async prepare(botId: string, threadId: string, text: string, o: DispatchOptions, source: TaskSource, heartbeat: boolean): Promise<Job> {
    const request = text.trim();
    if (!request && !o.requestMessageId) throw new SubconsciousError('invalid_params', 'text: must not be empty');
    if (o.taskId !== undefined && !o.claimToken) {
      throw new SubconsciousError('invalid_params', 'claimToken: reusing a task needs the claim written for it (claim it first)');
    }
    await this.d.bots.require(botId);
    const thread = await this.d.threads.require(threadId);
    if (!thread.bot_ids.includes(botId)) {
      throw new SubconsciousError('invalid_params', `bot "${botId}" is not in thread "${threadId}"`, {
        hint: 'Send to a bot in its direct thread, or mention a member of the group.',
      });
    }
    if (heartbeat && thread.kind !== 'direct') throw new SubconsciousError('conflict', 'The heartbeat acts only in a bot’s direct thread, never in a group.');
    if (source === 'user') await this.yieldToUser(botId);

    let task = o.taskId !== undefined ? await this.reuseTask(o.taskId, o.claimToken!, botId, threadId) : undefined;
    if (!task && o.followUpOf !== undefined && heartbeat) task = await this.reopenForFollowUp(o.followUpOf, botId, threadId);
    task ??= await this.d.tasks.create({
      botId,
      threadId,
      title: taskTitle(request || 'Reply'),
      prompt: request,
      source,
      fromBotId: o.fromBotId,
      routineId: o.routineId,
      handoffDepth: o.handoffDepth,
      requestMessageId: o.requestMessageId,
      owner: this.owner,
    });
    if (o.note?.trim()) {
      const note = await this.d.threads.addMessage({ threadId, role: 'system', taskId: task.id, text: o.note.trim(), status: 'done', heartbeat });
      this.d.emit('bots.message_changed', { message: note });
    }
    const message = await this.d.threads.addMessage({ threadId, role: 'bot', botId, taskId: task.id, text: '', status: 'queued', heartbeat });
    const linked = (await this.d.tasks.update(task.id, { message_id: message.id, owner: this.owner })) ?? task;
    this.d.emit('bots.message_changed', { message });
    this.d.emit('bots.task_changed', { task: toTask(linked) });
    return {
      id: this.d.ids(),
      botId,
      threadId,
      taskId: task.id,
      messageId: message.id,
      priority: o.priority ?? (heartbeat ? 'low' : 'normal'),
      source,
      request: o.requestMessageId ? null : request,
      claimToken: o.claimToken ?? null,
      purpose: o.purpose ?? PURPOSES[source],
      enqueuedAt: this.d.clock.now(),
    };
  }

  /** A claimed task, checked before it is queued again (begin() checks once more). */
  private async reuseTask(taskId: string, token: string, botId: string, threadId: string): Promise<TaskRow> {
    const row = await this.d.tasks.requireRow(taskId);
    if (row.bot_id !== botId || row.thread_id !== threadId) throw new SubconsciousError('invalid_params', `task "${taskId}" belongs to another bot or thread`);
    if (row.claim_token !== token) {
      throw new SubconsciousError('conflict', `Task "${taskId}" is not claimed with this token (released, or taken over); nothing was dispatched.`);
    }
    if (FINAL_STATUSES.includes(row.status) || row.status === 'working') {
      await this.d.tasks.releaseClaim(taskId, { token });
      throw new SubconsciousError('conflict', `Task "${taskId}" is ${row.status}; it is never resumed. Its claim was released.`);
    }
    return row;
  }

  /** A follow-up continues its finished task: `done`/`review` → `queued` (compare-and-set; never a cancelled or dismissed one). */
  private async reopenForFollowUp(taskId: string, botId: string, threadId: string): Promise<TaskRow> {
    const row = await this.d.tasks.requireRow(taskId);
    if (row.bot_id !== botId || row.thread_id !== threadId) throw new SubconsciousError('invalid_params', `task "${taskId}" belongs to another bot or thread`);
    const reopened =
      row.status === 'done' || row.status === 'review'
        ? await this.d.tasks.update(taskId, { status: 'queued', error: null, error_kind: null, finished_at: null, owner: this.owner }, { version: row.version })
        : undefined;
    if (!reopened) throw new SubconsciousError('conflict', `Task "${taskId}" is ${row.status} (or changed); a follow-up continues only a finished task.`);
    this.d.emit('bots.task_changed', { task: toTask(reopened) });
    return reopened;
  }

  /**
   * §7.4: a person's message aborts a pulse, drops waiting heartbeat jobs (claim released,
   * attempt refunded) and preempts a running heartbeat resume. Other `low` jobs stay queued:
   * the person's job simply overtakes them.
   */
  private async yieldToUser(botId: string): Promise<void> {
    this.flight.pulses.get(botId)?.abort(new SubconsciousError('cancelled', 'A message from the user came first.'));
    const dropped = this.flight.queues.remove(botId, (j) => j.source === 'heartbeat');
    const s = this.flight.starting.get(botId);
    if (s && s.job.source === 'heartbeat') {
      this.flight.starting.delete(botId);
      s.abort.abort();
      dropped.push(s.job);
    }
    const active = this.flight.runs.get(botId);
    if (active && active.job.source === 'heartbeat') this.requestCancel(active, 'preempted');
    let n = 0;
    for (const job of dropped) if (await this.dropJob(job, job === s?.job && s.held !== undefined)) n++;
    // Heartbeat jobs another worker sent for this bot wait in the coordinator, not in this mirror.
    const here = new Set(dropped.map((j) => j.taskId));
    for (const row of await this.d.tasks.waitingHeartbeatOf(botId)) {
      if (!here.has(row.id) && (await this.dropJob(this.jobOfRow(row), false))) n++;
    }
    if (n) this.pump();
  }

  /** The job a waiting heartbeat task row stands for (its key is the task and its bot message). */
  private jobOfRow(row: TaskRow): Job {
    return {
      id: '',
      botId: row.bot_id,
      threadId: row.thread_id,
      taskId: row.id,
      messageId: row.message_id!,
      priority: 'low',
      source: 'heartbeat',
      request: null,
      claimToken: row.claim_token,
      purpose: PURPOSES.heartbeat,
      enqueuedAt: 0,
    };
  }

  /**
   * A waiting low job a person's message displaced: nothing ran, so its claim's attempt is
   * refunded. Only a job no worker holds (or that this one holds, `heldHere`) is dropped: one
   * another worker has just started is left to it. True when it was dropped.
   */
  private async dropJob(job: Job, heldHere: boolean): Promise<boolean> {
    let refunded = false;
    try {
      const cancelled = await this.d.coordinator.cancel({ key: jobKey(job.taskId, job.messageId) }, heldHere ? {} : { waitingOnly: true });
      if (cancelled === 0) return false;
    } catch (err) {
      this.d.log.warn({ err: describeError(err), task: job.taskId }, 'could not set a heartbeat job aside; it runs after the person’s message');
      return false;
    }
    try {
      if (job.claimToken) refunded = (await this.d.tasks.releaseClaim(job.taskId, { token: job.claimToken, refund: true })) !== undefined;
      else {
        await this.d.tasks.update(
          job.taskId,
          {
            status: 'failed',
            interrupted: 1,
            error_kind: 'preempted',
            error: 'Set aside for a message from the user before it started; it can resume.',
            finished_at: this.d.clock.now(),
          },
          { status: ['queued'] },
        );
      }
      const task = await this.d.tasks.get(job.taskId);
      if (task) this.d.emit('bots.task_changed', { task });
      await this.stopMessage(job.messageId, 'Set aside: a message from the user came first.');
    } catch (err) {
      this.d.log.warn({ err: describeError(err), task: job.taskId }, 'could not record a dropped job');
    }
    await this.tell(this.droppedListeners, { ...this.droppedInfo(job), reason: 'user_message', refunded });
    return true;
  }

  // ── the queue → begin → settle → finish cycle ───────────────────────────

  /**
   * Start what the coordinator hands this worker: the jobs of bots with nothing active anywhere,
   * each bot's best first (a person before routines before the heartbeat). Called after every
   * dispatch and settle, at start and on the host's timer (jobs other workers queued or left).
   */
  pump(): Promise<void> {
    if (this.disposing) return Promise.resolve();
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    this.pumping = (async () => {
      do {
        this.pumpAgain = false;
        try {
          if ((await this.pumpOnce()) === FETCH_BATCH) this.pumpAgain = true;
        } catch (err) {
          this.d.log.warn({ err: describeError(err) }, 'could not fetch bot jobs; the next dispatch or host tick tries again');
        }
      } while (this.pumpAgain && !this.disposing);
    })().finally(() => (this.pumping = null));
    return this.pumping;
  }

  /**
   * The host timer's look for work no dispatch here announced (another worker's, a lapsed
   * lease's): at most every half lease, so a quiet tick mostly costs nothing, and a dead worker's
   * job is still taken over within two lease periods.
   */
  pumpIfDue(): Promise<void> {
    const now = this.d.clock.now();
    if (now - this.lastTimerPump < this.d.coordinator.leaseMs / 2) return Promise.resolve();
    this.lastTimerPump = now;
    return this.pump();
  }

  private async pumpOnce(): Promise<number> {
    const fetched = await this.d.coordinator.fetch(BOTS_RUN_QUEUE, { batchSize: FETCH_BATCH });
    for (const held of fetched) {
      const parsed = parseJobPayload(held.id, held.payload);
      if (!parsed.ok) {
        this.d.log.warn({ job: held.id, reason: parsed.reason }, 'a bot job was moved aside: its payload does not parse');
        await this.d.coordinator.deadLetter(held.id, `bots.run payload: ${parsed.reason}`);
        continue;
      }
      const job = parsed.job;
      if (this.disposing) continue; // held, not started: released when the coordinator stops
      // Out of the local mirror and into `starting` in one synchronous step (§5.1).
      this.flight.queues.remove(job.botId, (j) => j.id === job.id);
      const waiting = this.flight.starting.get(job.botId);
      if (waiting && !waiting.held) {
        // The gap after the bot's last run: this is its next job (the coordinator's choice wins).
        if (waiting.job.id !== job.id) this.flight.queues.push(waiting.job);
        waiting.job = job;
        waiting.held = held;
        continue;
      }
      if (waiting) {
        this.d.log.warn({ job: held.id, bot: job.botId }, 'a second bot job was handed over while one was starting; it is handed back');
        await this.d.coordinator.fail(held.id, 'handed back: its bot had a job starting', { retry: true });
        continue;
      }
      const entry: Starting = { job, abort: new AbortController(), held };
      this.flight.starting.set(job.botId, entry);
      void this.startAfterDelay(entry);
      this.emitStatus(job.botId);
    }
    await this.dropStaleMirror(new Set(fetched.map((j) => j.id)));
    return fetched.length;
  }

  /**
   * The local mirror holds jobs sent here until this worker starts them. One that another worker
   * started (or that was cancelled or finished elsewhere) is no longer waiting: it leaves the
   * mirror, or this worker would call its bot busy for good. Asked only for mirrored jobs, so a
   * quiet pump (nothing mirrored) asks nothing.
   */
  private async dropStaleMirror(fetchedNow: ReadonlySet<string>): Promise<void> {
    for (const botId of this.flight.queues.botIds()) {
      for (const j of [...this.flight.queues.jobs(botId)]) {
        if (fetchedNow.has(j.id)) continue;
        let state: string | null;
        try {
          state = (await this.d.coordinator.getJob(j.id))?.state ?? null;
        } catch {
          continue; // a store hiccup: keep it, the next pump asks again
        }
        if (state === 'queued') continue;
        this.flight.queues.remove(botId, (x) => x.id === j.id);
        this.emitStatus(botId);
      }
    }
  }

  /** Renew the job's lease while its run goes; a lost lease cancels the run (another worker has it). */
  private keepLease(active: ActiveRun): () => void {
    const stop = new AbortController();
    void (async () => {
      for (;;) {
        try {
          await this.d.clock.sleep(this.d.coordinator.leaseMs / 3, stop.signal);
        } catch {
          return;
        }
        const ok = await this.d.coordinator.renew(active.job.id).catch(() => true); // a store hiccup is not a lost lease
        if (!ok) {
          this.d.log.warn({ job: active.job.id, task: active.job.taskId }, 'a bot job was taken over by another worker; this run stops');
          active.leaseLost = true;
          this.requestCancel(active, 'external');
          return;
        }
      }
    })();
    return () => stop.abort();
  }

  /**
   * The gap before a job's run (`next_job_delay_ms`). An entry without `held` is the bot's next
   * local job, taken synchronously when its last run finished (§5.1): after the gap the
   * coordinator is asked, and runs what it hands over for this bot (or nothing: another worker).
   */
  private async startAfterDelay(entry: Starting): Promise<void> {
    const signal = entry.abort.signal;
    const botId = entry.job.botId;
    // Asked at once, so the answer is there when the gap ends (the gap is the clock's, the fetch real time).
    const claim = entry.held ? null : this.pump();
    try {
      if (this.d.config.next_job_delay_ms > 0) await this.d.clock.sleep(this.d.config.next_job_delay_ms, signal);
      else await Promise.resolve();
    } catch {
      return; // dropped or stopped: whoever aborted it took care of the job
    }
    if (signal.aborted || this.flight.starting.get(botId) !== entry) return;
    if (!entry.held) {
      await claim;
      if (!entry.held && !signal.aborted && this.flight.starting.get(botId) === entry) await this.pump();
      if (signal.aborted || this.flight.starting.get(botId) !== entry) return;
      if (!entry.held) {
        // Not this worker's now (run or cancelled elsewhere, or its bot busy on another worker).
        this.flight.starting.delete(botId);
        const cj = await this.d.coordinator.getJob(entry.job.id).catch(() => null);
        if (cj?.state === 'queued') this.flight.queues.push(entry.job);
        this.emitStatus(botId);
        return;
      }
    }
    const { job, held } = entry;
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const active: ActiveRun = {
      job,
      held,
      leaseLost: false,
      handedBack: false,
      pause: null,
      run: null,
      stopCause: null,
      writer: null,
      progress: null,
      pendingApprovals: new Set(),
      usage: { calls: 0, inputTokens: 0, outputTokens: 0 },
      done,
      resolveDone,
    };
    // The hand-over from `starting` to `runs` is one synchronous step (§5.1).
    this.flight.runs.set(job.botId, active);
    this.flight.starting.delete(job.botId);
    this.emitStatus(job.botId);
    const stopLease = this.keepLease(active);
    try {
      await this.begin(active);
    } catch (err) {
      this.d.log.error({ err: describeError(err), task: job.taskId }, 'a bot run could not be settled');
      await this.failStuck(job, describeError(err));
    } finally {
      stopLease();
      // Settled (or refused): the job is done. Before `finish`, so the bot's next job can be fetched.
      if (!active.leaseLost && !active.handedBack)
        await this.d.coordinator.complete(job.id).catch((err) => this.d.log.warn({ err: describeError(err), job: job.id }, 'could not complete a bot job'));
      this.finish(active);
    }
  }

  /** Best effort after an unexpected error (the database went away): leave nothing `queued`/`working` behind. */
  private async failStuck(job: Job, error: string): Promise<void> {
    try {
      const row = await this.d.tasks.update(
        job.taskId,
        { status: 'failed', error_kind: 'unknown', error: `The host could not run or settle this task: ${error}`, finished_at: this.d.clock.now() },
        { status: ['queued', 'working'] },
      );
      if (row) this.d.emit('bots.task_changed', { task: toTask(row) });
      const current = await this.d.threads.getMessage(job.messageId);
      if (current && (current.status === 'queued' || current.status === 'streaming')) {
        const msg = await this.d.threads.updateMessage(job.messageId, { status: 'error', error });
        if (msg) this.d.emit('bots.message_changed', { message: msg });
      }
    } catch (err) {
      this.d.log.warn({ err: describeError(err), task: job.taskId }, 'could not mark a stuck task failed; restart repair will');
    }
  }

  private async begin(active: ActiveRun): Promise<void> {
    const { job } = active;
    const { tasks } = this.d;
    let row = await tasks.row(job.taskId);
    // Fetched again (its worker died, or stopped before it began): settled work is never run again.
    if (row && active.held.attempt > 1) {
      const next = await this.takenOver(active, row);
      if (next === 'settled') return;
      row = next;
    }
    const continued = row !== undefined && isContinued(row);
    // Cut off after its answer arrived (a restart adopted it): settled from that answer, never asked again.
    const answer = row && continued ? answerOf(row) : null;
    if (row && answer) return this.settleAnswered(active, row, answer, row.taken_over_from ?? row.owner ?? 'a previous worker');
    // A continued run's claim was spent when the cut-off run began: its job holds the task now.
    if (continued) job.claimToken = null;
    // A run cut off more than once waits before its job continues it (./cut-offs.ts); the task may change meanwhile.
    if (row && continued) {
      const waited = await this.backOff(active);
      if (waited === 'handed-back') return;
      if (waited === 'waited') row = await tasks.row(job.taskId);
    }
    const refusal = this.beginRefusal(job, row);
    if (refusal || !row) return this.refuse(job, refusal ?? 'The task no longer exists.');
    if (active.stopCause === 'user') return this.refuse(job, 'Stopped before it started.', 'stopped');
    // Preempted before anything ran: a drop, so a claimed attempt is refunded (§7.4).
    if (active.stopCause === 'preempted') {
      await this.dropJob(job, true);
      return;
    }

    const runId = this.d.ids();
    const started = await tasks.update(
      job.taskId,
      {
        status: 'working',
        claim_token: null,
        claim_at: null,
        claim_by: null,
        started_at: this.d.clock.now(),
        finished_at: null,
        error: null,
        error_kind: null,
        interrupted: 0,
        owner: this.owner,
        run_id: runId,
        message_id: job.messageId,
        ...(active.held.takenOverFrom ? { taken_over_from: active.held.takenOverFrom } : {}),
      },
      { version: row.version },
    );
    if (!started) return this.refuse(job, 'The task changed while it was about to start (cancelled, dismissed or taken over).');
    // Counted once its task is `working` (./cut-offs.ts): a kill from here on cuts a run off; one before it cut nothing.
    const runs = runCountOf(active.held.checkpoint).runs + 1;
    await this.d.coordinator
      .checkpoint(job.id, { runs })
      .catch((err) => this.d.log.warn({ err: describeError(err), job: job.id }, 'could not count a bot run with its job (a cut-off of it goes uncounted)'));
    this.d.emit('bots.task_changed', { task: toTask(started) });
    const streaming = await this.d.threads.updateMessage(job.messageId, { status: 'streaming' });
    if (streaming) this.d.emit('bots.message_changed', { message: streaming });

    let outcome: RunOutcome | null = null;
    let failure: string | null = null;
    try {
      const bot = await this.d.bots.require(job.botId);
      const options = await this.runOptions(active, bot, started, runId);
      if (continued) options.system = `${options.system}\n\n${continuedReplyNote(row, await this.d.threads.getMessage(job.messageId))}`;
      if (active.stopCause) {
        failure = null;
      } else {
        const run = this.d.runner.start(options);
        active.run = run;
        this.watch(active, run);
        if (active.stopCause) run.cancel(active.stopCause);
        outcome = await run.settled;
      }
    } catch (err) {
      failure = describeError(err);
      this.d.log.warn({ err: failure, task: job.taskId }, 'a bot run could not start');
    }
    await this.settle(active, outcome, failure);
  }

  /**
   * A job fetched again. Its task settled before the kill: done, nothing is paid for again
   * ('settled'). Its run was cut off (`working`, its worker gone): the job continues the task —
   * a new run into the same message, told what the cut-off run had recorded (its checkpoint's
   * steps and text) so it does not redo them — which is what the person who sent the message
   * expects: an answer, once. Only a run cut off `MAX_CUT_OFF_RUNS` times becomes `failed` +
   * interrupted (saying which worker it was taken over from) for the heartbeat (seed 2 §7.6).
   * Otherwise the row to begin from.
   */
  private async takenOver(active: ActiveRun, row: TaskRow): Promise<TaskRow | 'settled'> {
    const { job, held } = active;
    if (row.status === 'queued' || (job.claimToken !== null && row.claim_token === job.claimToken && row.status !== 'working')) return row;
    if (row.status !== 'working') {
      this.d.log.info({ task: job.taskId, job: job.id }, 'a bot job fetched again had settled already; not run again');
      return 'settled';
    }
    const from = held.takenOverFrom ?? row.owner ?? 'a previous worker';
    const answer = answerOf(row);
    if (answer) {
      await this.settleAnswered(active, row, answer, from);
      return 'settled';
    }
    // Every run this job started was cut off (its task is still `working`); fetches that began none are not counted.
    const cutOffs = cutOffsOf(held.checkpoint);
    // This fetch is the job's `attempt`-th: the ones before it are earlier holders.
    if (!cutOffTooOften(chargedCutOffs(held.checkpoint, held.attempt - 1))) {
      const again = await this.continueCutOff(row, from);
      if (again) {
        this.d.log.info({ task: job.taskId, job: job.id, from }, 'a bot run cut off by its worker is continued by its job');
        return again;
      }
      return (await this.d.tasks.row(job.taskId)) ?? 'settled';
    }
    await this.leaveCutOff(row, from, cutOffs);
    return 'settled';
  }

  /**
   * The wait before a continued run (`cutOffBackoffMs` of the runs the job started, all cut off),
   * holding the job: its end is kept in the job's checkpoint, so a kill during the wait does not
   * restart it. 'none': no wait; 'waited'; 'handed-back': this worker stops (the job is released
   * when its coordinator stops, or another worker holds it already) and the task is left as it is.
   */
  private async backOff(active: ActiveRun): Promise<'none' | 'waited' | 'handed-back'> {
    const { job } = active;
    const count = runCountOf(active.held.checkpoint);
    const now = this.d.clock.now();
    const resumeAt = count.resumeAt ?? now + cutOffBackoffMs(count.runs);
    if (resumeAt <= now || active.stopCause) return 'none';
    if (count.resumeAt === undefined)
      await this.d.coordinator
        .checkpoint(job.id, { runs: count.runs, resumeAt })
        .catch((err) => this.d.log.warn({ err: describeError(err), job: job.id }, "could not keep a continued run's wait with its job"));
    this.d.log.info(
      { task: job.taskId, job: job.id, cutOffs: count.runs, waitMs: resumeAt - now },
      'a bot run cut off more than once waits before its job continues it',
    );
    active.pause = new AbortController();
    try {
      // Until `resumeAt` itself (not now + the wait): the checkpoint's write took time too.
      const left = resumeAt - this.d.clock.now();
      if (left > 0) await this.d.clock.sleep(left, active.pause.signal);
    } catch {
      // Cancelled: the stop cause says what to do.
    }
    active.pause = null;
    if (active.stopCause === 'external') {
      active.handedBack = true;
      return 'handed-back';
    }
    return 'waited';
  }

  /**
   * A task whose run was cut off too often (`cutOffTooOften`), on either path: `failed` +
   * interrupted with `cutOffTooOftenError` (compare-and-set on its version), its message `error` +
   * interrupted with the same text, keeping its partial text. The heartbeat resumes it (seed 2
   * rule 1). False when the task changed meanwhile (nothing written).
   */
  private async leaveCutOff(row: TaskRow, from: string, cutOffs: number): Promise<boolean> {
    const error = cutOffTooOftenError(cutOffs, from);
    const moved = await this.d.tasks.update(
      row.id,
      { status: 'failed', interrupted: 1, error_kind: 'interrupted', error, finished_at: this.d.clock.now(), owner: this.owner, taken_over_from: from },
      { version: row.version },
    );
    if (!moved) return false;
    this.d.emit('bots.task_changed', { task: toTask(moved) });
    if (row.message_id !== null) {
      const msg = await this.d.threads.updateMessage(row.message_id, { status: 'error', interrupted: true, error });
      if (msg) this.d.emit('bots.message_changed', { message: msg });
    }
    return true;
  }

  /**
   * A `working` task whose run was cut off, queued again for its job to continue (compare-and-set
   * on its version): `interrupted` and `taken_over_from` say so until the next run starts; its
   * message keeps the partial text (the next run is told it, then writes the reply over it).
   */
  private async continueCutOff(row: TaskRow, from: string): Promise<TaskRow | undefined> {
    const again = await this.d.tasks.update(
      row.id,
      { status: 'queued', interrupted: 1, error_kind: 'interrupted', error: CONTINUED_ERROR, owner: this.owner, taken_over_from: from },
      { version: row.version },
    );
    if (!again) return undefined;
    this.d.emit('bots.task_changed', { task: toTask(again) });
    if (row.message_id !== null) {
      const msg = await this.d.threads.updateMessage(row.message_id, { status: 'queued' });
      if (msg) this.d.emit('bots.message_changed', { message: msg });
    }
    return again;
  }

  /**
   * A run cut off after its final answer arrived (its checkpoint holds it): the take-over settles
   * it from that record — the text into its message, its control lines, the usage its worker paid
   * — with no model call. The task goes back to `working` under this worker first (compare-and-set),
   * so a cancel that came meanwhile wins.
   */
  private async settleAnswered(active: ActiveRun, row: TaskRow, answer: AnswerRecord, from: string): Promise<void> {
    const { job } = active;
    const held = await this.d.tasks.update(
      row.id,
      { status: 'working', error: null, error_kind: null, interrupted: 0, owner: this.owner, taken_over_from: from },
      { version: row.version },
    );
    if (!held) {
      this.d.log.info({ task: job.taskId, job: job.id }, 'a task with a checkpointed answer changed before its take-over settled it; left as it is');
      return;
    }
    this.d.log.info({ task: job.taskId, job: job.id, from }, 'a bot run cut off after its answer arrived is settled from its checkpoint (no new model call)');
    active.usage = { ...answer.usage };
    await this.settle(active, answeredOutcome(answer, held), null);
  }

  /** Why `begin()` must not start this job (§5.5 step 4: claim and status re-checked). */
  private beginRefusal(job: Job, row: TaskRow | undefined): string | null {
    if (!row) return 'The task no longer exists.';
    if (job.claimToken !== null && row.claim_token !== job.claimToken) return 'The claim on this task was released or taken over before the run started.';
    if (FINAL_STATUSES.includes(row.status)) return `The task is ${row.status}; it is never resumed.`;
    if (row.status === 'working') return 'The task is already running.';
    if (job.claimToken === null && row.status !== 'queued') return `The task is ${row.status}; it was not started.`;
    return null;
  }

  /** The job never ran: its message stops, its claim is released (the attempt stays counted, §12). */
  private async refuse(job: Job, reason: string, kind: 'refused' | 'stopped' = 'refused'): Promise<void> {
    if (kind === 'stopped') return this.cancelJob(job, reason, 'stopped');
    if (job.claimToken) {
      const released = await this.d.tasks.releaseClaim(job.taskId, { token: job.claimToken });
      if (released) this.d.emit('bots.task_changed', { task: toTask(released) });
    }
    await this.stopMessage(job.messageId, reason);
    this.d.log.info({ task: job.taskId, reason }, 'a bot job was refused at start');
    await this.tell(this.droppedListeners, { ...this.droppedInfo(job), reason: 'refused', refunded: false });
  }

  private async runOptions(active: ActiveRun, bot: Bot, task: TaskRow, runId: string): Promise<RunOptions> {
    const { job } = active;
    const options = await buildRunOptions(
      { bots: this.d.bots, threads: this.d.threads, config: this.d.config, personaSections: [...this.personaSections] },
      { job, bot, title: task.title, runId },
    );
    active.writer = new StreamWriter({
      clock: this.d.clock,
      flushMs: this.d.config.stream_flush_ms,
      log: this.d.log,
      // The checkpoint first: whatever of the reply is stored, the checkpoint names it too.
      write: async (text) => {
        await active.progress?.onText(text);
        await this.d.threads.updateMessage(job.messageId, { text });
      },
    });
    active.progress = new ProgressCheckpoint({
      tasks: this.d.tasks,
      clock: this.d.clock,
      log: this.d.log,
      taskId: job.taskId,
      runId,
      title: task.title,
      before: toTask(task).checkpoint,
    });
    return {
      ...options,
      onApprovalRequested: async (approval: Approval) => {
        const link = await this.d.links.link(approval, { botId: job.botId, threadId: job.threadId, taskId: job.taskId, messageId: job.messageId });
        active.pendingApprovals.add(approval.id);
        this.d.emit('bots.approval_changed', { approval: link });
        // Unattended or not, page or none: it waits its expiry (§7.1, 10 minutes) — a person may open the page meanwhile.
        return undefined;
      },
    };
  }

  /** Stream text into the bot message, report tool steps, keep approval links current. */
  private watch(active: ActiveRun, run: Run): void {
    const { job } = active;
    let stepBreak = false;
    run.events.subscribe((e) => {
      switch (e.type) {
        case 'text-delta': {
          const writer = active.writer!;
          let delta = e.text;
          if (stepBreak && writer.text && !writer.text.endsWith('\n')) delta = `\n\n${delta}`;
          stepBreak = false;
          writer.push(delta);
          this.d.emit('bots.message_delta', { message_id: job.messageId, thread_id: job.threadId, bot_id: job.botId, task_id: job.taskId, delta });
          break;
        }
        case 'step-finished':
          stepBreak = true;
          active.usage.calls++;
          active.usage.inputTokens += e.inputTokens ?? 0;
          active.usage.outputTokens += e.outputTokens ?? 0;
          break;
        case 'tool-call':
          this.d.emit('bots.tool_step', {
            bot_id: job.botId,
            thread_id: job.threadId,
            task_id: job.taskId,
            message_id: job.messageId,
            tool_call_id: e.toolCallId,
            tool: e.tool,
            phase: 'call',
            input: cleanLine(JSON.stringify(e.input ?? null), 300),
            outcome: null,
            output: null,
          });
          break;
        case 'answered':
          // Checkpointed before the settle starts (settle waits for it): a kill from here on is settled from it, not paid again.
          void active.progress?.onAnswer({
            run_id: e.runId,
            text: replyText(active.writer?.text ?? '', e.text),
            controls: e.controls,
            steps: e.steps,
            usage: { ...active.usage },
            at: this.d.clock.now(),
          });
          break;
        case 'tool-result':
          this.d.emit('bots.tool_step', {
            bot_id: job.botId,
            thread_id: job.threadId,
            task_id: job.taskId,
            message_id: job.messageId,
            tool_call_id: e.toolCallId,
            tool: e.tool,
            phase: 'result',
            input: e.step.input,
            outcome: e.step.outcome,
            output: e.step.output,
          });
          active.progress?.onStep(e.step);
          if (active.pendingApprovals.size > 0) void this.refreshApprovals(active);
          break;
        default:
          break;
      }
    });
  }

  /** Mirror the agent store's answers into the links (answered elsewhere, expired, …). */
  private async refreshApprovals(active: ActiveRun): Promise<void> {
    for (const id of [...active.pendingApprovals]) {
      try {
        const a = await this.d.approvals.get(id);
        if (!a || a.state === 'pending') continue;
        active.pendingApprovals.delete(id);
        const changed = await this.d.links.mirror(a);
        if (changed) this.d.emit('bots.approval_changed', { approval: changed });
      } catch (err) {
        this.d.log.warn({ err: describeError(err), approval: id }, 'could not mirror an approval');
      }
    }
  }

  /** Seed 2 §7.5: the run's outcome → task and message; checkpoint; control lines; listeners. */
  private async settle(active: ActiveRun, outcome: RunOutcome | null, failure: string | null): Promise<void> {
    const { job } = active;
    await active.writer?.close();
    await active.progress?.idle();
    // Another worker holds the job now: what it writes stands.
    if (active.leaseLost) return;
    const now = this.d.clock.now();
    const result = settledStatus({ outcome, failure, stopCause: active.stopCause, shuttingDown: this.disposing });
    const text = replyText(active.writer?.text ?? '', outcome?.text ?? '');
    const messageStatus = result.status === 'done' || result.status === 'review' ? 'done' : result.status === 'cancelled' ? 'stopped' : 'error';
    const message = await this.d.threads.updateMessage(job.messageId, { text, status: messageStatus, error: result.error ?? null });
    if (message) this.d.emit('bots.message_changed', { message });

    const review = outcome?.controls.filter((c): c is Extract<ControlLine, { kind: 'recommended_action' }> => c.kind === 'recommended_action') ?? [];
    const checkpoint = settledCheckpoint(result, outcome);
    const row = await this.d.tasks.update(
      job.taskId,
      {
        status: result.status,
        error_kind: result.errorKind ?? null,
        error: result.error ?? null,
        interrupted: result.interrupted ? 1 : 0,
        ...(checkpoint !== undefined ? { checkpoint } : {}),
        review_note: review.length ? review.map((r) => r.text).join('\n') : null,
        claim_token: null,
        claim_at: null,
        claim_by: null,
        finished_at: now,
      },
      { status: ['working'] },
    );
    const task = row ? toTask(row) : await this.d.tasks.get(job.taskId);
    if (!row) this.d.log.warn({ task: job.taskId }, 'a settled task had changed under its run; its status was left as it was');
    if (task) this.d.emit('bots.task_changed', { task });

    await this.refreshApprovals(active);
    if (outcome && outcome.controls.length > 0) await this.applyControls(job, outcome.controls, result.status);
    if (task) {
      await this.tell(this.settledListeners, {
        task,
        botId: job.botId,
        threadId: job.threadId,
        messageId: job.messageId,
        source: job.source,
        heartbeat: job.source === 'heartbeat',
        outcome,
        usage: { ...active.usage },
      });
    }
  }

  /** Act on control lines (notes, handoffs), then tell the listeners (heartbeat, memory store). */
  private async applyControls(job: Job, controls: ControlLine[], status: TaskStatus): Promise<void> {
    const thread = await this.d.threads.get(job.threadId);
    if (!thread) return;
    await this.controls.apply(job, thread, controls, status);
    await this.tell(this.controlListeners, {
      botId: job.botId,
      threadId: job.threadId,
      threadKind: thread.kind,
      taskId: job.taskId,
      messageId: job.messageId,
      source: job.source,
      heartbeat: job.source === 'heartbeat',
      status,
      controls,
      at: this.d.clock.now(),
    });
  }

  private finish(active: ActiveRun): void {
    const botId = active.job.botId;
    if (this.flight.runs.get(botId) === active) {
      // Hand over to the bot's next local job in the same synchronous step (§5.1); the
      // coordinator confirms it after the gap.
      this.flight.runs.delete(botId);
      const next = this.disposing ? undefined : this.flight.queues.shift(botId);
      if (next) {
        const entry: Starting = { job: next, abort: new AbortController() };
        this.flight.starting.set(botId, entry);
        void this.startAfterDelay(entry);
      } else void this.pump();
    }
    this.emitStatus(botId);
    active.resolveDone();
  }

  private requestCancel(active: ActiveRun, cause: CancelCause): void {
    if (!active.stopCause || CANCEL_RANK[cause] > CANCEL_RANK[active.stopCause]) active.stopCause = cause;
    active.pause?.abort();
    active.run?.cancel(cause);
  }

  // ── stop, cancel ────────────────────────────────────────────────────────

  /**
   * Stop a bot for good (§7.4): its run (cancelled, never resumed), its queue, the job about to
   * start, dispatches being written, its pulse; every claim on its tasks is released and those
   * tasks cancelled. Resolves after the run settled.
   */
  async stop(botId: string): Promise<{ cancelledTaskIds: string[] }> {
    this.stopEpochs.set(botId, (this.stopEpochs.get(botId) ?? 0) + 1);
    this.flight.pulses.get(botId)?.abort(new SubconsciousError('cancelled', 'The bot was stopped.'));
    const jobs = this.flight.queues.remove(botId);
    const s = this.flight.starting.get(botId);
    if (s) {
      this.flight.starting.delete(botId);
      s.abort.abort();
      jobs.unshift(s.job);
    }
    const cancelled: string[] = [];
    const active = this.flight.runs.get(botId);
    if (active) {
      this.requestCancel(active, 'user');
      cancelled.push(active.job.taskId);
    }
    for (const job of jobs) {
      await this.cancelJob(job, 'Stopped by the user.', 'stopped');
      cancelled.push(job.taskId);
    }
    // Claimed, not yet dispatched (a resume about to start), or queued by another worker: cancelled too.
    for (const row of await this.d.tasks.openWork({ botIds: [botId] })) {
      if (cancelled.includes(row.id)) continue;
      const queuedElsewhere = row.status === 'queued' && row.message_id !== null;
      if (row.claim_token === null && !queuedElsewhere) continue;
      if (row.message_id !== null) await this.d.coordinator.cancel({ key: jobKey(row.id, row.message_id) });
      if (queuedElsewhere) await this.stopMessage(row.message_id!, 'Stopped by the user.');
      const done = await this.d.tasks.update(
        row.id,
        {
          status: 'cancelled',
          error_kind: 'cancelled',
          error: 'Stopped by the user.',
          claim_token: null,
          claim_at: null,
          claim_by: null,
          finished_at: this.d.clock.now(),
        },
        { version: row.version },
      );
      if (done) {
        cancelled.push(row.id);
        this.d.emit('bots.task_changed', { task: toTask(done) });
      }
    }
    if (active) await active.done;
    this.emitStatus(botId);
    // A run that finished on its own just before the stop keeps its outcome: report what stopped.
    const rows = await this.d.tasks.byIds(cancelled);
    return { cancelledTaskIds: cancelled.filter((id) => rows.some((t) => t.id === id && t.status === 'cancelled')) };
  }

  /**
   * Cancel one task for good: its run, its queued job, or (not running) the task itself; its
   * claim is released. A task already done, cancelled or dismissed is a conflict.
   */
  async cancelTask(taskId: string): Promise<Task> {
    const row = await this.d.tasks.requireRow(taskId);
    const active = this.flight.runs.get(row.bot_id);
    if (active?.job.taskId === taskId) {
      this.requestCancel(active, 'user');
      await active.done;
      return (await this.d.tasks.get(taskId))!;
    }
    const queued = this.flight.queues.remove(row.bot_id, (j) => j.taskId === taskId);
    const s = this.flight.starting.get(row.bot_id);
    if (s?.job.taskId === taskId) {
      this.flight.starting.delete(row.bot_id);
      s.abort.abort();
      queued.push(s.job);
    }
    if (s?.job.taskId === taskId) void this.pump();
    for (const job of queued) await this.cancelJob(job, 'Cancelled by the user.', 'stopped');
    if (queued.length === 0) {
      // A job of it another worker queued (or one left from before a restart) goes too.
      if (row.message_id !== null && (await this.d.coordinator.cancel({ key: jobKey(row.id, row.message_id) })) > 0) {
        await this.stopMessage(row.message_id, 'Cancelled by the user.');
      }
      if (FINAL_STATUSES.includes(row.status)) {
        throw new SubconsciousError('conflict', `Task "${taskId}" is already ${row.status}; nothing was changed.`, { details: { status: row.status } });
      }
      const done = await this.d.tasks.update(
        taskId,
        {
          status: 'cancelled',
          error_kind: 'cancelled',
          error: 'Cancelled by the user.',
          claim_token: null,
          claim_at: null,
          claim_by: null,
          finished_at: this.d.clock.now(),
        },
        { version: row.version },
      );
      if (!done) throw new SubconsciousError('conflict', `Task "${taskId}" changed while it was being cancelled; try again.`);
      this.d.emit('bots.task_changed', { task: toTask(done) });
    }
    this.emitStatus(row.bot_id);
    return (await this.d.tasks.get(taskId))!;
  }

  /** The job's task is cancelled for good, its message stopped, its claim released. */
  private async cancelJob(job: Job, reason: string, why: DroppedJobInfo['reason']): Promise<void> {
    try {
      await this.d.coordinator.cancel({ id: job.id });
      const row = await this.d.tasks.update(
        job.taskId,
        { status: 'cancelled', error_kind: 'cancelled', error: reason, claim_token: null, claim_at: null, claim_by: null, finished_at: this.d.clock.now() },
        { status: ['queued', 'failed', 'review'] },
      );
      if (row) this.d.emit('bots.task_changed', { task: toTask(row) });
      await this.stopMessage(job.messageId, reason);
    } catch (err) {
      this.d.log.warn({ err: describeError(err), task: job.taskId }, 'could not cancel a job');
    }
    await this.tell(this.droppedListeners, { ...this.droppedInfo(job), reason: why, refunded: false });
  }

  private async stopMessage(messageId: string, reason: string): Promise<void> {
    const msg = await this.d.threads.updateMessage(messageId, { status: 'stopped', error: reason });
    if (msg) this.d.emit('bots.message_changed', { message: msg });
  }

  /** Wait until the bot's current run (if any) has settled. */
  async whenSettled(botId: string): Promise<void> {
    await this.flight.runs.get(botId)?.done;
  }

  /**
   * Shutdown: nothing new starts; running jobs are cancelled and settle `failed` + `interrupted`
   * (the heartbeat resumes them after the restart). Jobs that had not started stay queued in the
   * coordinator: they are never "cut off", they simply run after the restart (or on another
   * worker); one about to start is handed back when the coordinator stops.
   */
  async dispose(): Promise<void> {
    if (this.disposing) return;
    this.disposing = true;
    for (const c of this.flight.pulses.values()) c.abort(new SubconsciousError('cancelled', 'The bots host is shutting down.'));
    for (const botId of this.flight.queues.botIds()) this.flight.queues.remove(botId);
    for (const [botId, s] of [...this.flight.starting]) {
      this.flight.starting.delete(botId);
      s.abort.abort();
    }
    const actives = [...this.flight.runs.values()];
    for (const a of actives) this.requestCancel(a, 'external');
    await Promise.all(actives.map((a) => a.done));
    await this.pumping;
  }

  // ── helpers ─────────────────────────────────────────────────────────────

  private droppedInfo(job: Job): Omit<DroppedJobInfo, 'reason' | 'refunded'> {
    return {
      botId: job.botId,
      threadId: job.threadId,
      taskId: job.taskId,
      messageId: job.messageId,
      source: job.source,
      heartbeat: job.source === 'heartbeat',
    };
  }

  private emitStatus(botId: string): void {
    const s = this.statusOf(botId);
    const checking = this.flight.pulses.has(botId);
    const key = `${s.status}|${s.queued}|${s.taskId ?? ''}|${checking}`;
    if (this.lastStatus.get(botId) === key) return;
    this.lastStatus.set(botId, key);
    this.d.emit('bots.status_changed', { bot_id: botId, status: s.status, queued: s.queued, task_id: s.taskId, checking });
  }

  private async tell<T>(listeners: Set<(info: T) => void | Promise<void>>, info: T): Promise<void> {
    for (const l of [...listeners]) {
      try {
        await l(info);
      } catch (err) {
        this.d.log.warn({ err: describeError(err) }, 'a bots listener threw');
      }
    }
  }
}

/** A queued task a cut-off run left for its job to continue (`continueCutOff`). */
function isContinued(row: TaskRow): boolean {
  return row.status === 'queued' && row.interrupted === 1 && row.error === CONTINUED_ERROR;
}

/** The host's note to a run that continues a cut-off one (agent/continuation.ts): the task's recorded steps and the message's partial text. */
function continuedReplyNote(row: TaskRow, message: { text: string } | undefined): string {
  return continuationNote({
    intro: '[Host note: this reply was cut off when its worker stopped; this run continues it. Not a new message.]',
    steps: toTask(row).checkpoint?.steps ?? [],
    partial: { label: 'partial reply', text: message?.text ?? '' },
    finish: 'Continue and finish the reply to the request above; do not redo completed work.',
  });
}
