/**
 * `createBotsHost(deps)`: the bots host assembled from injected parts (no globals). `start()`
 * repairs what a previous process left (before anything else), then starts the routine timer;
 * `stop()` stops the timer and shuts the runtime down (running work settles `interrupted`).
 */
import type { Kysely } from 'kysely';
import type { AgentRunner, ApprovalStore } from '../agent/index.js';
import type { Coordinator } from '../coordination/index.js';
import { systemTimeZone, type Clock, type IdGen, type Logger } from '../core/index.js';
import type { Handlers } from '../protocol/contract.js';
import type { Bot, BotApproval, BotsMethods, Message, Task, Thread } from '../protocol/bots.js';
import { ApprovalLinks } from './approval-links.js';
import { BotStore } from './bot-store.js';
import type { BotsConfig } from './config.js';
import type { BotsEmit } from './events.js';
import type { MemoryNotificationFeed } from '../memory/index.js';
import { memoryNotesListener, type MemoryNoteSink } from './memory-notes.js';
import { NotificationDelivery } from './notifications.js';
import { NoteStore } from './note-store.js';
import { SendKeyStore } from './send-keys.js';
import { repairAfterRestart, type RepairResult } from './repair.js';
import { RoutineStore } from './routine-store.js';
import { RoutineScheduler, type RoutineFiring } from './routines.js';
import { toTask } from './rows.js';
import { botsRpcHandlers } from './rpc.js';
import {
  BotRuntime,
  type ControlLinesInfo,
  type DispatchOptions,
  type Dispatched,
  type DroppedJobInfo,
  type RuntimeStatus,
  type SettledInfo,
} from './runtime.js';
import { BotsService, type AttentionSource, type HumanAction } from './service.js';
import type { BotsTables } from './tables.js';
import { leftovers, type Leftovers } from './leftovers.js';
import { isOpenSince, STALE_CLAIM_MS, TaskStore } from './task-store.js';
import type { PersonaSection } from './prompt.js';
import { ThreadStore } from './thread-store.js';
import type { TaskErrorKind } from '../protocol/bots.js';

export interface BotsHostDeps {
  /** The module's view of the database (`tablesView<BotsTables>(store.db)`), migrated with `botsMigrations`. */
  db: Kysely<BotsTables>;
  /**
   * The same tables on the store's read thread (`store.reads`, a SQLite file): triage's reads of
   * many threads run there, beside its other reads on the main thread. Absent: `db`.
   */
  reads?: Kysely<BotsTables> | undefined;
  clock: Clock;
  ids: IdGen;
  /** The agent runner (`start`): every model call of a bot run goes through it and its ledger. */
  runner: Pick<AgentRunner, 'start'>;
  /** The agent layer's approval store: the gate's rows (the bots host links and answers them). */
  approvals: Pick<ApprovalStore, 'get' | 'approve' | 'deny' | 'answer' | 'expire'>;
  emit: BotsEmit;
  log: Logger;
  /**
   * @deprecated Unused and optional (kept so existing callers compile): unattended approvals wait
   * their expiry whether or not a page or client is attached (seed 2 §7.1).
   */
  presence?: (() => boolean) | undefined;
  /** The resolved `[worlds.bots]` section. */
  config: BotsConfig;
  /** The app's coordinator (`CoordinatorKey`): bot runs are its `bots.run` jobs (issue 17). Started and stopped by its owner. */
  coordinator: Coordinator;
  /** The memory store, when there is one (asked at each settle): MEMORY:/TEAM_MEMORY: lines become documents there too. */
  memoryNotes?: (() => MemoryNoteSink | undefined) | undefined;
  /** The memory world's notifications, when the memory module is there: delivered into the Subconscious thread. */
  notifications?: (() => MemoryNotificationFeed | undefined) | undefined;
  /** The configured MCP server names (a bot's tools must be some of them); unchecked when absent. */
  mcpServers?: (() => readonly string[] | Promise<readonly string[]>) | undefined;
}

