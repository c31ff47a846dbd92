/**
 * The `memory` world (seed 4's memory profile) on the engine's `World` contract:
 *
 *   observe         (after the sources' first sync, when `ready` is given) the memory diff
 *                   against the baseline checkpoint (the newest checkpoint with this world's
 *                   label). No baseline, or no change since it: quiet (0 tokens). A diff is
 *                   external content: the tick is tainted.
 *                   With the diff, the changed documents' content (excerpts, newest change
 *                   first, within `changed_content_chars`), so the agent sees what changed, not
 *                   only titles.
 *   prepareContext  the rendered diff, the changed content, open to-dos, active goals and the
 *                   bots a to-do may go to, each fenced.
 *   reflect         the decision agent: `AgentRunner.start` with no MCP server and only the
 *                   in-process tools of `tools.ts` (`delegate` only when the bots host runs),
 *                   whose writes are staged, not applied.
 *   commit          apply the staged outputs (notifications on `subconscious:user`, to-dos,
 *                   goals, delegations waiting for a person) and make the new baseline at the sequence the diff reached; older
 *                   baselines are pruned. A failed reflect never gets here: the old baseline
 *                   stays and the next tick reviews the same changes.
 *
 * Everything it touches is injected (`createMemoryWorld(deps)`: its tables, the memory store,
 * the agent runner, settings); the tick context gives only clock, ids, log, signal and the taint.
 */
import type { Kysely } from 'kysely';
import type { RunOptions, RunOutcome } from '../../agent/runner.js';
import { SubconsciousError } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import type { IdGen } from '../../core/ids.js';
import { silentLogger, type Logger } from '../../core/logger.js';
import { plural } from '../../core/words.js';
import type { CommitInput, CommitSummary, Observation, TickContext, World } from '../../engine/types.js';
import type { ModelRole } from '../../llm/types.js';
import { RENDER_LINES_PER_SOURCE, emptyTotals, renderDiff, totalChanges, type MemoryDiff } from '../../memory/diff.js';
import { USER_THREAD, type DiffTotals, type MemoryBaseline, type MemoryDocument } from '../../protocol/memory.js';
import type { MemoryWorldSettings } from './config.js';
import type { MemoryWorldEmit } from './events.js';
import { DelegationStore, type DelegationHost } from './delegations.js';
import { OutputStore, type StagedOp } from './outputs.js';
import { DECISION_SYSTEM, decisionPrompt, type ChangedExcerpt } from './prompts.js';
import { MemoryWorldService } from './service.js';
import type { MemoryWorldTables } from './tables.js';
import { memoryTools } from './tools.js';

/** What the world needs of the memory store (`MemoryStore` has it). */
export interface MemoryWorldMemory {
  head(): Promise<number>;
  latestCheckpoint(label: string): Promise<MemoryBaseline | undefined>;
  createCheckpoint(label: string, opts: { seq?: number; id?: string }): Promise<MemoryBaseline>;
  pruneCheckpoints(label: string, keep: number, protect?: readonly string[]): Promise<number>;
  diffSince(since: MemoryBaseline, opts: { entriesPerNamespace: number }): Promise<MemoryDiff>;
  getDocument(namespace: string, externalId: string): Promise<MemoryDocument | undefined>;
}

/** The agent runner as the decision agent uses it (`AgentRunner` has it). */
export interface DecisionAgent {
  start(options: RunOptions): { settled: Promise<RunOutcome> };
}

export interface MemoryWorldDeps {
  db: Kysely<MemoryWorldTables>;
  memory: MemoryWorldMemory;
  agent: DecisionAgent;
  settings: MemoryWorldSettings | (() => MemoryWorldSettings);
  clock: Clock;
  ids: IdGen;
  emit: MemoryWorldEmit;
  log?: Logger | undefined;
  /** The baseline checkpoints' label (default `memory`, the world's kind). */
  label?: string | undefined;
  /** The sources' first sync (`MemorySync.ready`): observe waits for it, so a one-shot tick sees the folders first. */
  ready?: ((signal: AbortSignal) => Promise<void>) | undefined;
  /** The bots host, asked when needed (absent, or returning undefined: no `delegate` tool, and acceptance says why). */
  bots?: (() => DelegationHost | undefined) | undefined;
}

export interface MemoryObservation {
  /** The change sequence the diff reached: the next baseline. */
  head: number;
  baseline: MemoryBaseline | null;
  totals: DiffTotals;
  rendered: string;
  /** The changed documents' content (absent in a checkpoint from an older version). */
  excerpts?: ChangedExcerpt[];
  /** Commit moves the baseline (none yet, or the window holds changes). */
  advance: boolean;
}

export interface MemoryContext {
  system: string;
  prompt: string;
}

