/**
 * The tasks world's operations outside ticks (what RPC, the CLI and the page call): tasks
 * CRUD (each task says why it is or is not evaluated next), the activity log (flat, grouped by
 * tick, one row's detail), escalations with approve (runs the agent in `full` mode once) and
 * dismiss (runs nothing), and the system's health (models and skills, probed at start and every
 * few minutes; a skill-related escalation resolves by itself once its skill is healthy again).
 * Every change is an EventBus event: `tasks.changed`, `tasks.log_changed`,
 * `tasks.escalation_changed`, `tasks.health_changed`.
 */
import type { Kysely } from 'kysely';
import { SubconsciousError, describeError } from '../../core/errors.js';
import { processOwner, silentLogger } from '../../core/index.js';
import type { Coordinator, Job } from '../../coordination/index.js';
import type { Clock, Emitter, IdGen, Logger } from '../../core/index.js';
import type { LogFilter } from './log-store.js';
import type { TasksEvents } from '../../protocol/tasks.js';
import type { TasksTables } from './tables.js';
import { EscalationStore } from './escalation-store.js';
import { HealthMonitor, isHealthy, skillRows, type HealthSnapshot } from './health.js';
import { HeartbeatFile, type HeartbeatSnapshot } from './heartbeat-md.js';
import { executionDetail, executionRecord } from './log-detail.js';
import { answeredOutcome, gateOf, runAgentExecution, type AgentExecution } from './agent-execution.js';
import { APPROVED_CONCURRENCY, TASKS_APPROVED_QUEUE, approvedJobSpec, approvedRun, parseApprovedPayload } from './approved-jobs.js';
import { NO_USAGE, freshCheckpoint, resumePlan, stoppedText, type ExecUsage } from './exec-checkpoint.js';
import { groupLog } from './log-groups.js';
import { LOG_TEXT, LogStore } from './log-store.js';
import { AGENT_APPROVED_SYSTEM, approvedActionPrompt } from './prompts.js';
import { checkToolArguments } from '../../agent/index.js';
import type { AnswerVia, ApprovalAnswerKind } from '../../protocol/index.js';

/** One answer to a card (`subconscious.escalations_answer`). */
export interface EscalationAnswerInput {
  answer: ApprovalAnswerKind;
  arguments?: Record<string, unknown> | undefined;
  text?: string | undefined;
  wait?: boolean | undefined;
  by?: string | undefined;
  via?: AnswerVia | undefined;
}
import { defaultTimezone, validateTimezone } from './recurrence.js';
import { TaskStore, publicTask, type AddTaskInput, type HeartbeatSyncResult, type StoredTask, type UpdateTaskInput } from './task-store.js';
import { TickStore } from './tick-store.js';
import type {
  AgentOutcome,
  AgentToolStep,
  ApprovalTrailItem,
  ApproveResult,
  Escalation,
  EscalationStatus,
  LogDecision,
  LogDetail,
  LogEntry,
  LogGroups,
  ModelsProbe,
  SkillsHealth,
  SystemHealth,
  Task,
  TaskAgent,
  TaskApprovals,
  TaskWhy,
} from './types.js';

const DAY_MS = 86_400_000;
/** Default: how often models and skills are probed while the daemon runs. */
export const DEFAULT_HEALTH_CHECK_MS = 5 * 60_000;

export interface TasksServiceDeps {
  db: Kysely<TasksTables>;
  clock: Clock;
  ids: IdGen;
  events: Emitter<TasksEvents>;
  log?: Logger | undefined;
  workspace: string;
  timezone?: string | undefined;
  /** The agent runner; without it write-intent tasks and approvals fail with a clear message. */
  agent?: TaskAgent | undefined;
  /** The approval store: a write-intent run's writes its task names are approved through it (none: every write is held). */
  approvals?: TaskApprovals | undefined;
  /** The model layer's probe (no calls): the health section and the page's model banner. */
  models?: ModelsProbe | undefined;
  /** The MCP manager's health. */
  skills?: SkillsHealth | undefined;
  /** How often the health probe runs once started (default 5 minutes). */
  healthCheckMs?: number | undefined;
  /** The skip's safety net in ms (0: no skip), for the "unchanged until" a task shows. */
  reevaluateUnchangedMs?: (() => number) | undefined;
  /** The instance name used for ledger rows and events (default `tasks`). */
  world?: string | undefined;
  /** Why this world is off (config or the page's switch), or null: then no task is evaluated, and each says so. */
  worldOff?: (() => Promise<string | null>) | undefined;
  /** Durable jobs (issue 17): an approved action is a `tasks.approved_action` job any worker runs (approved-jobs.ts). */
  coordinator?: Coordinator | undefined;
  /** This worker's id (default the coordinator's, else `host:pid`): an execution's owner, named when another worker takes it over. */
  worker?: string | undefined;
}

