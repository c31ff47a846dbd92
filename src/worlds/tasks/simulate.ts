/**
 * The tasks world's side of `subconscious simulate`: copy the person's standing tasks out of
 * their database (read-only) into the scratch store, answer every evaluation with `noop` for
 * every task (the steady-state cost of watching when nothing needs doing: an idle day), and
 * report the evaluation calls that day cost, the task decisions asked for and the largest
 * situation report. With the unchanged-task skip, an idle day costs one evaluation at the start
 * and then one per real change (none here), per safety net, and per new day for a task about
 * time.
 */
import type { Kysely, Selectable } from 'kysely';
import type { SimulateHooks, SimulationSession } from '../../engine/index.js';
import type { tasksContract } from '../../protocol/tasks.js';
import type { TasksConfig } from './config.js';
import { noopDecisionsReply, readEvaluationPrompt } from './dry-run.js';
import type { SubconsciousTasksTable, TasksTables } from './tables.js';

/**
 * The columns copied, named so a database with columns this version does not know still copies.
 * The later ones are copied when the source has them: an older database lacks them.
 */
const TASK_COLUMNS = [
  'id',
  'title',
  'source',
  'origin',
  'origin_present',
  'recurrence',
  'enabled',
  'needs_tools',
  'last_run_at',
  'next_run_at',
  'completed',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof SubconsciousTasksTable)[];
const LATER_COLUMNS = ['origin_order', 'user_disabled', 'write_choice', 'dedupe_key'] as const satisfies readonly (keyof SubconsciousTasksTable)[];

type CopiedTask = Pick<Selectable<SubconsciousTasksTable>, (typeof TASK_COLUMNS)[number]> &
  Partial<Pick<Selectable<SubconsciousTasksTable>, (typeof LATER_COLUMNS)[number]>>;

type Methods = (typeof tasksContract)['methods'];

export const tasksSimulation: SimulateHooks<TasksConfig, TasksTables, Methods> = {
  async copy(from, to) {
    const tasks = await readTasks(from);
    // Chunked: SQLite caps bound parameters per statement.
    for (let i = 0; i < tasks.length; i += 50)
      await to
        .insertInto('subconscious_tasks')
        .values(tasks.slice(i, i + 50))
        .execute();
    return { copied: tasks.length, what: 'tasks' };
  },

  session(config): SimulationSession<Methods> {
    const evaluations = { largestReport: -1, decisions: 0, maxPerCall: 0, calls: 0 };
    return {
      reply(request) {
        const read = readEvaluationPrompt(request.prompt);
        if (!read) return undefined;
        evaluations.calls++;
        evaluations.largestReport = Math.max(evaluations.largestReport, read.reportTokens);
        evaluations.decisions += read.taskIds.length;
        evaluations.maxPerCall = Math.max(evaluations.maxPerCall, read.taskIds.length);
        return noopDecisionsReply(read.taskIds);
      },
      async finish(call) {
        const tasks = await call('subconscious.tasks_list');
        return {
          largest_situation_report: evaluations.largestReport < 0 ? null : { tokens: evaluations.largestReport, budget: config.context_budget_tokens },
          task_decisions: { total: evaluations.decisions, max_per_call: evaluations.maxPerCall },
          enabled_tasks: tasks.filter((t) => t.enabled && !t.completed).length,
          idle: {
            evaluation_calls: evaluations.calls,
            unchanged_skip: config.reevaluate_unchanged_after_minutes > 0,
            reevaluate_unchanged_after_minutes: config.reevaluate_unchanged_after_minutes,
          },
        };
      },
      print(figures, print) {
        const n = (x: number) => x.toLocaleString('en-US');
        const report = figures.largest_situation_report as { tokens: number; budget: number } | null;
        if (report)
          print(
            `  largest situation report: ${n(report.tokens)} of ${n(report.budget)} tokens (${percent(report.tokens / report.budget)} of context_budget_tokens)`,
          );
        else print('  largest situation report: none was built (no tick evaluated)');
        const decisions = figures.task_decisions as { total: number; max_per_call: number };
        const enabled = figures.enabled_tasks as number;
        const idle = figures.idle as { evaluation_calls: number; unchanged_skip: boolean; reevaluate_unchanged_after_minutes: number };
        print(
          `  idle cost: ${n(idle.evaluation_calls)} evaluation call${idle.evaluation_calls === 1 ? '' : 's'} for ${n(enabled)} enabled task${enabled === 1 ? '' : 's'}${
            idle.unchanged_skip
              ? ` (unchanged tasks skipped: evaluated again on a change, a new day for a task about time, or after ${n(idle.reevaluate_unchanged_after_minutes)} min)`
              : ' (reevaluate_unchanged_after_minutes = 0: every due task on every tick)'
          }`,
        );
        print(`  task decisions: ${n(decisions.total)} (at most ${n(decisions.max_per_call)} per call)`);
      },
      assumptions:
        'Assumes an idle day: every task evaluated decides noop (nothing needs doing, so nothing is executed and no agent runs), and HEARTBEAT.md, workspace files, skills, memory and tasks stay as they are now, so a task is evaluated again only when the safety net runs out or a new day begins for a task about time.',
    };
  },
};

/** Every task (system defaults, HEARTBEAT.md lines, user tasks) as the person's database has it, removed ones left out. */
async function readTasks(source: Kysely<TasksTables>): Promise<CopiedTask[]> {
  const rows = await source.selectFrom('subconscious_tasks').selectAll().orderBy('created_at').orderBy('id').execute();
  // A removed task is not evaluated, so it costs nothing: it is not copied.
  return rows
    .filter((row) => (row as { removed_at?: unknown }).removed_at === null || (row as { removed_at?: unknown }).removed_at === undefined)
    .map((row) => {
      const copy: Record<string, unknown> = {};
      for (const column of [...TASK_COLUMNS, ...LATER_COLUMNS]) if (column in row) copy[column] = row[column];
      return copy as CopiedTask;
    });
}

/** 0.3%, 12%: one decimal only where it says something. */
function percent(share: number): string {
  const p = share * 100;
  return `${p > 0 && p < 10 ? p.toFixed(1) : Math.round(p)}%`;
}