/**
 * What the heartbeat (seed 2) uses of the host, and nothing more. Documented in `index.ts`.
 */
export interface BotsHeartbeatApi {
  dispatchToBot(botId: string, threadId: string, text: string, options?: DispatchOptions): Promise<Dispatched>;
  isIdle(botId: string): boolean;
  statusOf(botId: string): RuntimeStatus;
  beginPulse(botId: string, controller: AbortController): (() => void) | null;
  isChecking(botId: string): boolean;
  getTask(taskId: string): Promise<Task | undefined>;
  /** Candidates for triage: queued/working tasks and failed ones of a resumable kind (indexed). */
  openWork(opts?: { botIds?: readonly string[]; kinds?: readonly TaskErrorKind[]; limit?: number }): Promise<Task[]>;
  claimTask(taskId: string, claim: { version: number; token: string; by: string; staleMs?: number }): Promise<Task | undefined>;
  renewClaim(taskId: string, token: string): Promise<boolean>;
  releaseClaim(taskId: string, opts?: { token?: string; refund?: boolean }): Promise<Task | undefined>;
  staleClaims(staleMs?: number): Promise<Task[]>;
  resetAttempts(taskId: string): Promise<Task | undefined>;
  /** §7.5: a failed task that used its attempts says so (`error: 'Heartbeat attempts exhausted'`, kind kept). */
  markExhausted(taskId: string): Promise<Task | undefined>;
  directThread(botId: string): Promise<Thread>;
  messages(threadId: string, opts?: { before?: number; limit?: number }): Promise<Message[]>;
  userActivity(threadId: string): Promise<{ userActiveAt: number | null; readAt: number | null }>;
  markUserActive(threadId: string): Promise<number>;
  expiredApprovals(botId: string, since: number): Promise<BotApproval[]>;
  /** A visible note in a thread (`Woke up to continue …`, `Heartbeat: needs you`). */
  postSystemNote(threadId: string, text: string, opts?: { taskId?: string; heartbeat?: boolean }): Promise<Message>;
  /** A finished bot message written by the host (a check-in question), `heartbeat: true`. */
  postBotMessage(botId: string, threadId: string, text: string, opts?: { taskId?: string }): Promise<Message>;
  onSettled(listener: (info: SettledInfo) => void | Promise<void>): () => void;
  onControlLines(listener: (info: ControlLinesInfo) => void | Promise<void>): () => void;
  onJobDropped(listener: (info: DroppedJobInfo) => void | Promise<void>): () => void;
  addPersonaSection(section: PersonaSection): () => void;
  registerAttention(source: AttentionSource): () => void;
  /** A person sent, read, answered, cancelled, dismissed or stopped (check-ins, follow-ups, attempt resets). */
  onHumanAction(listener: (a: HumanAction) => void | Promise<void>): () => void;
  /** Bots by id (those that exist), for the digest's name, label and description. */
  bots(ids: readonly string[]): Promise<Bot[]>;
  /** Which of these bots exist: ids only (triage's check for deleted bots, one narrow read on the primary key). */
  existingBots(ids: readonly string[]): Promise<Set<string>>;
  /** How many bots there are (the Usage tab's interval-heartbeat comparison). */
  countBots(): Promise<number>;
  /**
   * `openWork` of these bots and, of those rows, the ids `orphans` would return: one read where
   * triage made two. When the limit cuts the rows (the oldest fall off, and orphans are old), the
   * orphans are read on their own. Added, and optional: a host without it is asked `openWork` and
   * `orphans` (`triageWorkOf`).
   */
  triageWork?(opts: TriageWorkOptions): Promise<TriageWork>;
  /** Rule 2: queued/working tasks untouched for `olderThanMs` (default 120 s) with no live run (see `BotRuntime.isOrphan`). */
  orphans(opts?: { olderThanMs?: number; botIds?: readonly string[]; limit?: number }): Promise<Task[]>;
  /**
   * Whether `staleClaims`, `orphans` and `staleMessages` could find anything with these ages
   * (defaults as theirs), and whether `fireDueRoutines` would find a routine due now: one indexed
   * statement, so the heartbeat's sweeps cost one read on a quiet tick. A yes is a maybe (those
   * reads still rule out live runs); a no is certain; an absent `routines` is a maybe.
   */
  leftovers(opts?: { claimOlderThanMs?: number; orphanOlderThanMs?: number; streamingOlderThanMs?: number }): Promise<Leftovers>;
  /** Rule 7: bot messages still streaming/queued, untouched for `olderThanMs` (default 60 s), with no live run. */
  staleMessages(opts?: { olderThanMs?: number; limit?: number }): Promise<Message[]>;
  /** Reconcile one such message: `error` + interrupted, text kept (undefined: it moved on, or is live). */
  reconcileMessage(messageId: string, olderThanMs?: number): Promise<Message | undefined>;
  /**
   * Rule 2's repair before a resume: an orphan (still one now) becomes `failed` + interrupted, as
   * restart repair would mark it, its message too; attempts unchanged. Undefined: not an orphan now.
   */
  repairOrphan(taskId: string, olderThanMs?: number): Promise<Task | undefined>;
  /** A thread by id (undefined: none). */
  thread(id: string): Promise<Thread | undefined>;
  /** Triage's reads for many bots in one query each: threads' newest messages, the person's activity, expired approvals. */
  recentMessages(threadIds: readonly string[], limit: number): Promise<Map<string, Message[]>>;
  /**
   * What the rules read of each bot's direct thread: of its newest `limit` messages, at least
   * those that can change a rule's answer (oldest first; any superset within the window, up to
   * all of it, is as exact). Triage reads this for every bot it looks at and the whole window
   * (`recentMessages`) only for the bots that pulse (the digest quotes older messages).
   */
  triageMessages(threads: readonly { threadId: string; botId: string }[], limit: number): Promise<Map<string, Message[]>>;
  userActivities(threadIds: readonly string[]): Promise<Map<string, { userActiveAt: number | null; readAt: number | null }>>;
  expiredApprovalsOf(botIds: readonly string[], since: number): Promise<BotApproval[]>;
  /** Pending approvals per thread, for these threads (one query; a thread with none is absent). */
  pendingApprovalsOf(threadIds: readonly string[]): Promise<Map<string, number>>;
  /**
   * Seed 2 §9.1, routines first: one pass of this host's routine timer now (the routines due are
   * dispatched before the heartbeat's triage reads the bots, so a routine due in the same tick is
   * activity, not a bot to resume). A slot fires once however many passes race for it. Also when
   * the routine timer is not running here (a one-shot `subconscious tick`, a host not started):
   * the heartbeat's tick is then the only pass, and a routine due now is dispatched as durable
   * work like the heartbeat's own resumes.
   */
  fireDueRoutines(): Promise<RoutineFiring[]>;
}

