/**
 * The tasks world's operations outside ticks (what RPC, the CLI and the page call): tasks
 * CRUD, the activity log, escalations with approve (runs the agent in `full` mode once) and
 * dismiss (runs nothing). Every change is an EventBus event: `tasks.changed`,
 * `tasks.log_changed`, `tasks.escalation_changed`.
 */
import type { Kysely } from 'kysely';
import { SubconsciousError, describeError } from '../../core/errors.js';
import { processOwner } from '../../core/index.js';
import type { Clock, Emitter, IdGen, Logger } from '../../core/index.js';
import type { TasksEvents } from '../../protocol/tasks.js';
import type { TasksTables } from './tables.js';
import { EscalationStore } from './escalation-store.js';
import { HeartbeatFile, type HeartbeatSnapshot } from './heartbeat-md.js';
import { LOG_TEXT, LogStore } from './log-store.js';
import { AGENT_APPROVED_SYSTEM, approvedActionPrompt } from './prompts.js';
import { defaultTimezone, validateTimezone } from './recurrence.js';
import { TaskStore, type AddTaskInput, type HeartbeatSyncResult, type UpdateTaskInput } from './task-store.js';
import type { AgentOutcome, ApproveResult, Escalation, EscalationStatus, LogDecision, LogEntry, TaskAgent, Task } from './types.js';

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
  /** The instance name used for ledger rows and events (default `tasks`). */
  world?: string | undefined;
}

export class TasksService {
  readonly tasks: TaskStore;
  readonly logs: LogStore;
  readonly escalations: EscalationStore;
  readonly heartbeat: HeartbeatFile;
  readonly world: string;
  readonly timezone: string;
  private ready: Promise<void> | undefined;
  private readonly inflight = new Set<Promise<unknown>>();
  /** Aborted by `close()`: approved runs still going are cancelled instead of holding up shutdown. */
  private readonly closing = new AbortController();

  constructor(readonly deps: TasksServiceDeps) {
    this.timezone = validateTimezone(deps.timezone ?? defaultTimezone());
    const now = () => deps.clock.now();
    this.tasks = new TaskStore(deps.db, deps.clock, deps.ids, this.timezone);
    this.logs = new LogStore(deps.db, now);
    this.escalations = new EscalationStore(deps.db, now);
    this.heartbeat = new HeartbeatFile(deps.workspace);
    this.world = deps.world ?? 'tasks';
  }

  /** Seed the default system tasks and import HEARTBEAT.md once per process (idempotent). */
  ensureReady(): Promise<void> {
    this.ready ??= (async () => {
      await this.tasks.seedDefaults();
      await this.syncHeartbeat();
    })().catch((err) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
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
      return { exists: true, titles: [], hash: null, mtimeMs: null, sync: null };
    }
    const { changed, snapshot } = read;
    if (!changed) return { ...snapshot, sync: null };
    let result: HeartbeatSyncResult;
    try {
      result = await this.tasks.syncHeartbeat(snapshot.titles);
    } catch (err) {
      this.heartbeat.reset(); // not imported: the next read must import again
      throw err;
    }
    if (result.added || result.disabled || result.reenabled || result.renamed) {
      this.emit('tasks.changed', { reason: 'heartbeat_md', ...result });
      this.deps.log?.info({ world: this.world, ...result }, 'HEARTBEAT.md imported');
    }
    return { ...snapshot, sync: result };
  }

  async listTasks(): Promise<Task[]> {
    await this.ensureReady();
    // An edited HEARTBEAT.md shows at once, not only after the next tick (a stat when unchanged).
    await this.syncHeartbeat();
    return this.tasks.list();
  }

