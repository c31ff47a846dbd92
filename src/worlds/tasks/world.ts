/**
 * The `tasks` world (seed 1) on the engine's `World` contract:
 *
 *   observe         seed defaults, re-import HEARTBEAT.md if it changed, cancel rows other
 *                   ticks left `in_progress`, load due tasks (not those waiting for approval),
 *                   then fingerprint what each would be judged on (fingerprint.ts): a task whose
 *                   inputs did not change since its last "nothing new" is skipped — no row, no
 *                   call — until the safety net runs out. One `in_progress` row per task left
 *                   (reused on a resumed tick); quiet when none is left (issue 10: zero calls
 *                   when nothing changed).
 *   prepareContext  the situation report (window since the last successful tick; memory changes
 *                   since the last evaluation when a memory store is connected; system health),
 *                   measured and kept within `context_budget_tokens`, and stored as sent.
 *   reflect         one `local` evaluation call per batch (normally one per tick).
 *   commit          the routing table (below); the same rows updated in place; escalations;
 *                   schedules; the fingerprint of every "nothing new". Each execution is keyed by
 *                   its row: `running` before, `executed` with its outcome the moment it finished,
 *                   so a resumed commit applies a finished one and never repeats one (issue 9).
 *   abandon         superseded → open rows `cancelled`; failed/timeout → `failed` with the error.
 *
 * Routing (seed 1 with issue 9): `act` runs on the local model as a text answer whatever the
 * intent (it has no tools and contacts no one); `escalate` runs the agent — read-only tasks in
 * `analysis` (no writing tool is even offered; a `RECOMMENDED ACTION:` becomes an approval card),
 * write-intent tasks `tainted`: the run reads outside text, so only the writes the task's own
 * words name run at once (write-gate.ts); any other write is held and becomes an approval card.
 */
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { ModelRole } from '../../llm/types.js';
import type { AbandonReason, CommitInput, CommitSummary, Observation, TickContext, World } from '../../engine/types.js';
import { renderDiff, totalChanges } from '../../memory/diff.js';
import { evaluateBatch, evaluationOverheadTokens, ledgerFigures, modelOf, planBatches, taskEvaluationTokens, type TaskDecision } from './evaluate.js';
import { sharedDigest, taskFingerprint } from './fingerprint.js';
import { findRecommendedAction, isSkillRelated, splitPriority } from './intent.js';
import { CAPS, argumentsText, cap, capText, executionRecord, type EvaluationRecord, type ExecutionRecord } from './log-detail.js';
import { answeredOutcome, gateOf, runAgentExecution, type AgentExecution, type GateRecords } from './agent-execution.js';
import { freshCheckpoint, resumePlan, stoppedText, type ResumePlan } from './exec-checkpoint.js';
import { INTERRUPTED, LOG_TEXT } from './log-store.js';
import { AGENT_ANALYSIS_SYSTEM, AGENT_WRITE_SYSTEM, EXECUTION_SYSTEM, agentTaskPrompt, executionPrompt, taskLine } from './prompts.js';
import { TasksService, outcomeToRow, type TasksServiceDeps } from './service.js';
import { buildSituationReport, readSafely, scanWorkspace, type WorkspaceState } from './situation.js';
import { writesGranted, type StoredTask } from './task-store.js';
import type {
  AgentOutcome,
  AgentStartRequest,
  ExecMode,
  LogDecision,
  LogEntry,
  MemoryChanges,
  MemorySource,
  ModelHealth,
  SkillHealth,
  TasksSettings,
} from './types.js';
import { namedWrite } from './write-gate.js';
import { quietCheck } from './quiet-check.js';
import type { ApprovalContext, EscalationAction } from '../../protocol/index.js';

export const DEFAULT_REEVALUATE_MINUTES = 360;
const DAY_MS = 86_400_000;
/** The label of the tasks world's memory checkpoint (the start point of its report's memory section). */
export const MEMORY_CHECKPOINT = 'tasks';
/** A quiet tick's summaries (commit's and the probe's). */
const NO_TASK_DUE = 'no task due';
const INFERENCE_DISABLED = 'inference disabled: no task evaluated';

export interface TasksWorldDeps extends TasksServiceDeps {
  settings: TasksSettings | (() => TasksSettings);
  /** Recent memory for the report when no memory store is connected (the older source). */
  memory?: MemorySource | undefined;
  /** The memory store (`MemoryStoreKey`): its change sequence is a fingerprint input and its diff the report's memory section. */
  memoryStore?: MemoryChanges | undefined;
  /** An execution marked running longer than this, in a tick that never resumed, is failed (default 30 min). */
  interruptedAfterMs?: number | undefined;
  /** Activity log rows older than this many days are deleted after a tick commits (default 30; 0 keeps them all). */
  logRetentionDays?: number | undefined;
}