export interface TriageWorkOptions {
  botIds: readonly string[];
  orphanOlderThanMs?: number;
  limit?: number;
}

export interface TriageWork {
  tasks: Task[];
  orphanIds: Set<string>;
}

/** A host's `triageWork`, or the same from `openWork` and `orphans` when it has none. */
export async function triageWorkOf(host: BotsHeartbeatApi, opts: TriageWorkOptions): Promise<TriageWork> {
  if (host.triageWork) return host.triageWork(opts);
  const [tasks, orphans] = await Promise.all([
    host.openWork({ botIds: opts.botIds, ...(opts.limit === undefined ? {} : { limit: opts.limit }) }),
    host.orphans({ botIds: opts.botIds, ...(opts.orphanOlderThanMs === undefined ? {} : { olderThanMs: opts.orphanOlderThanMs }) }),
  ]);
  return { tasks, orphanIds: new Set(orphans.map((t) => t.id)) };
}

/** Seed 2 §5.2: an open task untouched this long with no run is an orphan (rule 2); a streaming message, stale (rule 7). */
export const ORPHAN_AFTER_MS = 120_000;
/** The error of a task the heartbeat gave up on (seed 2 §7.5). */
export const HEARTBEAT_EXHAUSTED = 'Heartbeat attempts exhausted';
export const STALE_MESSAGE_MS = 60_000;