  async addTask(input: AddTaskInput): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.add(input);
    this.emit('tasks.changed', { id: task.id, action: 'added' });
    return task;
  }

  async updateTask(id: string, input: UpdateTaskInput): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.update(id, input);
    this.emit('tasks.changed', { id, action: 'updated' });
    return task;
  }

  async removeTask(id: string): Promise<Task> {
    await this.ensureReady();
    const task = await this.tasks.remove(id);
    this.emit('tasks.changed', { id, action: 'removed' });
    // What a removed task recommended must not run later: its pending escalations are skipped.
    for (const escalationId of await this.escalations.pendingIdsFor(id)) await this.dismissIfPending(escalationId);
    return task;
  }

  listLog(opts: { limit?: number; offset?: number; taskId?: string; decision?: LogDecision } = {}): Promise<LogEntry[]> {
    return this.logs.list(opts);
  }

  listEscalations(status?: EscalationStatus): Promise<Escalation[]> {
    return this.escalations.list(status);
  }

  /**
   * Approve a pending escalation: the agent runs once in `full` mode with the recommended
   * action. Approving twice, after a dismissal or an unknown id changes nothing (conflict /
   * not_found). The run's result lands on the escalation's log row.
   */
  async approve(id: string, opts: { wait?: boolean } = {}): Promise<ApproveResult> {
    const agent = this.deps.agent;
    if (!agent) {
      const known = await this.escalations.get(id);
      if (!known) throw new SubconsciousError('not_found', `No escalation with id "${id}".`, { details: { field: 'id' } });
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
    if (pending?.status === 'pending' && !(await this.tasks.get(pending.task_id))) {
      await this.dismissIfPending(id);
      throw new SubconsciousError('conflict', `The task that raised escalation "${id}" was removed, so its action was not run; the escalation is skipped.`, {
        details: { field: 'id' },
      });
    }
    const escalation = await this.escalations.resolve(id, 'approved');
    this.emit('tasks.escalation_changed', { id, status: 'approved' });
    const startedAt = this.deps.clock.now();
    await this.logs.update(escalation.log_id, {
      decision: 'in_progress',
      result: 'Running the approved action...',
      exec_state: 'running',
      exec_mode: 'full',
      exec_started_at: startedAt,
      exec_owner: processOwner(),
    });
    this.emitLog(escalation.log_id, escalation.task_id, 'in_progress');
    let run: { id: string; settled: Promise<AgentOutcome> };
    try {
      run = agent.start({
        world: this.world,
        purpose: 'approved_action',
        system: AGENT_APPROVED_SYSTEM,
        prompt: approvedActionPrompt(escalation.title, escalation.description, escalation.analysis),
        mode: 'full',
        attended: true,
        title: escalation.title,
        signal: this.closing.signal,
      });
    } catch (err) {
      await this.finishApproved(escalation, startedAt, null, err);
      throw err;
    }
    await this.logs.update(escalation.log_id, { run_id: run.id });
    const done = run.settled.then(
      (outcome) => this.finishApproved(escalation, startedAt, outcome, undefined),
      (err: unknown) => this.finishApproved(escalation, startedAt, null, err),
    );
    this.track(done);
    if (!opts.wait) return { escalation, run_id: run.id };
    return { escalation, run_id: run.id, log: await done };
  }

  /** Dismiss a pending escalation: nothing runs; its log row reads "Skipped". */
  async dismiss(id: string): Promise<Escalation> {
    const escalation = await this.escalations.resolve(id, 'dismissed');
    await this.logs.update(escalation.log_id, { decision: 'dismissed', result: LOG_TEXT.dismissed });
    this.emit('tasks.escalation_changed', { id, status: 'dismissed' });
    this.emitLog(escalation.log_id, escalation.task_id, 'dismissed');
    return escalation;
  }

  /** Dismiss, unless someone answered it first (then it is theirs). */
  private async dismissIfPending(id: string): Promise<void> {
    try {
      await this.dismiss(id);
    } catch (err) {
      if (!(err instanceof SubconsciousError && err.code === 'conflict')) throw err;
    }
  }

  /** Wait for approved runs still in flight (tests). */
  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  /**
   * Shutdown: cancel approved runs still in flight (an agent run may take up to its cap, and a
   * stop must not wait for it), then wait until their rows say so. Not re-run at the next start:
   * the action may have partly happened.
   */
  async close(): Promise<void> {
    if (!this.closing.signal.aborted) this.closing.abort(new SubconsciousError('cancelled', 'subconscious is shutting down'));
    await this.drain();
  }

  emitLog(id: string, taskId: string, decision: LogDecision): void {
    this.emit('tasks.log_changed', { id, task_id: taskId, decision });
  }

  /** Every tasks event names the instance it came from. */
  emit<K extends keyof TasksEvents>(type: K, data: Omit<TasksEvents[K], 'world'>): void {
    this.deps.events.emit(type, { ...data, world: this.world } as TasksEvents[K]);
  }

  private async finishApproved(escalation: Escalation, startedAt: number, outcome: AgentOutcome | null, err: unknown): Promise<LogEntry> {
    const routed = outcomeToRow(outcome, err);
    const decision = routed.decision;
    let result = routed.result;
    if (decision === 'cancelled' && this.closing.signal.aborted) result = APPROVED_STOPPED;
    await this.logs.update(escalation.log_id, {
      decision,
      result,
      exec_state: 'done',
      duration_ms: Math.max(0, this.deps.clock.now() - startedAt),
    });
    this.emitLog(escalation.log_id, escalation.task_id, decision);
    const row = await this.logs.get(escalation.log_id);
    if (!row) throw new SubconsciousError('not_found', `Log row ${escalation.log_id} vanished while its approved action ran.`);
    return row;
  }

  private track(p: Promise<unknown>): void {
    const guarded = p.catch((err) => this.deps.log?.error({ err, world: this.world }, 'approved action bookkeeping failed'));
    this.inflight.add(guarded);
    void guarded.finally(() => this.inflight.delete(guarded));
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