export interface MemoryReflection {
  staged: StagedOp[];
  /** The agent's closing sentence. */
  text: string;
  steps: number;
  /** Tools called, in order. */
  tools: string[];
}

export type MemoryWorld = World<MemoryObservation, MemoryContext, MemoryReflection> & {
  readonly service: MemoryWorldService;
  initialDelayMs(): number;
};

export function createMemoryWorld(deps: MemoryWorldDeps): MemoryWorld {
  const settings = (): MemoryWorldSettings => (typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const label = deps.label ?? 'memory';
  const outputs = new OutputStore(deps.db);
  const delegations = new DelegationStore(deps.db);
  const bots = () => deps.bots?.();
  const service = new MemoryWorldService({ memory: deps.memory, outputs, delegations, bots, label, clock: deps.clock, emit: deps.emit });
  const log = deps.log ?? silentLogger;

  /** Before the lease: memory not past the baseline (the quiet path's two reads) needs no tick at all. */
  async function probe(ctx: TickContext): Promise<string | null> {
    await deps.ready?.(ctx.signal);
    const [baseline, head] = await Promise.all([deps.memory.latestCheckpoint(label), deps.memory.head()]);
    return baseline && head <= baseline.seq ? UNCHANGED : null;
  }

  async function observe(ctx: TickContext): Promise<Observation<MemoryObservation>> {
    await deps.ready?.(ctx.signal);
    const [baseline, head] = await Promise.all([deps.memory.latestCheckpoint(label), deps.memory.head()]);
    const quiet = (advance: boolean, b: MemoryBaseline | null, h = head): Observation<MemoryObservation> => ({
      quiet: true,
      tainted: false,
      data: { head: h, baseline: b, totals: emptyTotals(), rendered: '', advance },
    });
    if (!baseline) return quiet(true, null); // the first commit makes the baseline
    if (head <= baseline.seq) return quiet(false, baseline); // two reads, no write, no model call
    const diff = await deps.memory.diffSince(baseline, { entriesPerNamespace: RENDER_LINES_PER_SOURCE });
    // Changes that cancel out (added, then removed): nothing to review, but move past them.
    if (totalChanges(diff.totals) === 0) return quiet(true, baseline, diff.head);
    const excerpts = await changedContent(diff, settings().changed_content_chars);
    return { quiet: false, tainted: true, data: { head: diff.head, baseline, totals: diff.totals, rendered: renderDiff(diff), excerpts, advance: true } };
  }

  /** Excerpts of the added and modified documents, newest change first, until `budget` characters are used. */
  async function changedContent(diff: MemoryDiff, budget: number): Promise<ChangedExcerpt[]> {
    const entries = diff.namespaces
      .flatMap((ns) => ns.entries.filter((e) => e.change !== 'removed').map((e) => ({ ns, e })))
      .sort((a, b) => b.e.updated_at - a.e.updated_at);
    const out: ChangedExcerpt[] = [];
    let left = budget;
    for (const { ns, e } of entries) {
      if (left < 80) break;
      const doc = await deps.memory.getDocument(ns.namespace, e.external_id);
      if (!doc?.body) continue;
      const text = doc.body.slice(0, Math.min(EXCERPT_CHARS, left));
      left -= text.length + e.title.length;
      out.push({ namespace: ns.namespace, title: e.title, change: e.change, text });
    }
    return out;
  }

  async function prepareContext(_ctx: TickContext, observation: Observation<MemoryObservation>): Promise<MemoryContext> {
    const host = bots();
    const [todos, goals, team] = await Promise.all([outputs.todos('open'), outputs.goals('active'), host ? host.bots() : Promise.resolve(null)]);
    const { baseline, rendered, excerpts } = observation.data;
    return { system: DECISION_SYSTEM, prompt: decisionPrompt({ baseline: baseline!, rendered, excerpts: excerpts ?? [], todos, goals, bots: team }) };
  }

  async function reflect(ctx: TickContext, context: MemoryContext, observation: Observation<MemoryObservation>): Promise<MemoryReflection> {
    const s = settings();
    const host = bots();
    const session = memoryTools({
      memory: deps.memory,
      outputs,
      ids: ctx.ids,
      baseline: observation.data.baseline!,
      rendered: observation.data.rendered,
      bots: host ? () => host.bots() : undefined,
    });
    const run = deps.agent.start({
      world: ctx.world,
      purpose: 'memory_reflect',
      title: 'Memory review',
      system: context.system,
      prompt: context.prompt,
      mode: ctx.permit('full'), // a diff-driven tick is tainted
      attended: false,
      role: s.role,
      model: s.model,
      servers: [], // no MCP server: the local tools are the whole surface
      localTools: session.tools,
      maxSteps: s.max_steps,
      capMs: s.run_cap_minutes * 60_000,
      signal: ctx.signal,
    });
    const outcome = await run.settled;
    if (outcome.status !== 'done') {
      // Nothing staged is applied and the baseline stays: the next tick reviews the same changes.
      throw new SubconsciousError(
        outcome.status === 'cancelled' ? 'cancelled' : 'model_error',
        `the memory review ${outcome.status === 'cancelled' ? 'was cancelled' : `failed (${outcome.errorKind ?? 'unknown'})`}: ${outcome.error ?? 'no reason given'}`,
        { hint: 'The next tick reviews the same changes again.' },
      );
    }
    const invalid = closingProblem(outcome.text, session.staged.length);
    if (invalid) {
      // Not a finished review: nothing staged is applied and the baseline stays (the engine backs off).
      throw new SubconsciousError(
        'model_malformed',
        `the memory review's reply is not a finished review: ${invalid}. Raw reply: ${JSON.stringify(outcome.text.slice(-300))}`,
        {
          hint: 'The next tick reviews the same changes again; if this repeats, pick a model that follows the prompt (it must end with "Nothing to do." when it does nothing).',
        },
      );
    }
    return { staged: session.staged, text: outcome.text.slice(0, 2000), steps: outcome.steps, tools: outcome.toolSteps.map((t) => t.tool) };
  }

  async function commit(ctx: TickContext, input: CommitInput<MemoryObservation, MemoryReflection>): Promise<CommitSummary> {
    const { observation, reflection } = input;
    const data = observation.data;
    if (!data.advance) return { summary: UNCHANGED, counts: { changes: 0 } };
    const applied = await outputs.apply(reflection?.staged ?? [], ctx.tickId, ctx.clock.now());
    for (const n of applied.notifications) deps.emit('memory.notification', { id: n.id, thread: USER_THREAD, message: n.message, priority: n.priority });
    if (applied.todos.length) deps.emit('memory.todos_changed', { ids: applied.todos });
    if (applied.goals.length) deps.emit('memory.goals_changed', { ids: applied.goals });
    if (applied.delegations.length) deps.emit('memory.delegations_changed', { ids: applied.delegations });
    // The id makes a resumed commit find the checkpoint it already made.
    const baseline = await deps.memory.createCheckpoint(label, { seq: data.head, id: `${label}:${ctx.tickId}` });
    await deps.memory.pruneCheckpoints(label, settings().keep_checkpoints, [baseline.id]);
    if (!data.baseline) return { summary: 'baseline created', counts: { changes: 0 } };
    const changes = totalChanges(data.totals);
    const counts = {
      changes,
      notifications: applied.notifications.length,
      todos: applied.todos.length,
      goals: applied.goals.length,
      delegations: applied.delegations.length,
    };
    if (!reflection) return { summary: 'changes cancelled out: baseline moved', counts };
    const did = [
      plural(counts.notifications, 'notification'),
      plural(counts.todos, 'to-do'),
      plural(counts.goals, 'goal'),
      plural(counts.delegations, 'delegation') + (counts.delegations ? ' waiting for you' : ''),
    ].filter((x) => !x.startsWith('0 '));
    log.info({ tick: ctx.tickId, ...counts, tools: reflection.tools }, 'memory review committed');
    return { summary: `${plural(changes, 'change')} reviewed: ${did.length ? did.join(', ') : 'nothing to do'}`, counts };
  }

  const world: MemoryWorld = {
    kind: 'memory',
    probe,
    get roles(): readonly ModelRole[] {
      return [settings().role];
    },
    service,
    intervalMinutes: () => settings().interval_minutes,
    initialDelayMs: () => settings().initial_delay_seconds * 1000,
    observe,
    prepareContext,
    reflect,
    commit,
  };
  return world;
}

const NOTHING_TO_DO = /^\W*nothing to do\W*$/i;

/**
 * Why the decision agent's closing reply is not a finished review (undefined when it is). A cut
 * reply already failed the run (`model_truncated`). A review that staged nothing must say exactly
 * "Nothing to do." as the prompt asks: an empty, prose or other-language reply is not read as
 * silence, since its baseline would move and the change never be reviewed again.
 */
export function closingProblem(text: string, staged: number): string | undefined {
  const closing = text.replace(/<think>[\s\S]*?<\/think>/gi, '').trim();
  if (closing === '') return 'the model returned an empty reply';
  if (staged === 0 && !NOTHING_TO_DO.test(closing)) return 'it staged nothing and did not answer "Nothing to do."';
  return undefined;
}

const EXCERPT_CHARS = 600;
const UNCHANGED = 'memory unchanged since the baseline';