/** How often a caller waiting for an approved action another worker runs reads its row. */
const FINISHED_POLL_MS = 1000;

export class TasksService {
  readonly tasks: TaskStore;
  readonly logs: LogStore;
  readonly escalations: EscalationStore;
  readonly ticks: TickStore;
  readonly heartbeat: HeartbeatFile;
  readonly health: HealthMonitor;
  readonly world: string;
  readonly timezone: string;
  /** Written as an execution's owner (the coordinator's worker id): named when another worker takes it over. */
  readonly worker: string;
  private ready: Promise<void> | undefined;
  /** `ensureReady()` finished once in this process (the probe needs its defaults and import done). */
  private readyDone = false;
  private readonly inflight = new Set<Promise<unknown>>();
  /** Stops this worker's approved-action job loop (`startJobs`). */
  private stopJobs: (() => Promise<void>) | undefined;
  /** Callers of `answer({wait: true})` waiting for a row, woken when this worker finishes it. */
  private readonly finishWaiters = new Map<string, Set<() => void>>();
  /** Aborted by `close()`: approved runs still going are cancelled instead of holding up shutdown. */
  private readonly closing = new AbortController();

  constructor(readonly deps: TasksServiceDeps) {
    this.timezone = validateTimezone(deps.timezone ?? defaultTimezone());
    const now = () => deps.clock.now();
    this.tasks = new TaskStore(deps.db, deps.clock, deps.ids, this.timezone);
    this.logs = new LogStore(deps.db, now);
    this.escalations = new EscalationStore(deps.db, now);
    this.ticks = new TickStore(deps.db, now);
    this.heartbeat = new HeartbeatFile(deps.workspace);
    this.world = deps.world ?? 'tasks';
    this.worker = deps.worker ?? deps.coordinator?.workerId ?? processOwner();
    this.health = new HealthMonitor({
      clock: deps.clock,
      models: deps.models,
      skills: deps.skills,
      roles: deps.agent ? ['local', 'agent'] : ['local'],
      intervalMs: deps.healthCheckMs ?? DEFAULT_HEALTH_CHECK_MS,
      log: deps.log,
      onChecked: (snapshot, changed) => this.afterHealthCheck(snapshot, changed),
    });
  }

  /** Seed the default system tasks and import HEARTBEAT.md once per process (idempotent). */
  ensureReady(): Promise<void> {
    this.ready ??= (async () => {
      await this.tasks.seedDefaults();
      await this.syncHeartbeat();
      this.readyDone = true;
    })().catch((err) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  /** Whether `ensureReady()` has finished in this process (then it does nothing more). */
  get isReady(): boolean {
    return this.readyDone;
  }

  /**
   * Re-import HEARTBEAT.md when it changed (stat, then hash); returns what the file holds now.
   * A file that exists but cannot be read changes nothing (its tasks stay as imported) and is
   * logged; a failed import is retried on the next call.
   */
  async syncHeartbeat(): Promise<HeartbeatSnapshot & { sync: HeartbeatSyncResult | null }> {
    let read: Awaited<ReturnType<HeartbeatFile['read']>>;
    try {
      read = await this.heartbeat.read();
    } catch (err) {
      this.deps.log?.warn(
        { world: this.world, file: this.heartbeat.file, err: describeError(err) },
        'HEARTBEAT.md could not be read; its tasks stay as they were',
      );
      return { exists: true, lines: [], hash: null, mtimeMs: null, sync: null };
    }
    const { changed, snapshot } = read;
    if (!changed) return { ...snapshot, sync: null };
    let result: HeartbeatSyncResult;
    try {
      result = await this.tasks.syncHeartbeat(snapshot.lines);
    } catch (err) {
      this.heartbeat.reset(); // not imported: the next read must import again
      throw err;
    }
    if (result.added || result.disabled || result.reenabled || result.renamed || result.rights) {
      this.emit('tasks.changed', { reason: 'heartbeat_md', ...result });
      this.deps.log?.info({ world: this.world, ...result }, 'HEARTBEAT.md imported');
    }
    return { ...snapshot, sync: result };
  }

  /** `removed`: the removed tasks instead (what `restoreTask` brings back), each "off: removed". */
  async listTasks(opts: { removed?: boolean } = {}): Promise<Task[]> {
    await this.ensureReady();
    if (opts.removed) return (await this.tasks.listRemoved()).map((t) => publicTask(t, { kind: 'off', at: null, until: null, detail: 'removed' }));
    // An edited HEARTBEAT.md shows at once, not only after the next tick (a stat when unchanged).
    await this.syncHeartbeat();
    return this.describeAll(await this.tasks.list());
  }

  async addTask(input: AddTaskInput): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.add(input);
    this.emit('tasks.changed', { id: task.id, action: 'added' });
    return (await this.describeAll([task]))[0]!;
  }

  async updateTask(id: string, input: UpdateTaskInput): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.update(id, input);
    this.emit('tasks.changed', { id, action: 'updated' });
    return (await this.describeAll([task]))[0]!;
  }