export interface BotsHost {
  service: BotsService;
  runtime: BotRuntime;
  heartbeat: BotsHeartbeatApi;
  rpc: Handlers<BotsMethods>;
  /** Restart repair, then the routine timer. Call once, before serving. */
  start(): Promise<RepairResult>;
  /** Stop the timer and shut the runtime down. */
  stop(): Promise<void>;
  /** Deliver the memory world's new notifications into the Subconscious thread now (resolves to the messages written). */
  deliverNotifications(): Promise<number>;
  /** One routine pass now (tests, `simulate`). */
  tickRoutines(): Promise<RoutineFiring[]>;
  /** Resolves when the routine timer waits for its next tick (tests drive a fake clock after it). */
  routineTimerAsleep(): Promise<void>;
}

export function createBotsHost(deps: BotsHostDeps): BotsHost {
  const { db, clock, ids, log, emit, config } = deps;
  const bots = new BotStore({ db, clock, ids, knownServers: deps.mcpServers });
  const threads = new ThreadStore({ db, clock, ids, reads: deps.reads });
  const tasks = new TaskStore({ db, clock, ids });
  const links = new ApprovalLinks(db);
  const notes = new NoteStore(db, ids);
  const routines = new RoutineStore({ db, clock, ids, timezone: config.timezone ?? systemTimeZone() });
  const runtime = new BotRuntime({
    bots,
    threads,
    tasks,
    links,
    notes,
    runner: deps.runner,
    approvals: deps.approvals,
    clock,
    ids,
    log,
    emit,
    config,
    coordinator: deps.coordinator,
  });
  const delivery = new NotificationDelivery({ threads, emit, log, feed: () => deps.notifications?.() });
  let unsubscribe = (): void => undefined;
  const sendKeys = new SendKeyStore(db, { clock, ids });
  const service = new BotsService({ bots, threads, tasks, links, routines, runtime, approvals: deps.approvals, clock, log, emit, sendKeys });
  const scheduler = new RoutineScheduler({
    routines,
    bots,
    threads,
    tasks,
    runtime,
    clock,
    log,
    emit,
    tickMs: config.routine_tick_seconds * 1000,
    // Every host tick renews this process's lease on its open tasks (orphans are those whose lease ran out).
    // It also picks up notifications another process committed (a one-shot `tick` has no host to wake).
    onTick: async () => {
      try {
        await runtime.renewLease();
        // Jobs another worker queued, or left when it died (its lease lapsed), start here too.
        await runtime.pumpIfDue();
      } finally {
        await delivery.deliver();
      }
    },
  });
  let started = false;
  if (deps.memoryNotes) {
    const sink = deps.memoryNotes;
    runtime.onControlLines(memoryNotesListener({ sink, botName: async (id) => (await bots.get(id))?.name, log }));
  }

  const taskOut = (row: Awaited<ReturnType<TaskStore['row']>>) => {
    if (!row) return undefined;
    const task = toTask(row);
    emit('bots.task_changed', { task });
    return task;
  };

  const heartbeat: BotsHeartbeatApi = {
    dispatchToBot: (botId, threadId, text, options) => runtime.dispatchToBot(botId, threadId, text, options),
    isIdle: (botId) => runtime.isIdle(botId),
    statusOf: (botId) => runtime.statusOf(botId),
    beginPulse: (botId, controller) => runtime.beginPulse(botId, controller),
    isChecking: (botId) => runtime.isChecking(botId),
    getTask: (taskId) => tasks.get(taskId),
    openWork: async (opts) => (await tasks.openWork(opts)).map(toTask),
    claimTask: async (taskId, claim) => taskOut(await tasks.claim(taskId, claim)),
    renewClaim: (taskId, token) => tasks.renewClaim(taskId, token),
    releaseClaim: async (taskId, opts) => taskOut(await tasks.releaseClaim(taskId, opts)),
    staleClaims: async (staleMs) => (await tasks.staleClaims(staleMs)).map(toTask),
    resetAttempts: async (taskId) => taskOut(await tasks.resetAttempts(taskId)),
    markExhausted: async (taskId) => taskOut(await tasks.update(taskId, { error: HEARTBEAT_EXHAUSTED }, { status: ['failed'] })),
    directThread: async (botId) => threads.direct(await bots.require(botId)),
    messages: async (threadId, opts = {}) => (await threads.page(threadId, { before: opts.before, limit: opts.limit ?? 20 })).messages,
    userActivity: (threadId) => threads.activity(threadId),
    markUserActive: (threadId) => service.userActive(threadId, false),
    expiredApprovals: (botId, since) => links.expiredSince(botId, since),
    postSystemNote: async (threadId, text, opts = {}) => {
      const message = await threads.addMessage({ threadId, role: 'system', text, status: 'done', taskId: opts.taskId, heartbeat: opts.heartbeat });
      emit('bots.message_changed', { message });
      return message;
    },
    postBotMessage: async (botId, threadId, text, opts = {}) => {
      await bots.require(botId);
      const message = await threads.addMessage({ threadId, role: 'bot', botId, text, status: 'done', taskId: opts.taskId, heartbeat: true });
      emit('bots.message_changed', { message });
      return message;
    },
    onSettled: (l) => runtime.onSettled(l),
    onControlLines: (l) => runtime.onControlLines(l),
    onJobDropped: (l) => runtime.onJobDropped(l),
    addPersonaSection: (s) => runtime.addPersonaSection(s),
    registerAttention: (s) => service.registerAttention(s),
    onHumanAction: (l) => service.onHumanAction(l),
    bots: (ids) => bots.byIds(ids),
    existingBots: (ids) => bots.existing(ids),
    thread: (id) => threads.get(id),
    recentMessages: (threadIds, limit) => threads.recentMany(threadIds, limit),
    triageMessages: (list, limit) => threads.triageTail(list, limit),
    userActivities: (threadIds) => threads.activities(threadIds),
    expiredApprovalsOf: (botIds, since) => links.expiredSinceMany(botIds, since),
    pendingApprovalsOf: (threadIds) => links.pendingCounts('thread_id', threadIds),
    fireDueRoutines: () => scheduler.tick(),
    repairOrphan: async (taskId, olderThanMs = ORPHAN_AFTER_MS) => {
      const row = await tasks.row(taskId);
      const before = clock.now() - olderThanMs;
      if (!row || (row.status !== 'queued' && row.status !== 'working') || Number(row.updated_at) >= before || !runtime.isOrphan(row, before)) return undefined;
      const error = 'Interrupted: its run was lost (no run was left for it).';
      const repaired = await tasks.update(
        taskId,
        { status: 'failed', interrupted: 1, error_kind: 'interrupted', error, finished_at: clock.now(), owner: null },
        { version: row.version },
      );
      if (!repaired) return undefined;
      if (row.message_id) {
        const message = await threads.interruptIfStale(row.message_id, clock.now() + 1, error);
        if (message) emit('bots.message_changed', { message });
      }
      return taskOut(repaired);
    },
    countBots: () => bots.count(),
    triageWork: async (opts) => {
      const limit = opts.limit ?? 1000;
      const before = clock.now() - (opts.orphanOlderThanMs ?? ORPHAN_AFTER_MS);
      const rows = await tasks.openWork({ botIds: opts.botIds, limit, sortHere: true, lean: true });
      const orphanIds = new Set<string>();
      if (rows.length < limit) {
        // The same test as `openSince`'s SQL, then the runtime's: the rows are all open work of these bots.
        for (const r of rows) if (isOpenSince(r, before) && runtime.isOrphan(r, before)) orphanIds.add(r.id);
      } else {
        const older = opts.orphanOlderThanMs === undefined ? {} : { olderThanMs: opts.orphanOlderThanMs };
        for (const t of await heartbeat.orphans({ ...older, botIds: opts.botIds })) orphanIds.add(t.id);
      }
      return { tasks: rows.map(toTask), orphanIds };
    },
    orphans: async (opts = {}) => {
      const before = clock.now() - (opts.olderThanMs ?? ORPHAN_AFTER_MS);
      // The lease does the work in SQL; the runtime only rules out this process's own live jobs.
      const rows = await tasks.openSince(before, { botIds: opts.botIds, limit: opts.limit });
      return rows.filter((r) => runtime.isOrphan(r, before)).map(toTask);
    },
    leftovers: (opts = {}) => {
      const now = clock.now();
      return leftovers(db, {
        claimBefore: now - (opts.claimOlderThanMs ?? STALE_CLAIM_MS),
        openBefore: now - (opts.orphanOlderThanMs ?? ORPHAN_AFTER_MS),
        streamingBefore: now - (opts.streamingOlderThanMs ?? STALE_MESSAGE_MS),
        routinesBy: now,
      });
    },
    staleMessages: async (opts = {}) => {
      const rows = await threads.staleBotMessages(clock.now() - (opts.olderThanMs ?? STALE_MESSAGE_MS), opts.limit);
      return staleWithoutRun(rows);
    },
    reconcileMessage: async (messageId, olderThanMs = STALE_MESSAGE_MS) => {
      const current = await threads.getMessage(messageId);
      if (!current || (await staleWithoutRun([current])).length === 0) return undefined;
      const message = await threads.interruptIfStale(
        messageId,
        clock.now() - olderThanMs,
        'Interrupted: this reply stopped being written (no run was left for it).',
      );
      if (message) emit('bots.message_changed', { message });
      return message;
    },
  };

  /** Messages whose bot has nothing here and whose task is not live anywhere we can see. */
  async function staleWithoutRun(rows: Message[]): Promise<Message[]> {
    const taskIds = [...new Set(rows.map((m) => m.task_id).filter((t): t is string => t !== null))];
    const owners = new Map((await Promise.all(taskIds.map((id) => tasks.row(id)))).filter((r) => r !== undefined).map((r) => [r.id, r] as const));
    return rows.filter((m) => {
      if (m.role !== 'bot' || m.bot_id === null || !runtime.isIdle(m.bot_id)) return false;
      const task = m.task_id ? owners.get(m.task_id) : undefined;
      if (!task) return true;
      // A task still open belongs to its own run (rule 2 covers it when that run is gone).
      return task.status !== 'queued' && task.status !== 'working' && !runtime.hasJobFor(task.id);
    });
  }

  return {
    service,
    runtime,
    heartbeat,
    rpc: botsRpcHandlers(service),
    async start() {
      if (started) throw new Error('the bots host is already started');
      started = true;
      const repaired = await repairAfterRestart({
        db,
        tasks,
        links,
        approvals: deps.approvals,
        clock,
        log,
        emit,
        busy: (botId) => !runtime.isIdle(botId),
        adopt: (row) => runtime.adopt(row),
        liveJob: (row) => runtime.hasLiveJob(row),
        orphanAfterMs: deps.coordinator.leaseMs,
      });
      // Jobs queued before the restart (and those just adopted) simply run.
      void runtime.pump();
      // Notifications committed while no host ran, then each one as this process commits it.
      unsubscribe = deps.notifications?.()?.onNotification(() => void delivery.deliver()) ?? unsubscribe;
      await delivery.deliver();
      scheduler.start();
      return repaired;
    },
    async stop() {
      unsubscribe();
      await scheduler.stop();
      await delivery.idle();
      await runtime.dispose();
    },
    deliverNotifications: () => delivery.deliver(),
    tickRoutines: () => scheduler.tick(),
    routineTimerAsleep: () => scheduler.whenAsleep(),
  };
}