export interface DueTask {
  task: StoredTask;
  log_id: string;
  /** The fingerprint of its inputs at this tick (kept when it decides "nothing new"). */
  fingerprint: string | null;
}

/** What observe found outside the tasks (checkpointed with the observation; reused by prepare_context). */
export interface ObservedInputs {
  skills: SkillHealth[] | undefined;
  skillsError: string | undefined;
  models: ModelHealth[];
  memoryHead: number | null;
  memoryError: string | undefined;
  workspace: WorkspaceState;
  failures24h: number;
}

export interface TasksObservation {
  due: DueTask[];
  /** Due tasks skipped because nothing they are judged on changed (no row, no call). */
  unchanged: { task_id: string; recurrence: string; since: number }[];
  heartbeat: { exists: boolean; tasks: number; mtimeMs: number | null };
  inferenceDisabled: boolean;
  inputs?: ObservedInputs | undefined;
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
  evaluations: EvaluationRecord[];
}

export type TasksWorld = World<TasksObservation, TasksContext, TasksReflection> & { readonly service: TasksService };

/** Routing result for one row before it is written (stored as the row's `exec_result` once executed). */
interface Final {
  decision: LogDecision;
  result: string;
  /** How the task's schedule moves: `advance` (ran), `touch` (evaluated, stays due), `none`. */
  schedule: 'advance' | 'touch' | 'none';
  escalation?:
    | {
        description: string;
        analysis: string | null;
        priority: 'critical' | 'important' | 'normal';
        skill_related: boolean;
        skill_server: string | null;
        action?: EscalationAction | null;
        context?: ApprovalContext | null;
      }
    | undefined;
}

/** One row's execution as run (or continued): its outcome, its record, what its approval gate let through or held. */
interface Executed {
  final: Final;
  record: ExecutionRecord | undefined;
  gate: GateRecords;
}