  async removeTask(id: string): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.remove(id);
    this.emit('tasks.changed', { id, action: 'removed' });
    // What a removed task recommended must not run later: its pending escalations are skipped.
    for (const escalationId of await this.escalations.pendingIdsFor(id)) await this.dismissIfPending(escalationId);
    return publicTask(task, { kind: 'off', at: null, until: null, detail: 'removed' });
  }

  /** Bring back a removed user task as it was (`subconscious.tasks_restore`, the page's Undo). */
  async restoreTask(id: string): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.restore(id);
    this.emit('tasks.changed', { id, action: 'restored' });
    return (await this.describeAll([task]))[0]!;
  }

  /** Each task with why it is (or is not) evaluated at the next tick. */
  private async describeAll(tasks: StoredTask[]): Promise<Task[]> {
    const pending = new Map<string, string>();
    for (const e of await this.escalations.list('pending')) if (!pending.has(e.task_id)) pending.set(e.task_id, e.description);
    const local = this.health.current().models.find((m) => m.role === 'local');
    const now = this.deps.clock.now();
    const safetyNet = this.deps.reevaluateUnchangedMs?.() ?? 0;
    const worldOff = (await this.deps.worldOff?.()) ?? null;
    return tasks.map((t) => publicTask(t, whyOf(t, { pending, local, now, safetyNet, worldOff })));
  }

  listLog(opts: LogFilter & { limit?: number; offset?: number } = {}): Promise<LogEntry[]> {
    return this.logs.list(opts);
  }

  /** The log grouped by tick, newest first; `before` pages on (a tick time). */
  async logTicks(opts: LogFilter & { limit?: number; before?: number | undefined } = {}): Promise<LogGroups> {
    const limit = opts.limit ?? 20;
    const { ticks, rows } = await this.logs.ticksPage(opts, limit, opts.before);
    const totals = await this.ticks.totals(ticks.map((t) => t.tick_id));
    const groups = groupLog(ticks, rows, totals);
    return { groups, next_before: ticks.length === limit ? ticks.at(-1)!.tick_at : null };
  }

  /** Everything behind one row: the report as sent, the raw answer, tool calls, figures, the approval trail. */
  async logDetail(id: string): Promise<LogDetail> {
    const entry = await this.logs.get(id);
    if (!entry) {
      throw new SubconsciousError('not_found', 'That activity log entry does not exist (any more): old entries are deleted after the retention period.', {
        details: { field: 'id' },
      });
    }
    const [stored, tick, detail, escalation] = await Promise.all([
      this.tasks.get(entry.task_id),
      this.ticks.get(entry.tick_id),
      this.logs.detail(id),
      this.escalations.forLog(id),
    ]);
    const task = stored ? (await this.describeAll([stored]))[0]! : null;
    const evaluation = tick?.evaluations.find((e) => e.task_ids.includes(entry.task_id));
    const approvals: ApprovalTrailItem[] = [];
    const auto = detail.auto_approved ?? [];
    const held = detail.held ?? [];
    for (const a of auto) {
      approvals.push({
        at: a.at,
        what: `${a.tool} on ${a.server} ${a.arguments}`,
        state: 'approved',
        by: 'subconscious',
        note: 'the task’s own words name this write',
      });
    }
    for (const w of held) {
      approvals.push({
        at: entry.updated_at,
        what: `${w.tool} on ${w.server} ${w.arguments}`,
        state: 'pending',
        by: null,
        note: 'the task’s words do not name this write, so it did not run and waits for your approval',
      });
    }
    if (escalation) {
      if (!held.length)
        approvals.push({ at: escalation.created_at, what: escalation.description, state: 'pending', by: null, note: 'asked for your approval' });
      if (escalation.status !== 'pending' && escalation.resolved_at !== null) {
        approvals.push({
          at: escalation.resolved_at,
          what: escalation.description,
          state: escalation.status,
          by: escalation.resolved_by === 'subconscious' ? 'subconscious' : 'you',
          note: escalation.resolution,
          ...(escalation.answer ? { answered_by: escalation.answer.by, answered_via: escalation.answer.via } : {}),
        });
      }
    }
    // Tool approvals the runs behind the row asked for at the approval gate, besides those said above.
    for (const runId of [detail.execution?.run_id, detail.approved?.run_id]) {
      if (!runId || !this.deps.approvals) continue;
      const told = { approved: auto.map((a) => a.tool), expired: held.map((w) => w.tool) };
      for (const a of await this.deps.approvals.list({ runId })) {
        const same = a.state === 'approved' ? told.approved : a.state === 'expired' ? told.expired : [];
        const at = same.indexOf(a.tool);
        if (at >= 0) {
          same.splice(at, 1);
          continue;
        }
        approvals.push({
          at: a.answered_at ?? a.created_at,
          what: `${a.tool} on ${a.server}`,
          state: a.state as ApprovalTrailItem['state'],
          by: a.state === 'approved' || a.state === 'denied' ? 'you' : null,
          note: a.state === 'expired' ? 'nobody answered in time; the tool did not run' : null,
        });
      }
    }
    approvals.sort((a, b) => a.at - b.at);
    return {
      entry,
      task,
      tick: tick ? { tick_id: tick.tick_id, tick_at: tick.tick_at, duration_ms: tick.duration_ms, tasks: tick.tasks } : null,
      report: tick?.report ?? null,
      report_tokens: tick?.report_tokens ?? null,
      evaluation: evaluation
        ? {
            model: evaluation.model,
            calls: evaluation.calls ?? 1,
            input_tokens: evaluation.input_tokens,
            output_tokens: evaluation.output_tokens,
            latency_ms: evaluation.latency_ms,
            raw_answer: evaluation.raw,
            tasks_in_call: evaluation.task_ids.length,
          }
        : null,
      execution: executionDetail(detail.execution),
      approved_action: executionDetail(detail.approved),
      approvals,
    };
  }

  /** What the health probe last found ({check}: probe now). */
  async systemHealth(opts: { check?: boolean } = {}): Promise<SystemHealth> {
    const snapshot = opts.check ? await this.health.check() : this.health.current();
    const now = this.deps.clock.now();
    return {
      models: snapshot.models,
      skills: skillRows(snapshot.skills),
      recent_failures: await this.logs.countFailures(now - DAY_MS),
      checked_at: snapshot.checkedAt,
      next_check_at: this.health.nextCheckAt(),
    };
  }

  listEscalations(status?: EscalationStatus): Promise<Escalation[]> {
    return this.escalations.list(status);
  }

  /** Approve a pending escalation: `answer` with accept (the older name). */
  approve(id: string, opts: { wait?: boolean; by?: string | undefined; via?: AnswerVia | undefined } = {}): Promise<ApproveResult> {
    return this.answer(id, { answer: 'accept', ...opts });
  }

  /**
   * Answer a pending escalation (issue 23). A card holding a tool call runs exactly that call
   * (accept), or it with the person's arguments checked against the tool's schema (edit), in an
   * attended run that continues from its result and asks again before any other write; respond
   * hands the person's text to that run instead of the call; ignore runs nothing. A card in words
   * (a recommended action) runs the agent once in `full` mode (accept), or with the person's
   * reply in an attended `tainted` run (respond); it has no call to edit. Answering twice, after
   * a dismissal or an unknown id changes nothing (conflict / not_found); the run's result lands
   * on the card's log row, and the answer (kind, arguments or text, who, through what) on the card.
   */
  async answer(id: string, input: EscalationAnswerInput): Promise<ApproveResult> {
    const who = { by: input.by, via: input.via };
    if (input.answer === 'ignore') return { escalation: await this.dismiss(id, who), run_id: null };
    if (!this.deps.agent) {
      const known = await this.escalations.get(id);
      if (!known) throw new SubconsciousError('not_found', 'That approval card does not exist (any more).', { details: { field: 'id' } });
      throw new SubconsciousError('forbidden', 'No agent model is configured, so an approved action cannot run; the escalation stays pending.', {
        hint: 'Configure [models.agent] in subconscious.toml and approve again.',
      });
    }
    if (this.closing.signal.aborted) {
      throw new SubconsciousError('conflict', 'subconscious is shutting down; the escalation stays pending.', {
        hint: 'Approve it again after the next start.',
      });
    }
    const pending = await this.escalations.get(id);
    if (!pending) throw new SubconsciousError('not_found', 'That approval card does not exist (any more).', { details: { field: 'id' } });
    if (pending.status === 'pending' && !(await this.tasks.get(pending.task_id))) {
      await this.dismissIfPending(id);
      throw new SubconsciousError('conflict', `The task that asked “${pending.title}” was removed, so its action was not run; the card is skipped.`, {
        details: { field: 'id' },
      });
    }
    const text = input.answer === 'respond' ? (input.text ?? '').trim() : '';
    if (input.answer === 'respond' && !text) {
      throw new SubconsciousError('invalid_params', 'respond needs the text to send back to the run.', { details: { field: 'text' } });
    }
    const action = pending.action;
    let args: Record<string, unknown> | null = null;
    if (input.answer === 'edit') {
      if (!action) {
        throw new SubconsciousError('invalid_params', `“${pending.title}” asks in words, not with a tool call, so there are no arguments to edit.`, {
          hint: 'Respond with what to do instead.',
          details: { field: 'arguments' },
        });
      }
      args = checkToolArguments(action.tool, action.input_schema, input.arguments);
    }
    const coordinator = this.requireCoordinator();
    const escalation = await this.escalations.resolve(id, 'approved', 'person', null, {
      kind: input.answer,
      arguments: args,
      text: text || null,
      by: input.by,
      via: input.via,
    });
    this.emit('tasks.escalation_changed', { id, status: 'approved' });
    // The run's id is known now (the answer names it); its job starts the run under it.
    const runId = this.deps.ids();
    await this.logs.update(escalation.log_id, {
      decision: 'in_progress',
      result: text && !action ? LOG_TEXT.responded_running : LOG_TEXT.approved_running,
      exec_state: 'running',
      exec_mode: approvedRun(escalation).mode,
      exec_started_at: this.deps.clock.now(),
      exec_owner: this.worker,
      exec_checkpoint: JSON.stringify(freshCheckpoint(0)),
      run_id: runId,
    });
    this.emitLog(escalation.log_id, escalation.task_id, 'in_progress');
    // Committed before the answer returns: from here on the action survives a kill (a restart
    // that finds the row running without its job sends it again: `startJobs`). A process with no
    // job loop (a one-shot command with no daemon up) leaves it queued for the next worker, and
    // does not wait for it.
    const finished = input.wait && this.stopJobs ? this.whenFinished(escalation.log_id) : null;
    await coordinator.send(approvedJobSpec(escalation.id));
    if (!finished) return { escalation, run_id: runId };
    const log = await finished;
    return { escalation, run_id: log.run_id ?? runId, log };
  }

  /** Dismiss a pending escalation (ignore): nothing runs; its log row reads "Skipped". */
  async dismiss(id: string, who: { by?: string | undefined; via?: AnswerVia | undefined } = {}): Promise<Escalation> {
    const escalation = await this.escalations.resolve(id, 'dismissed', 'person', null, { kind: 'ignore', ...who });
    await this.logs.update(escalation.log_id, { decision: 'dismissed', result: LOG_TEXT.dismissed });
    this.emit('tasks.escalation_changed', { id, status: 'dismissed' });
    this.emitLog(escalation.log_id, escalation.task_id, 'dismissed');
    return escalation;
  }

  /**
   * A skill-related escalation asked the person to fix a skill; once that skill is healthy again
   * there is nothing left to approve: it resolves by itself, and its log row says so.
   */
  async resolveHealedSkills(skills: readonly { name: string; status: string }[] | undefined): Promise<number> {
    if (!skills?.length) return 0;
    const healthy = new Set(skills.filter((s) => isHealthy(s.status)).map((s) => s.name));
    let resolved = 0;
    for (const e of await this.escalations.pendingForSkills()) {
      if (!e.skill_server || !healthy.has(e.skill_server)) continue;
      const note = `the skill “${e.skill_server}” is healthy again`;
      let done: Escalation;
      try {
        done = await this.escalations.resolve(e.id, 'resolved', 'subconscious', note);
      } catch (err) {
        if (err instanceof SubconsciousError && err.code === 'conflict') continue; // answered meanwhile
        throw err;
      }
      await this.logs.update(done.log_id, { decision: 'resolved', result: `Resolved by itself: ${note}, so nothing waits for your approval.` });
      this.emit('tasks.escalation_changed', { id: done.id, status: 'resolved', task_id: done.task_id });
      this.emitLog(done.log_id, done.task_id, 'resolved');
      this.deps.log?.info({ world: this.world, escalation: done.id, skill: e.skill_server }, 'skill-related escalation resolved by itself');
      resolved++;
    }
    return resolved;
  }

  /** Dismiss, unless someone answered it first (then it is theirs). */
  private async dismissIfPending(id: string): Promise<void> {
    try {
      // Nobody answered it: subconscious skips it (the page does not list it as a person's answer).
      await this.dismiss(id, { by: 'subconscious', via: 'subconscious' });
    } catch (err) {
      if (!(err instanceof SubconsciousError && err.code === 'conflict')) throw err;
    }
  }

  /** Wait for approved runs this worker runs now (tests). */
  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  /**
   * Start this worker's job loop for approved actions (the module's start, on every worker, face or
   * not), after sending a job for every approved card whose row still runs without one: a row of a
   * release that ran approved actions in memory, or one whose answer was cut off before its job was
   * sent (the key makes a job that exists the one found, not a second).
   */
  async startJobs(): Promise<void> {
    const coordinator = this.deps.coordinator;
    if (!coordinator || this.stopJobs) return;
    for (const escalationId of await this.logs.approvedRunning()) await coordinator.send(approvedJobSpec(escalationId));
    this.stopJobs = coordinator.work(TASKS_APPROVED_QUEUE, { batchSize: APPROVED_CONCURRENCY, pollIntervalMs: coordinator.leaseMs / 2 }, (job, ctx) =>
      this.track(this.runApprovedJob(job, ctx.signal)),
    );
  }

  /**
   * Shutdown: stop taking approved jobs, cancel the runs still going (an agent run may take up to
   * its cap, and a stop must not wait for it) and wait until their rows say so. Not re-run at the
   * next start: the action may have partly happened. Jobs not started yet stay queued and run then.
   */
  async close(): Promise<void> {
    if (!this.closing.signal.aborted) this.closing.abort(new SubconsciousError('cancelled', 'subconscious is shutting down'));
    await this.health.close();
    await this.stopJobs?.();
    await this.drain();
  }

  /** One `tasks.approved_action` job: its card's action run, continued or applied from the row's checkpoint. */
  private async runApprovedJob(job: Job, jobSignal: AbortSignal): Promise<void> {
    const parsed = parseApprovedPayload(job.payload);
    if (!parsed.ok) {
      this.deps.log?.warn({ world: this.world, job: job.id, reason: parsed.reason }, 'an approved action job was moved aside: its payload does not parse');
      await this.requireCoordinator().deadLetter(job.id, `${TASKS_APPROVED_QUEUE} payload: ${parsed.reason}`);
      return;
    }
    const escalation = await this.escalations.get(parsed.escalationId);
    const row = escalation ? await this.logs.get(escalation.log_id) : undefined;
    // Settled before (a worker killed between its row and its job's completion), or gone: nothing runs again.
    if (!escalation || escalation.status !== 'approved' || !row || row.exec_state !== 'running') return;
    const finished = await this.executeApproved(escalation, row, job.takenOverFrom, jobSignal);
    if (finished) this.notifyFinished(finished);
  }

  /**
   * Run the approved action of a card whose row is `running`, or continue it from the row's
   * checkpoint after a take-over (exec-checkpoint.ts): applied from an answer that had arrived,
   * continued told the steps already taken, or stopped and said so when a write was in flight, it
   * was cut off too often or nothing readable was recorded. Undefined when this worker lost the job
   * to another one meanwhile (what that worker writes stands).
   */
  private async executeApproved(escalation: Escalation, row: LogEntry, takenOverFrom: string | null, jobSignal: AbortSignal): Promise<LogEntry | undefined> {
    const how = approvedRun(escalation);
    const startedAt = this.deps.clock.now();
    const cut = await this.logs.execCheckpoint(row.id);
    const plan = resumePlan(cut.checkpoint);
    // A job taken over before its run began cut nothing off, but says whose it was (as a bot job does).
    const from = takenOverFrom ?? (plan.kind === 'fresh' ? null : (cut.owner ?? 'a previous worker'));
    const finish = (outcome: AgentOutcome | null, err: unknown, execution: Omit<AgentExecution, 'outcome'> | null) => {
      const routed = outcomeToRow(outcome, err);
      if (routed.decision === 'cancelled' && this.closing.signal.aborted) routed.result = APPROVED_STOPPED;
      return this.finishApproved(escalation, startedAt, routed, execution && { ...execution, answer: outcome?.text ?? null }, how.mode, from);
    };
    if (plan.kind === 'unknown' || plan.kind === 'in_flight' || plan.kind === 'too_often') {
      // Nothing is run again: what may have happened is said on the row, for the person.
      const result = stoppedText(plan, from ?? 'a previous worker');
      const cp = plan.kind === 'unknown' ? null : plan.checkpoint;
      return this.finishApproved(
        escalation,
        startedAt,
        { decision: 'failed', result },
        cp && { runId: row.run_id, steps: cp.steps, usage: cp.usage, answer: null },
        how.mode,
        from,
      );
    }
    if (plan.kind === 'answered') {
      // Its answer had arrived before the cut-off: settled from the checkpoint, with no new model call.
      const outcome = answeredOutcome(plan.answer, plan.checkpoint);
      return finish(outcome, undefined, { runId: plan.answer.run_id, steps: plan.checkpoint.steps, usage: plan.checkpoint.usage });
    }
    const agent = this.deps.agent;
    if (!agent)
      return finish(null, new SubconsciousError('forbidden', 'No agent model is configured on this worker, so the approved action cannot run.'), null);
    if (!(await this.logs.beginRun(row.id, plan.checkpoint, this.worker))) return undefined;
    const signal = AbortSignal.any([this.closing.signal, jobSignal]);
    let execution: AgentExecution;
    try {
      execution = await runAgentExecution(
        { agent, logs: this.logs, clock: this.deps.clock, log: this.deps.log ?? silentLogger },
        {
          logId: row.id,
          checkpoint: { ...plan.checkpoint, runs: plan.checkpoint.runs + 1 },
          continued: plan.kind === 'continue',
          gate: gateOf(plan.checkpoint),
          start: {
            world: this.world,
            purpose: 'approved_action',
            system: AGENT_APPROVED_SYSTEM,
            prompt: approvedActionPrompt(escalation.title, escalation.description, escalation.analysis, how.reply),
            mode: how.mode,
            attended: true,
            title: escalation.title,
            signal,
            // The answer named the first run's id; a continued run is a new one.
            ...(plan.kind === 'fresh' && row.run_id ? { runId: row.run_id } : {}),
            ...(how.decided ? { decided: how.decided } : {}),
          },
          onStarted: async (runId) => {
            await this.logs.update(row.id, { run_id: runId });
            this.emitLog(row.id, escalation.task_id, 'in_progress');
          },
        },
      );
    } catch (err) {
      if (jobSignal.aborted && !this.closing.signal.aborted) return undefined;
      return finish(null, err, null);
    }
    // Another worker holds the job now (this one stopped renewing in time): its writes stand.
    if (jobSignal.aborted && !this.closing.signal.aborted) return undefined;
    return finish(execution.outcome, undefined, execution);
  }

  /** Resolves with the card's log row once its approved action finished (here, or on another worker: polled). */
  private async whenFinished(logId: string): Promise<LogEntry> {
    for (;;) {
      // Listening before reading: a finish in between is not missed.
      const stop = new AbortController();
      const woken = new Promise<void>((resolve) => this.onFinished(logId, resolve, stop.signal));
      const row = await this.logs.get(logId);
      if (!row) throw new SubconsciousError('not_found', 'The activity log entry vanished while its approved action ran.');
      if (row.exec_state === 'done' || this.closing.signal.aborted) {
        stop.abort();
        return row;
      }
      await Promise.race([woken, this.deps.clock.sleep(FINISHED_POLL_MS, AbortSignal.any([stop.signal, this.closing.signal])).catch(() => undefined)]);
      stop.abort();
    }
  }

  private onFinished(logId: string, resolve: () => void, signal: AbortSignal): void {
    const set = this.finishWaiters.get(logId) ?? new Set<() => void>();
    set.add(resolve);
    this.finishWaiters.set(logId, set);
    signal.addEventListener(
      'abort',
      () => {
        set.delete(resolve);
        if (!set.size) this.finishWaiters.delete(logId);
      },
      { once: true },
    );
  }

  private notifyFinished(row: LogEntry): void {
    for (const resolve of [...(this.finishWaiters.get(row.id) ?? [])]) resolve();
  }

  private requireCoordinator(): Coordinator {
    const coordinator = this.deps.coordinator;
    if (!coordinator) {
      throw new SubconsciousError('unavailable', 'Approved actions run as durable jobs, and this tasks service has no coordinator; nothing was approved.', {
        hint: 'Run the tasks world in the app (subconscious start), which gives it the coordinator.',
      });
    }
    return coordinator;
  }

  emitLog(id: string, taskId: string, decision: LogDecision): void {
    this.emit('tasks.log_changed', { id, task_id: taskId, decision });
  }

  /** Every tasks event names the instance it came from. */
  emit<K extends keyof TasksEvents>(type: K, data: Omit<TasksEvents[K], 'world'>): void {
    this.deps.events.emit(type, { ...data, world: this.world } as TasksEvents[K]);
  }

  private async afterHealthCheck(snapshot: HealthSnapshot, changed: boolean): Promise<void> {
    if (changed) {
      this.emit('tasks.health_changed', {
        models_available: snapshot.models.every((m) => m.available !== false),
        unhealthy_skills: (snapshot.skills ?? []).filter((s) => !isHealthy(s.status)).length,
      });
    }
    await this.resolveHealedSkills(snapshot.skills);
  }

  /** The approved action's outcome on its card's row: its record (figures, tool steps, "taken over from …"), then its decision. */
  private async finishApproved(
    escalation: Escalation,
    startedAt: number,
    routed: { decision: LogDecision; result: string },
    execution: { runId: string | null; steps: readonly AgentToolStep[]; usage: ExecUsage; answer: string | null } | null,
    mode: 'full' | 'tainted',
    from: string | null,
  ): Promise<LogEntry> {
    const record = executionRecord({
      mode,
      purpose: 'approved_action',
      model: this.modelName('agent'),
      // The ledger's figures for the runs' model calls.
      usage: execution?.usage ?? NO_USAGE,
      steps: execution?.steps ?? [],
      runId: execution?.runId ?? null,
      from,
      answer: execution?.answer ?? null,
    });
    await this.logs.mergeDetail(escalation.log_id, { approved: record });
    await this.logs.update(escalation.log_id, {
      decision: routed.decision,
      result: routed.result,
      exec_state: 'done',
      duration_ms: Math.max(0, this.deps.clock.now() - startedAt),
    });
    this.emitLog(escalation.log_id, escalation.task_id, routed.decision);
    const row = await this.logs.get(escalation.log_id);
    if (!row) throw new SubconsciousError('not_found', 'The activity log entry vanished while its approved action ran.');
    return row;
  }

  modelName(role: 'local' | 'agent'): string | null {
    try {
      return this.deps.models?.endpoint(role).model ?? null;
    } catch {
      return null;
    }
  }

  /** Keep a job's promise for `drain`; a failure of its bookkeeping is logged (the job completes, its row says what it knows). */
  private track(p: Promise<void>): Promise<void> {
    const guarded = p.catch((err: unknown) => this.deps.log?.error({ err, world: this.world }, 'approved action bookkeeping failed'));
    this.inflight.add(guarded);
    void guarded.finally(() => this.inflight.delete(guarded));
    return guarded;
  }
}

