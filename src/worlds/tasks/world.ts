/**
 * The `tasks` world (seed 1) on the engine's `World` contract:
 *
 *   observe         seed defaults, re-import HEARTBEAT.md if it changed, cancel rows other
 *                   ticks left `in_progress`, load due tasks (not those waiting for approval),
 *                   one `in_progress` row per task (reused on a resumed tick); quiet when
 *                   nothing is due.
 *   prepareContext  the situation report (window since the last successful tick), measured and
 *                   kept within `context_budget_tokens`; batches only when the budget forces them.
 *   reflect         one `local` evaluation call per batch (normally one per tick).
 *   commit          the routing table; the same rows updated in place; escalations; schedules.
 *                   Per-row execution state is written before and after each execution, so a
 *                   resumed commit never executes a task twice.
 *   abandon         superseded → open rows `cancelled`; failed/timeout → `failed` with the error.
 */
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { ModelRole } from '../../llm/types.js';
import type { AbandonReason, CommitInput, CommitSummary, Observation, TickContext, World } from '../../engine/types.js';
import { evaluateBatch, evaluationOverheadTokens, planBatches, taskEvaluationTokens, type TaskDecision } from './evaluate.js';
import { findRecommendedAction, isSkillRelated, splitPriority } from './intent.js';
import { INTERRUPTED, LOG_TEXT } from './log-store.js';
import { AGENT_ANALYSIS_SYSTEM, AGENT_FULL_SYSTEM, EXECUTION_SYSTEM, agentTaskPrompt, executionPrompt, taskLine } from './prompts.js';
import { TasksService, outcomeToRow, type TasksServiceDeps } from './service.js';
import { buildSituationReport, readSafely, scanWorkspace } from './situation.js';
import type { ExecMode, LogDecision, LogEntry, MemorySource, SkillsHealth, Task, TasksSettings } from './types.js';

export interface TasksWorldDeps extends TasksServiceDeps {
  settings: TasksSettings | (() => TasksSettings);
  skills?: SkillsHealth | undefined;
  memory?: MemorySource | undefined;
  /** An execution marked running longer than this, in a tick that never resumed, is failed (default 30 min). */
  interruptedAfterMs?: number | undefined;
  /** Activity log rows older than this many days are deleted after a tick commits (default 30; 0 keeps them all). */
  logRetentionDays?: number | undefined;
}

export interface DueTask {
  task: Task;
  log_id: string;
}

export interface TasksObservation {
  due: DueTask[];
  heartbeat: { exists: boolean; tasks: number; mtimeMs: number | null };
  inferenceDisabled: boolean;
}

export interface TasksContext {
  report: string;
  reportTokens: number;
  budget: number;
  /** Task ids per evaluation call. */
  batches: string[][];
}

export interface TasksReflection {
  decisions: TaskDecision[];
  /** The report again, for the execution prompts (commit gets no context). */
  report: string;
  calls: number;
}

export type TasksWorld = World<TasksObservation, TasksContext, TasksReflection> & { readonly service: TasksService };

/** Routing result for one row before it is written. */
interface Final {
  decision: LogDecision;
  result: string;
  /** How the task's schedule moves: `advance` (ran), `touch` (evaluated, stays due), `none`. */
  schedule: 'advance' | 'touch' | 'none';
  escalation?: { description: string; analysis: string | null; priority: 'critical' | 'important' | 'normal'; skill_related: boolean };
}