export function createTasksWorld(deps: TasksWorldDeps): TasksWorld {
  const settings = (): TasksSettings => (typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const reevaluateMs = () => Math.max(0, settings().reevaluateUnchangedAfterMinutes ?? DEFAULT_REEVALUATE_MINUTES) * 60_000;
  const service = new TasksService({ ...deps, reevaluateUnchangedMs: deps.reevaluateUnchangedMs ?? reevaluateMs });
  /** Written as an execution's owner: named when another worker (or this one after a restart) takes it over. */
  const owner = service.worker;
  const interruptedAfterMs = deps.interruptedAfterMs ?? 30 * 60_000;
  const retentionMs = (deps.logRetentionDays ?? 30) * 24 * 3_600_000;
  const roles: readonly ModelRole[] = ['local'];

  /**
   * Before the lease: a tick is surely quiet when observe would write nothing and find no task —
   * defaults seeded and HEARTBEAT.md imported (this process), the file as last read (a stat), no
   * log row to cancel, fail or settle, and no task due that no pending escalation holds back (one
   * statement: quiet-check.ts). Anything else, or unsure: null, and the full tick decides.
   */
  async function probe(ctx: TickContext): Promise<string | null> {
    if (!service.isReady || !service.heartbeat.unchanged()) return null;
    const check = await quietCheck(deps.db, ctx.startedAt);
    if (check.open) return null;
    if (!settings().inferenceEnabled) return INFERENCE_DISABLED;
    return check.due ? null : NO_TASK_DUE;
  }

  async function observe(ctx: TickContext): Promise<Observation<TasksObservation>> {
    await service.ensureReady();
    const snapshot = await service.syncHeartbeat();
    const heartbeat = { exists: snapshot.exists, tasks: snapshot.lines.length, mtimeMs: snapshot.mtimeMs };
    const now = ctx.clock.now();

    for (const id of await service.logs.failInterrupted({ startedBefore: now - interruptedAfterMs, currentTickId: ctx.tickId })) {
      const row = await service.logs.get(id);
      if (!row) continue;
      // Its tick will not apply it: the execution ran (or may have), so its schedule moves on
      // here, or the task would be due again and executed a second time.
      if (row.task_id) await deps.db.transaction().execute((trx) => service.tasks.advance(trx, row.task_id!, now));
      service.emitLog(id, row.task_id, row.decision);
    }
    const stale = await service.logs.cancelStale(ctx.tickId);
    if (stale.length) service.emit('tasks.log_changed', { ids: stale.slice(0, 100), count: stale.length, decision: 'cancelled' });

    const quiet = (data: Partial<TasksObservation>): Observation<TasksObservation> => ({
      quiet: true,
      tainted: false,
      data: { due: [], unchanged: [], heartbeat, inferenceDisabled: false, ...data },
    });
    if (!settings().inferenceEnabled) return quiet({ inferenceDisabled: true });

    // A resumed tick keeps exactly the rows it opened before the crash.
    let rows = ctx.resumed ? await service.logs.forTick(ctx.tickId) : new Map<string, LogEntry>();
    let candidates: StoredTask[];
    if (rows.size) {
      candidates = (await service.tasks.list()).filter((t) => rows.has(t.id));
    } else {
      // Not due while running elsewhere, nor while an escalation waits for the user: a `pending`
      // task would otherwise raise the same recommendation again every tick until answered.
      const [running, waiting] = await Promise.all([service.logs.runningTaskIds(ctx.tickId), service.escalations.pendingTaskIds()]);
      candidates = await service.tasks.due(ctx.startedAt, [...new Set([...running, ...waiting])]);
    }
    if (!candidates.length) return quiet({});

    const inputs = await gatherInputs(ctx, heartbeat);
    // A skill that is healthy again settles the escalations about it (and says so in the log).
    await service.resolveHealedSkills(inputs.skills);
    const shared = sharedDigest({
      skills: inputs.skills,
      skillsError: inputs.skillsError,
      memoryHead: inputs.memoryHead,
      failures: await service.logs.failureTexts(now - DAY_MS, 50),
      workspace: inputs.workspace.digest ?? '',
      agentModel: inputs.models.find((m) => m.role === 'agent')?.available ?? null,
    });
    const timezone = service.timezone;
    const safetyNet = reevaluateMs();
    const fingerprints = new Map(candidates.map((t) => [t.id, taskFingerprint(t, writesGranted(t), shared, ctx.startedAt, timezone)]));
    const unchanged: TasksObservation['unchanged'] = [];
    let evaluate = candidates;
    if (!rows.size && safetyNet > 0) {
      evaluate = [];
      for (const t of candidates) {
        const same = t.noop_fingerprint !== null && t.noop_fingerprint === fingerprints.get(t.id);
        if (same && t.unchanged_since !== null && ctx.startedAt - t.unchanged_since < safetyNet) {
          unchanged.push({ task_id: t.id, recurrence: t.recurrence, since: t.unchanged_since });
        } else evaluate.push(t);
      }
    }
    if (!rows.size && evaluate.length) {
      rows = await service.logs.openRows(ctx.tickId, ctx.startedAt, evaluate, ctx.ids);
      if (evaluate.length <= 20) for (const t of evaluate) service.emitLog(rows.get(t.id)!.id, t.id, 'in_progress');
      else service.emit('tasks.log_changed', { tick_id: ctx.tickId, count: evaluate.length, decision: 'in_progress' });
    }
    const due = evaluate.filter((t) => rows.has(t.id)).map((task) => ({ task, log_id: rows.get(task.id)!.id, fingerprint: fingerprints.get(task.id) ?? null }));
    if (unchanged.length) ctx.log.debug({ unchanged: unchanged.length, evaluated: due.length }, 'tasks skipped: nothing they are judged on changed');
    return { quiet: due.length === 0, tainted: false, data: { due, unchanged, heartbeat, inferenceDisabled: false, inputs } };
  }

  /** Everything outside the tasks that they are judged on: read once per tick, with no model call. */
  async function gatherInputs(ctx: TickContext, heartbeat: TasksObservation['heartbeat']): Promise<ObservedInputs> {
    const now = ctx.clock.now();
    const [health, memoryHead, workspace, failures24h] = await Promise.all([
      service.health.check(),
      readSafely(deps.memoryStore ? () => deps.memoryStore!.head() : undefined),
      scanWorkspace(deps.workspace, ctx.since, heartbeat, { ignore: settings().workspaceIgnore ?? [] }),
      service.logs.countFailures(now - DAY_MS),
    ]);
    return {
      skills: health.skills,
      skillsError: health.skillsError,
      models: health.models,
      memoryHead: memoryHead.value ?? null,
      memoryError: memoryHead.error,
      workspace,
      failures24h,
    };
  }

  async function prepareContext(ctx: TickContext, observation: Observation<TasksObservation>): Promise<TasksContext> {
    const budget = settings().contextBudgetTokens;
    const since = ctx.since;
    const now = ctx.clock.now();
    const inputs = observation.data.inputs ?? (await gatherInputs(ctx, observation.data.heartbeat));
    const store = deps.memoryStore;
    const [failures, memory, memoryChanges] = await Promise.all([
      service.logs.failuresSince(since, 200), // grouped by error in the report
      readSafely(!store && deps.memory ? () => deps.memory!.recent(since, 20) : undefined),
      readSafely(store ? () => memorySinceLastEvaluation(ctx, store, inputs.memoryHead) : undefined),
    ]);
    const lines = observation.data.due.map((d) => ({ id: d.task.id, tokens: taskEvaluationTokens(asked(d.task)) }));
    const taskTokens = lines.reduce((n, l) => n + l.tokens, 0);
    // The report gets what the tasks leave, but never less than a quarter of the budget.
    const reportBudget = Math.max(Math.floor(budget / 4), budget - taskTokens - evaluationOverheadTokens());
    const report = buildSituationReport(
      {
        now,
        since,
        failures,
        skills: inputs.skills,
        skillsError: inputs.skillsError,
        memory: memory.value,
        memoryError: memory.error ?? memoryChanges.error ?? inputs.memoryError,
        memoryChanges: store ? (memoryChanges.value ?? { rendered: '', changes: 0, since: null }) : undefined,
        health: { models: inputs.models, failures24h: inputs.failures24h, memoryConnected: !!store },
        workspace: inputs.workspace,
      },
      Math.min(reportBudget, budget),
    );
    const batches = planBatches(lines, report.tokens, budget);
    await service.ticks.recordReport(ctx.tickId, ctx.startedAt, report.text, report.tokens, lines.length);
    ctx.log.info(
      { reportTokens: report.tokens, budget, tasks: lines.length, taskTokens, batches: batches.length, sections: report.sections },
      'situation report built',
    );
    return { report: report.text, reportTokens: report.tokens, budget, batches };
  }

  /** The memory store's changes since the last evaluated tick (its baseline), rendered. */
  async function memorySinceLastEvaluation(
    ctx: TickContext,
    store: MemoryChanges,
    head: number | null,
  ): Promise<{ rendered: string; changes: number; since: number | null }> {
    if (head !== null && head === 0) return { rendered: '', changes: 0, since: null };
    const checkpoint = await store.latestCheckpoint(MEMORY_CHECKPOINT);
    // Before the checkpoint existed the baseline lived in the world's state (an upgraded install).
    const legacy = checkpoint ? undefined : await ctx.state.get<{ seq: number; at: number }>('memory_baseline');
    const seq = checkpoint?.seq ?? legacy?.seq ?? 0;
    const at = checkpoint?.created_at ?? legacy?.at ?? null;
    const diff = await store.diffSince({ id: 'tasks:last-evaluation', label: 'the last evaluation', seq, created_at: at ?? 0 }, { entriesPerNamespace: 20 });
    return { rendered: renderDiff(diff), changes: totalChanges(diff.totals), since: at };
  }

  async function reflect(ctx: TickContext, context: TasksContext, observation: Observation<TasksObservation>): Promise<TasksReflection> {
    const byId = new Map(observation.data.due.map((d) => [d.task.id, d.task]));
    const decisions: TaskDecision[] = [];
    const evaluations: EvaluationRecord[] = [];
    for (const batch of context.batches) {
      const items = batch.map((id) => ({ id, line: taskLine(asked(byId.get(id)!)) }));
      const result = await evaluateBatch(ctx.llm, { world: ctx.world, signal: ctx.signal, now: () => ctx.clock.now() }, context.report, items);
      decisions.push(...result.decisions);
      evaluations.push(result.record);
    }
    return { decisions, report: context.report, calls: context.batches.length, evaluations };
  }

  async function commit(ctx: TickContext, input: CommitInput<TasksObservation, TasksReflection>): Promise<CommitSummary> {
    const { observation, reflection } = input;
    if (observation.data.inferenceDisabled) return { summary: INFERENCE_DISABLED, counts: { due: 0 } };
    const unchanged = observation.data.unchanged ?? [];
    // A skipped cron task is done for this time, as a "nothing new" would be: it moves to its next time.
    let changedTasks = false;
    for (const u of unchanged) {
      if (!u.recurrence.startsWith('cron:')) continue;
      await deps.db.transaction().execute((trx) => service.tasks.advance(trx, u.task_id, ctx.startedAt));
      changedTasks = true;
    }
    const skipped = unchanged.length;
    if (!reflection || observation.data.due.length === 0) {
      if (changedTasks) service.emit('tasks.changed', { reason: 'schedules_advanced', tick_id: ctx.tickId });
      return skipped
        ? {
            summary: `${skipped} task${skipped === 1 ? '' : 's'} unchanged since ${skipped === 1 ? 'its' : 'their'} last check: no call`,
            counts: { due: 0, unchanged: skipped },
          }
        : { summary: NO_TASK_DUE, counts: { due: 0 } };
    }
    const decisions = new Map(reflection.decisions.map((d) => [d.task_id, d]));
    const counts: Record<string, number> = {
      due: observation.data.due.length,
      noop: 0,
      act: 0,
      escalate: 0,
      failed: 0,
      cancelled: 0,
      skipped: 0,
      unchanged: skipped,
    };
    const tokens = {
      input: reflection.evaluations.reduce((n, e) => n + e.input_tokens, 0),
      output: reflection.evaluations.reduce((n, e) => n + e.output_tokens, 0),
    };

    for (const { task: observed, log_id, fingerprint } of observation.data.due) {
      if (ctx.signal.aborted) throw new SubconsciousError('cancelled', `tick aborted during commit: ${describeError(ctx.signal.reason)}`);
      const row = await service.logs.get(log_id);
      // Done, or handed on: a row with a card was finalized by this tick (the card, the row and the
      // schedule commit together), and once the card is approved the row runs again as the
      // approved action's job — a resumed commit must not take that for its own cut-off execution.
      if (!row || row.exec_state === 'done' || (row.exec_state === 'running' && (await service.escalations.forLog(log_id)))) {
        counts.skipped!++;
        continue;
      }
      const d = decisions.get(observed.id) ?? { task_id: observed.id, decision: 'noop' as const, reason: 'no decision' };
      const task = await service.tasks.get(observed.id);
      let final: Final;
      let startedAt = ctx.clock.now();
      if (row.exec_state === 'executed') {
        // Finished before a crash: its outcome stands, and it is not executed again.
        final = ((await service.logs.executedResult(log_id)) as Final | undefined) ?? { decision: 'failed', result: INTERRUPTED, schedule: 'advance' };
      } else if (row.exec_state === 'running' && (!task || !task.enabled)) {
        // Cut off while executing, and its task was removed or disabled since: not continued. Its
        // schedule moves on as a run's does (it may have acted).
        final = { decision: 'failed', result: INTERRUPTED, schedule: 'advance' };
      } else if (!task || !task.enabled) {
        final = {
          decision: 'cancelled',
          result: task ? 'Cancelled: the task was disabled before it ran' : 'Cancelled: the task was removed before it ran',
          schedule: 'none',
        };
      } else {
        // Cut off while executing (this commit resumes its tick, here or on another worker): continued
        // from its checkpoint, never blindly from the start (exec-checkpoint.ts). It stays in the tick,
        // whose lease makes one worker its executor and whose commit advances its schedule once.
        const cut = row.exec_state === 'running' ? await service.logs.execCheckpoint(log_id) : undefined;
        const resume = cut ? { plan: resumePlan(cut.checkpoint), from: cut.owner ?? 'a previous worker' } : undefined;
        const mode = resume ? ((row.exec_mode as ExecMode | null) ?? route(d.decision, writesGranted(task))) : route(d.decision, writesGranted(task));
        if (mode && !resume) {
          await service.logs.markRunning(log_id, mode, d.decision, d.reason, owner);
          startedAt = ctx.clock.now();
        }
        const executed = await execute(ctx, task, d, mode, reflection.report, log_id, observation.data.inputs, resume);
        final = executed.final;
        if (executed.record) {
          tokens.input += executed.record.calls.input_tokens;
          tokens.output += executed.record.calls.output_tokens;
        }
        if (mode && final.decision !== 'cancelled') {
          await service.logs.recordExecuted(log_id, final, {
            execution: executed.record,
            ...(executed.gate.auto.length ? { auto_approved: executed.gate.auto } : {}),
            ...(executed.gate.held.length ? { held: executed.gate.held } : {}),
          });
        }
      }
      await finalize(ctx, row, task, d, final, startedAt, fingerprint);
      counts[final.decision] = (counts[final.decision] ?? 0) + 1;
      if (final.schedule !== 'none') changedTasks = true;
      if (ctx.signal.aborted && final.decision === 'cancelled') {
        throw new SubconsciousError('cancelled', `tick aborted during commit: ${describeError(ctx.signal.reason)}`);
      }
    }
    const head = observation.data.inputs?.memoryHead;
    const store = deps.memoryStore;
    if (store && head !== null && head !== undefined) {
      // A real checkpoint (the id makes a resumed commit find it), pruned to the newest: the memory
      // store keeps every deletion after it, so the next report still sees them.
      const checkpoint = await store.createCheckpoint(MEMORY_CHECKPOINT, { seq: head, id: `${MEMORY_CHECKPOINT}:${ctx.tickId}` });
      await store.pruneCheckpoints(MEMORY_CHECKPOINT, 1, [checkpoint.id]);
    }
    await service.ticks.recordOutcome(ctx.tickId, ctx.startedAt, {
      evaluations: reflection.evaluations,
      input_tokens: tokens.input,
      output_tokens: tokens.output,
      duration_ms: Math.max(0, ctx.clock.now() - ctx.startedAt),
      tasks: observation.data.due.length,
    });
    if (changedTasks) service.emit('tasks.changed', { reason: 'schedules_advanced', tick_id: ctx.tickId });
    if (retentionMs > 0) {
      const pruned = await service.logs.prune(ctx.clock.now() - retentionMs);
      await service.ticks.prune(ctx.clock.now() - retentionMs);
      if (pruned) {
        counts.pruned = pruned;
        ctx.log.info({ pruned, retentionDays: retentionMs / 86_400_000 }, 'old activity log rows deleted');
        service.emit('tasks.log_changed', { reason: 'retention', count: pruned });
      }
    }
    const n = observation.data.due.length;
    return {
      // Plain words (issue 23): what happened to the tasks, and the model calls it took to decide.
      summary: `${n} task${n === 1 ? '' : 's'}: ${counts.act} acted, ${counts.noop} nothing new, ${counts.escalate} waiting for your approval, ${counts.failed} failed${counts.cancelled ? `, ${counts.cancelled} cancelled` : ''}${skipped ? `; ${skipped} unchanged, so not asked about again` : ''} (${reflection.calls} model call${reflection.calls === 1 ? '' : 's'} to decide)`,
      counts,
    };
  }

  /** Seed 1's routing table, with issue 9's taint for write-intent runs (see the header). */
  function route(decision: TaskDecision['decision'], writes: boolean): ExecMode | null {
    if (decision === 'noop') return null;
    if (decision === 'act') return 'local';
    return writes ? 'tainted' : 'analysis';
  }

  /**
   * Run one row's execution — or, for a row cut off mid-execution (`resume`, its tick resumed
   * here), continue it from its checkpoint (exec-checkpoint.ts): applied from an answer that had
   * arrived, continued told the steps already taken, or stopped and left to the person when a write
   * was in flight, it was cut off too often, or nothing readable was recorded.
   */
  async function execute(
    ctx: TickContext,
    task: StoredTask,
    d: TaskDecision,
    mode: ExecMode | null,
    report: string,
    logId: string,
    inputs: ObservedInputs | undefined,
    resume?: { plan: ResumePlan; from: string },
  ): Promise<Executed> {
    const plan = resume?.plan;
    const from = resume?.from ?? null;
    const gate: GateRecords = plan && plan.kind !== 'unknown' ? gateOf(plan.checkpoint) : { auto: [], held: [], heldCalls: [] };
    if (mode === null) return { final: { decision: 'noop', result: LOG_TEXT.noop, schedule: 'advance' }, record: undefined, gate };
    const purpose = mode === 'local' ? 'execute' : mode === 'tainted' ? 'execute_write' : 'execute_analysis';
    const role = mode === 'local' ? 'local' : 'agent';
    try {
      if (plan && (plan.kind === 'unknown' || plan.kind === 'in_flight' || plan.kind === 'too_often')) {
        // Nothing is run again: what may have happened is said on the row, for the person.
        const record =
          plan.kind === 'unknown'
            ? undefined
            : executionRecord({
                mode,
                purpose,
                model: modelOf(ctx.llm, role),
                usage: plan.checkpoint.usage,
                steps: plan.checkpoint.steps,
                runId: null,
                from,
                answer: null,
              });
        return { final: { decision: 'failed', result: stoppedText(plan, from ?? 'a previous worker'), schedule: 'advance' }, record, gate };
      }
      if (plan && plan.kind !== 'answered') await service.logs.beginRun(logId, plan.checkpoint, owner);
      if (mode === 'local') {
        // A text answer is kept the moment it arrived (`recordExecuted`): a cut-off one never arrived, so it is asked again.
        const ledger = ledgerFigures();
        const { text } = await ctx.llm.text(
          { world: ctx.world, purpose, role: 'local', signal: ctx.signal, onLedger: ledger.add },
          { system: EXECUTION_SYSTEM, prompt: executionPrompt(task, d.reason, report) },
        );
        const record: ExecutionRecord = {
          mode,
          purpose,
          answer: capText(text, CAPS.answer),
          calls: { model: modelOf(ctx.llm, 'local'), ...ledger.figures() },
          tool_calls: [],
          run_id: null,
          taken_over_from: from,
        };
        return { final: { decision: 'act', result: text.trim() || '(the model returned no text)', schedule: 'advance' }, record, gate };
      }
      const agent = deps.agent;
      if (!agent) {
        return {
          final: {
            decision: 'failed',
            result: 'No agent model is configured: this task needs the agent runner. Configure [models.agent] in subconscious.toml.',
            schedule: 'touch',
          },
          record: undefined,
          gate,
        };
      }
      const writes = mode === 'tainted';
      let execution: AgentExecution;
      if (plan?.kind === 'answered') {
        // Its answer had arrived before the cut-off: applied from the checkpoint, with no new model call.
        const outcome = answeredOutcome(plan.answer, plan.checkpoint);
        execution = { runId: plan.answer.run_id, outcome, steps: plan.checkpoint.steps, usage: plan.checkpoint.usage };
      } else {
        execution = await runAgentExecution(
          { agent, logs: service.logs, clock: ctx.clock, log: ctx.log },
          {
            logId,
            checkpoint: plan ? { ...plan.checkpoint, runs: plan.checkpoint.runs + 1 } : freshCheckpoint(1),
            continued: plan?.kind === 'continue',
            gate,
            start: {
              world: ctx.world,
              purpose,
              system: writes ? AGENT_WRITE_SYSTEM : AGENT_ANALYSIS_SYSTEM,
              prompt: agentTaskPrompt(task, d.reason, report),
              mode: writes ? 'tainted' : 'analysis',
              attended: false,
              title: task.title,
              signal: ctx.signal,
              reads: [{ what: 'the situation report (workspace, memory and system health)', excerpt: report }],
              ...(writes ? { onApprovalRequested: writeGate(ctx, task, gate) } : {}),
            },
            onStarted: async (runId) => {
              await service.logs.update(logId, { run_id: runId });
              // The page follows the run's steps by its id (agent.run events): say the row has one now.
              service.emit('tasks.log_changed', { id: logId, task_id: task.id, decision: 'in_progress', reason: 'running' });
            },
          },
        );
      }
      const { outcome } = execution;
      const record = executionRecord({
        mode,
        purpose,
        model: modelOf(ctx.llm, 'agent'),
        usage: execution.usage,
        steps: execution.steps,
        runId: execution.runId,
        from,
        answer: outcome.text,
      });
      return { final: routeAgentOutcome(task, writes, outcome, gate, inputs), record, gate };
    } catch (err) {
      if (ctx.signal.aborted)
        return { final: { decision: 'cancelled', result: `Cancelled: ${describeError(ctx.signal.reason)}`, schedule: 'none' }, record: undefined, gate };
      // One task's failure stays on its row; the tick goes on (seed 1, "Failure Handling").
      return { final: { decision: 'failed', result: describeError(err), schedule: 'touch' }, record: undefined, gate };
    }
  }

  /** The approval gate of a tainted run: what the task's words name goes ahead; anything else is held for the person. */
  function writeGate(ctx: TickContext, task: StoredTask, gate: GateRecords): NonNullable<AgentStartRequest['onApprovalRequested']> {
    return async (approval) => {
      // Fails closed: a call the gate cannot read (odd arguments, a gate error) waits for the person.
      const args = approval.arguments && typeof approval.arguments === 'object' ? (approval.arguments as Record<string, unknown>) : {};
      let named = false;
      try {
        named = writesGranted(await service.tasks.get(task.id)) && namedWrite(task.title, approval.tool, approval.arguments);
      } catch (err) {
        ctx.log.warn({ err: describeError(err), approval: approval.id }, 'write gate could not decide; holding the write for the person');
      }
      if (deps.approvals && named) {
        try {
          await deps.approvals.approve(approval.id);
          gate.auto.push({ at: ctx.clock.now(), tool: approval.tool, server: approval.server, arguments: argumentsText(args) });
          return undefined;
        } catch (err) {
          ctx.log.warn({ err: describeError(err), approval: approval.id }, 'could not approve a write the task names; holding it for the person');
        }
      }
      gate.held.push({ tool: approval.tool, server: approval.server, arguments: argumentsText(args) });
      gate.heldCalls.push({
        action: { tool: approval.tool, server: approval.server, arguments: args, input_schema: approval.input_schema ?? null },
        context: approval.context ?? null,
      });
      return `The task does not name this write (${approval.tool} on ${approval.server}), so it did not run: it waits for the person’s approval.`;
    };
  }

  /** A finished agent run as the row's outcome: held writes and recommended actions become cards (see the header). */
  function routeAgentOutcome(task: StoredTask, writes: boolean, outcome: AgentOutcome, gate: GateRecords, inputs: ObservedInputs | undefined): Final {
    if (gate.held.length && outcome.status !== 'cancelled') {
      const first = gate.held[0]!;
      return {
        decision: 'escalate',
        result: LOG_TEXT.escalate,
        schedule: 'advance',
        escalation: {
          description: cap(`Let “${task.title}” run ${first.tool} on ${first.server} with ${first.arguments}`, 600).text,
          analysis: outcome.text.trim() || null,
          priority: 'normal',
          skill_related: false,
          skill_server: null,
          action: gate.heldCalls[0]?.action ?? null,
          context: gate.heldCalls[0]?.context ?? null,
        },
      };
    }
    if (outcome.status !== 'done') {
      const row = outcomeToRow(outcome, undefined);
      return { ...row, schedule: row.decision === 'cancelled' ? 'none' : writes ? 'advance' : 'touch' };
    }
    const recommended = !writes ? (outcome.controls?.find((c) => c.kind === 'recommended_action')?.text ?? findRecommendedAction(outcome.text)) : undefined;
    if (recommended) {
      const { priority, action } = splitPriority(recommended);
      // Judged on what needs approval, not on the task's title: a "Check Gmail" task's
      // "Forward the invoice" must keep its "Go ahead" (the page shows "Fix in Skills" instead).
      const skillRelated = isSkillRelated(action);
      return {
        decision: 'escalate',
        result: LOG_TEXT.escalate,
        schedule: 'advance',
        escalation: {
          description: action,
          analysis: outcome.text.trim() || null,
          priority,
          skill_related: skillRelated,
          skill_server: skillRelated ? skillServerOf([action, outcome.text], inputs?.skills) : null,
        },
      };
    }
    return { decision: 'act', result: outcome.text.trim() || '(the agent finished without a text answer)', schedule: 'advance' };
  }

  async function finalize(
    ctx: TickContext,
    row: LogEntry,
    task: StoredTask | undefined,
    d: TaskDecision,
    final: Final,
    startedAt: number,
    fingerprint: string | null,
  ): Promise<void> {
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
      // "Nothing new" remembers what it was decided on; anything else must be looked at again.
      if (task && final.decision === 'noop') await service.tasks.setNoop(trx, task.id, fingerprint, fingerprint ? ctx.startedAt : null);
      else if (task && final.decision !== 'cancelled') await service.tasks.setNoop(trx, task.id, null, null);
    });
    service.emitLog(row.id, row.task_id, final.decision);
    if (escalationId) service.emit('tasks.escalation_changed', { id: escalationId, status: 'pending', task_id: row.task_id });
  }

  async function abandon(ctx: TickContext, reason: AbandonReason, _observation: Observation<TasksObservation> | undefined, error: unknown): Promise<void> {
    // Executions that finished before the tick failed keep their outcome.
    const settled = await service.logs.settleExecuted(ctx.tickId);
    if (reason === 'failed' && modelDown(error)) {
      // The model is down: the tick fails once (the engine says why); no task was judged, so no
      // task gets a failed row, and each keeps its schedule and state for the next tick.
      const dropped = await service.logs.discardOpenRows(ctx.tickId);
      if (settled.length || dropped.length)
        service.emit('tasks.log_changed', { tick_id: ctx.tickId, count: settled.length + dropped.length, reason: 'model_down' });
      return;
    }
    const ids =
      reason === 'superseded' || reason === 'shutdown'
        ? await service.logs.closeOpenRows(ctx.tickId, 'cancelled', LOG_TEXT.cancelled)
        : await service.logs.closeOpenRows(ctx.tickId, 'failed', describeError(error) || `tick ${reason}`);
    const all = [...settled, ...ids];
    if (all.length)
      service.emit('tasks.log_changed', {
        ids: all.slice(0, 100),
        count: all.length,
        decision: reason === 'superseded' || reason === 'shutdown' ? 'cancelled' : 'failed',
      });
  }

  return {
    kind: 'tasks',
    probe,
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
        ? // The halt outlives a restart (only another model or provider lifts it by itself), and settings are read at start.
          'To lift it: lower context_budget_tokens in [worlds.tasks] of subconscious.toml and restart the daemon (settings are read at start; a restart alone does not lift the halt), then press "Try again" on the Tasks card (or call subconscious.clear_halt).'
        : undefined,
    close: () => service.close(),
  };
}