export const APPROVED_STOPPED =
  'Cancelled: subconscious stopped while the approved action ran. It may have partly happened, so it is not run again on its own.';

/** An agent run's outcome as a log row: done → act with its text, failed → failed with the error. */
export function outcomeToRow(outcome: AgentOutcome | null, err: unknown): { decision: LogDecision; result: string } {
  if (!outcome) return { decision: 'failed', result: describeError(err) };
  if (outcome.status === 'done') return { decision: 'act', result: outcome.text.trim() || '(the agent finished without a text answer)' };
  if (outcome.status === 'cancelled') return { decision: 'cancelled', result: outcome.text.trim() ? `Cancelled: ${outcome.text.trim()}` : LOG_TEXT.cancelled };
  const why = outcome.error ?? outcome.errorKind ?? 'the agent run failed';
  return { decision: 'failed', result: outcome.errorKind && outcome.error ? `${outcome.errorKind}: ${outcome.error}` : why };
}

/** Why a task is or is not evaluated at the next tick (see protocol `TaskWhy`). */
export function whyOf(
  t: StoredTask,
  ctx: {
    pending: ReadonlyMap<string, string>;
    local: { available: boolean | null; reason: string | null } | undefined;
    now: number;
    safetyNet: number;
    /** Why the world is off (null: on): no tick runs, so nothing below (due, model) applies. */
    worldOff?: string | null;
  },
): TaskWhy {
  const why = (kind: TaskWhy['kind'], at: number | null = null, until: number | null = null, detail: string | null = null): TaskWhy => ({
    kind,
    at,
    until,
    detail,
  });
  if (t.completed) return why('done', t.last_run_at);
  if (!t.enabled) return why('off', null, null, t.origin === 'heartbeat_md' && !t.origin_present ? 'its line is no longer in HEARTBEAT.md' : null);
  const waiting = ctx.pending.get(t.id);
  if (waiting !== undefined) return why('waiting', null, null, waiting);
  if (ctx.worldOff) return why('world_off', null, null, ctx.worldOff);
  if (t.next_run_at !== null && t.next_run_at > ctx.now) return why('not_due', t.next_run_at);
  if (ctx.local?.available === false) return why('model_unavailable', null, null, ctx.local.reason);
  if (t.unchanged_since !== null && ctx.safetyNet > 0) return why('unchanged', t.unchanged_since, t.unchanged_since + ctx.safetyNet);
  return why('due');
}