export function createTasksWorld(deps: TasksWorldDeps): TasksWorld {
  const service = new TasksService(deps);
  const settings = (): TasksSettings => (typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const interruptedAfterMs = deps.interruptedAfterMs ?? 30 * 60_000;
  const retentionMs = (deps.logRetentionDays ?? 30) * 24 * 3_600_000;
  const roles: readonly ModelRole[] = ['local'];

  async function observe(ctx: TickContext): Promise<Observation<TasksObservation>> {
    await service.ensureReady();
    const snapshot = await service.syncHeartbeat();
    const heartbeat = { exists: snapshot.exists, tasks: snapshot.titles.length, mtimeMs: snapshot.mtimeMs };
    const now = ctx.clock.now();

    for (const id of await service.logs.failInterrupted({ startedBefore: now - interruptedAfterMs, currentTickId: ctx.tickId })) {
      const row = await service.logs.get(id);
      if (row) service.emitLog(id, row.task_id, 'failed');
    }
    const stale = await service.logs.cancelStale(ctx.tickId);
    if (stale.length) service.emit('tasks.log_changed', { ids: stale.slice(0, 100), count: stale.length, decision: 'cancelled' });

    if (!settings().inferenceEnabled) {
      return { quiet: true, tainted: false, data: { due: [], heartbeat, inferenceDisabled: true } };
    }

    // A resumed tick keeps exactly the rows it opened before the crash.
    let rows = ctx.resumed ? await service.logs.forTick(ctx.tickId) : new Map<string, LogEntry>();
    let tasks: Task[];
    if (rows.size) {
      const all = await service.tasks.list();
      tasks = all.filter((t) => rows.has(t.id));
    } else {
      // Not due while running elsewhere, nor while an escalation waits for the user: a `pending`
      // task would otherwise raise the same recommendation again every tick until answered.
      const [running, waiting] = await Promise.all([service.logs.runningTaskIds(ctx.tickId), service.escalations.pendingTaskIds()]);
      tasks = await service.tasks.due(ctx.startedAt, [...new Set([...running, ...waiting])]);
      rows = await service.logs.openRows(ctx.tickId, ctx.startedAt, tasks, ctx.ids);
      if (tasks.length && tasks.length <= 20) for (const t of tasks) service.emitLog(rows.get(t.id)!.id, t.id, 'in_progress');
      else if (tasks.length) service.emit('tasks.log_changed', { tick_id: ctx.tickId, count: tasks.length, decision: 'in_progress' });
    }
    const due = tasks.filter((t) => rows.has(t.id)).map((task) => ({ task, log_id: rows.get(task.id)!.id }));
    return { quiet: due.length === 0, tainted: false, data: { due, heartbeat, inferenceDisabled: false } };
  }

  async function prepareContext(ctx: TickContext, observation: Observation<TasksObservation>): Promise<TasksContext> {
    const budget = settings().contextBudgetTokens;
    const since = ctx.since;
    const now = ctx.clock.now();
    const [failures, skills, memory, workspace] = await Promise.all([
      service.logs.failuresSince(since, 200), // grouped by error in the report
      readSafely(deps.skills ? () => (deps.skills!.check ? deps.skills!.check() : deps.skills!.health()) : undefined),
      readSafely(deps.memory ? () => deps.memory!.recent(since, 20) : undefined),
      scanWorkspace(deps.workspace, since, observation.data.heartbeat),
    ]);
    const lines = observation.data.due.map((d) => ({ id: d.task.id, tokens: taskEvaluationTokens(d.task) }));
    const taskTokens = lines.reduce((n, l) => n + l.tokens, 0);
    // The report gets what the tasks leave, but never less than a quarter of the budget.
    const reportBudget = Math.max(Math.floor(budget / 4), budget - taskTokens - evaluationOverheadTokens());
    const report = buildSituationReport(
      {
        now,
        since,
        failures,
        skills: skills.value,
        skillsError: skills.error,
        memory: memory.value,
        memoryError: memory.error,
        workspace,
      },
      Math.min(reportBudget, budget),
    );
    const batches = planBatches(lines, report.tokens, budget);
    ctx.log.info(
      { reportTokens: report.tokens, budget, tasks: lines.length, taskTokens, batches: batches.length, sections: report.sections },
      'situation report built',
    );
    return { report: report.text, reportTokens: report.tokens, budget, batches };
  }

  async function reflect(ctx: TickContext, context: TasksContext, observation: Observation<TasksObservation>): Promise<TasksReflection> {
    const byId = new Map(observation.data.due.map((d) => [d.task.id, d.task]));
    const decisions: TaskDecision[] = [];
    for (const batch of context.batches) {
      const items = batch.map((id) => ({ id, line: taskLine(byId.get(id)!) }));
      decisions.push(...(await evaluateBatch(ctx.llm, { world: ctx.world, signal: ctx.signal }, context.report, items)));
    }
    return { decisions, report: context.report, calls: context.batches.length };
  }

  async function commit(ctx: TickContext, input: CommitInput<TasksObservation, TasksReflection>): Promise<CommitSummary> {
    const { observation, reflection } = input;
    if (observation.data.inferenceDisabled) return { summary: 'inference disabled: no task evaluated', counts: { due: 0 } };
    if (!reflection || observation.data.due.length === 0) return { summary: 'no task due', counts: { due: 0 } };
    const decisions = new Map(reflection.decisions.map((d) => [d.task_id, d]));
    const counts: Record<string, number> = { due: observation.data.due.length, noop: 0, act: 0, escalate: 0, failed: 0, cancelled: 0, skipped: 0 };
    let changedTasks = false;

    for (const { task: observed, log_id } of observation.data.due) {
      if (ctx.signal.aborted) throw new SubconsciousError('cancelled', `tick aborted during commit: ${describeError(ctx.signal.reason)}`);
      const row = await service.logs.get(log_id);
      if (!row || row.exec_state === 'done') {
        counts.skipped!++;
        continue;
      }
      const d = decisions.get(observed.id) ?? { task_id: observed.id, decision: 'noop' as const, reason: 'no decision' };
      const task = await service.tasks.get(observed.id);
      let final: Final;
      let startedAt = ctx.clock.now();
      if (!task || !task.enabled) {
        final = {
          decision: 'cancelled',
          result: task ? 'Cancelled: the task was disabled before it ran' : 'Cancelled: the task was removed before it ran',
          schedule: 'none',
        };
      } else if (row.exec_state === 'running' && row.exec_mode === 'full') {
        // Killed while a write-capable run was going: it may have acted, so it is never re-run.
        final = { decision: 'failed', result: INTERRUPTED, schedule: 'advance' };
      } else {
        const mode = route(d.decision, task.needs_tools);
        if (mode) {
          await service.logs.markRunning(log_id, mode, d.decision, d.reason);
          startedAt = ctx.clock.now();
        }
        final = await execute(ctx, task, d, mode, reflection.report, log_id);
      }
      await finalize(ctx, row, task, d, final, startedAt);
      counts[final.decision === 'escalate' ? 'escalate' : final.decision] = (counts[final.decision] ?? 0) + 1;
      if (final.schedule !== 'none') changedTasks = true;
      if (ctx.signal.aborted && final.decision === 'cancelled') {
        throw new SubconsciousError('cancelled', `tick aborted during commit: ${describeError(ctx.signal.reason)}`);
      }
    }
    if (changedTasks) service.emit('tasks.changed', { reason: 'schedules_advanced', tick_id: ctx.tickId });
    if (retentionMs > 0) {
      const pruned = await service.logs.prune(ctx.clock.now() - retentionMs);
      if (pruned) {
        counts.pruned = pruned;
        ctx.log.info({ pruned, retentionDays: retentionMs / 86_400_000 }, 'old activity log rows deleted');
        service.emit('tasks.log_changed', { reason: 'retention', count: pruned });
      }
    }
    const n = observation.data.due.length;
    return {
      summary: `${n} task${n === 1 ? '' : 's'}: ${counts.act} acted, ${counts.noop} nothing new, ${counts.escalate} awaiting approval, ${counts.failed} failed${counts.cancelled ? `, ${counts.cancelled} cancelled` : ''} (${reflection.calls} evaluation call${reflection.calls === 1 ? '' : 's'})`,
      counts,
    };
  }

  /** The seed's routing table. */
  function route(decision: TaskDecision['decision'], needsTools: boolean): ExecMode | null {
    if (decision === 'noop') return null;
    if (decision === 'act') return needsTools ? 'full' : 'local';
    return needsTools ? 'full' : 'analysis';
  }

  async function execute(ctx: TickContext, task: Task, d: TaskDecision, mode: ExecMode | null, report: string, logId: string): Promise<Final> {
    if (mode === null) return { decision: 'noop', result: LOG_TEXT.noop, schedule: 'advance' };
    try {
      if (mode === 'local') {
        const { text } = await ctx.llm.text(
          { world: ctx.world, purpose: 'execute', role: 'local', signal: ctx.signal },
          { system: EXECUTION_SYSTEM, prompt: executionPrompt(task, d.reason, report) },
        );
        return { decision: 'act', result: text.trim() || '(the model returned no text)', schedule: 'advance' };
      }
      const agent = deps.agent;
      if (!agent) {
        return {
          decision: 'failed',
          result: 'No agent model is configured: this task needs the agent runner. Configure [models.agent] in subconscious.toml.',
          schedule: 'touch',
        };
      }
      const run = agent.start({
        world: ctx.world,
        purpose: mode === 'full' ? 'execute_full' : 'execute_analysis',
        system: mode === 'full' ? AGENT_FULL_SYSTEM : AGENT_ANALYSIS_SYSTEM,
        prompt: agentTaskPrompt(task, d.reason, report),
        mode: ctx.permit(mode), // a tainted tick's writes wait for an approval
        attended: false,
        title: task.title,
        signal: ctx.signal,
      });
      await service.logs.update(logId, { run_id: run.id });
      const outcome = await run.settled;
      if (outcome.status !== 'done') {
        const row = outcomeToRow(outcome, undefined);
        return { ...row, schedule: row.decision === 'cancelled' ? 'none' : mode === 'full' ? 'advance' : 'touch' };
      }
      const recommended =
        mode === 'analysis' ? (outcome.controls?.find((c) => c.kind === 'recommended_action')?.text ?? findRecommendedAction(outcome.text)) : undefined;
      if (recommended) {
        const { priority, action } = splitPriority(recommended);
        return {
          decision: 'escalate',
          result: LOG_TEXT.escalate,
          schedule: 'advance',
          // Judged on what needs approval, not on the task's title: a "Check Gmail" task's
          // "Forward the invoice" must keep its "Go ahead" (the page shows "Fix in Skills" instead).
          escalation: { description: action, analysis: outcome.text.trim() || null, priority, skill_related: isSkillRelated(action) },
        };
      }
      return { decision: 'act', result: outcome.text.trim() || '(the agent finished without a text answer)', schedule: 'advance' };
    } catch (err) {
      if (ctx.signal.aborted) return { decision: 'cancelled', result: `Cancelled: ${describeError(ctx.signal.reason)}`, schedule: 'none' };
      // One task's failure stays on its row; the tick goes on (seed 1, "Failure Handling").
      return { decision: 'failed', result: describeError(err), schedule: 'touch' };
    }
  }

  async function finalize(ctx: TickContext, row: LogEntry, task: Task | undefined, d: TaskDecision, final: Final, startedAt: number): Promise<void> {
    const finishedAt = ctx.clock.now();
    let escalationId: string | undefined;
    await deps.db.transaction().execute(async (trx) => {
      await service.logs.update(
        row.id,
        {
          decision: final.decision,
          model_decision: d.decision,
          reason: d.reason,
          result: final.result,
          exec_state: 'done',
          duration_ms: Math.max(0, finishedAt - startedAt),
        },
        trx,
      );
      if (final.escalation && task) {
        const e = await service.escalations.create({ id: ctx.ids(), task_id: task.id, log_id: row.id, title: task.title, ...final.escalation }, trx);
        escalationId = e.id;
      }
      if (task && final.schedule === 'advance') await service.tasks.advance(trx, task.id, ctx.startedAt);
      else if (task && final.schedule === 'touch') await service.tasks.touch(trx, task.id, ctx.startedAt);
    });
    service.emitLog(row.id, row.task_id, final.decision);
    if (escalationId) service.emit('tasks.escalation_changed', { id: escalationId, status: 'pending', task_id: row.task_id });
  }

  async function abandon(ctx: TickContext, reason: AbandonReason, _observation: Observation<TasksObservation> | undefined, error: unknown): Promise<void> {
    const ids =
      reason === 'superseded' || reason === 'shutdown'
        ? await service.logs.closeOpenRows(ctx.tickId, 'cancelled', LOG_TEXT.cancelled)
        : await service.logs.closeOpenRows(ctx.tickId, 'failed', describeError(error) || `tick ${reason}`);
    if (ids.length)
      service.emit('tasks.log_changed', {
        ids: ids.slice(0, 100),
        count: ids.length,
        decision: reason === 'superseded' || reason === 'shutdown' ? 'cancelled' : 'failed',
      });
  }

  return {
    kind: 'tasks',
    roles,
    // Write tasks and approved actions run on the agent model: its absence shows in status.
    optionalRoles: deps.agent ? ['agent'] : [],
    service,
    intervalMinutes: () => Math.max(5, settings().intervalMinutes),
    observe,
    prepareContext,
    reflect,
    commit,
    abandon,
    // The tasks world's own words for what a person can do (the model layer names no world).
    hint: (error) =>
      (error as { kind?: unknown } | null)?.kind === 'rate_cap'
        ? 'Lower context_budget_tokens in [worlds.tasks], then press "Try again" on the Tasks card.'
        : undefined,
    close: () => service.close(),
  };
}
