/** What the memory world serves outside its ticks: its outputs and the diff since its baseline. */
import type { Clock } from '../../core/clock.js';
import { RENDER_LINES_PER_SOURCE, renderDiff, totalChanges, type MemoryDiff } from '../../memory/diff.js';
import type {
  DelegationStatus,
  GoalStatus,
  MemoryBaseline,
  MemoryDelegation,
  MemoryDiffResult,
  MemoryGoal,
  MemoryNotification,
  MemoryTodo,
  TodoStatus,
} from '../../protocol/memory.js';
import type { DelegationHost, DelegationStore } from './delegations.js';
import type { MemoryWorldEmit } from './events.js';
import type { OutputStore } from './outputs.js';

export interface MemoryWorldServiceDeps {
  memory: {
    latestCheckpoint(label: string): Promise<MemoryBaseline | undefined>;
    diffSince(since: MemoryBaseline, opts: { entriesPerNamespace: number }): Promise<MemoryDiff>;
  };
  outputs: OutputStore;
  delegations: DelegationStore;
  /** The bots host, when one runs. */
  bots: () => DelegationHost | undefined;
  label: string;
  clock: Clock;
  emit: MemoryWorldEmit;
}

export class MemoryWorldService {
  readonly outputs: OutputStore;

  constructor(private readonly deps: MemoryWorldServiceDeps) {
    this.outputs = deps.outputs;
  }

  /** The memory world's baseline (null before its first tick). */
  async baseline(): Promise<MemoryBaseline | null> {
    return (await this.deps.memory.latestCheckpoint(this.deps.label)) ?? null;
  }

  /** What changed since the baseline, rendered as the world sees it. */
  async diff(): Promise<MemoryDiffResult> {
    const baseline = await this.baseline();
    if (!baseline) {
      return {
        baseline: null,
        totals: { added: 0, modified: 0, removed: 0 },
        text: 'No baseline yet: the memory world makes one on its first tick.',
        sources: [],
      };
    }
    const diff = await this.deps.memory.diffSince(baseline, { entriesPerNamespace: RENDER_LINES_PER_SOURCE });
    const sources = diff.namespaces
      .filter((ns) => totalChanges(ns.totals) > 0)
      .map((ns) => {
        const entries = ns.entries
          .slice(0, RENDER_LINES_PER_SOURCE)
          .map((e) => ({ change: e.change, title: e.title, external_id: e.external_id, updated_at: e.updated_at }));
        return { namespace: ns.namespace, label: ns.label, kind: ns.kind, totals: ns.totals, entries, more: totalChanges(ns.totals) - entries.length };
      });
    return { baseline, totals: diff.totals, text: renderDiff(diff), sources };
  }

  notifications(limit = 50): Promise<MemoryNotification[]> {
    return this.outputs.notifications(limit);
  }

  todos(status?: TodoStatus): Promise<MemoryTodo[]> {
    return this.outputs.todos(status);
  }

  goals(status?: GoalStatus): Promise<MemoryGoal[]> {
    return this.outputs.goals(status);
  }

  async setTodoStatus(id: string, status: TodoStatus): Promise<MemoryTodo> {
    const todo = await this.outputs.setTodoStatus(id, status, this.deps.clock.now());
    this.deps.emit('memory.todos_changed', { ids: [id] });
    return todo;
  }

  delegations(status?: DelegationStatus): Promise<MemoryDelegation[]> {
    return this.deps.delegations.list(status);
  }

  /** A person's answer to a pending delegation: accepted, the bot gets it as a new task. */
  async answerDelegation(id: string, accept: boolean): Promise<MemoryDelegation> {
    const d = await this.deps.delegations.answer(id, accept, this.deps.bots(), this.deps.clock.now());
    this.deps.emit('memory.delegations_changed', { ids: [id] });
    return d;
  }

  async setGoalStatus(id: string, status: GoalStatus): Promise<MemoryGoal> {
    const goal = await this.outputs.setGoalStatus(id, status, this.deps.clock.now());
    this.deps.emit('memory.goals_changed', { ids: [id] });
    return goal;
  }
}