/**
 * The model itself is down (not answering, timing out, a 5xx): the failure belongs to the tick,
 * not to any task. A malformed answer or a rate cap is about what was sent, and stays on the rows.
 */
export function modelDown(error: unknown): boolean {
  const e = error as { code?: unknown; kind?: unknown; status?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.code === 'model_unreachable' || e.kind === 'unreachable' || e.kind === 'timeout') return true;
  return e.kind === 'provider' && typeof e.status === 'number' && e.status >= 500;
}

/** A task as the evaluation is told about it: with the write rights it really has. */
function asked(t: StoredTask): StoredTask {
  return { ...t, needs_tools: writesGranted(t) };
}

/**
 * The skill a skill-related escalation is about: one the texts name, else the one skill that is
 * not healthy (then "Fix in Skills" opens it, and the card resolves when it is healthy again).
 */
export function skillServerOf(texts: readonly (string | null | undefined)[], skills: readonly SkillHealth[] | undefined): string | null {
  if (!skills?.length) return null;
  const text = texts.filter(Boolean).join('\n').toLowerCase();
  const named = skills.filter((s) => s.name && new RegExp(`\\b${s.name.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`).test(text));
  if (named.length === 1) return named[0]!.name;
  const unhealthy = skills.filter((s) => s.status !== 'connected');
  return unhealthy.length === 1 ? unhealthy[0]!.name : null;
}
