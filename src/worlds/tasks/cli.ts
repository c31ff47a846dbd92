/**
 * `subconscious tasks list|add|enable|disable|remove`: the task loop without the page. Every
 * command is one RPC call (the same methods the page uses, typed by the contract); `--json`
 * prints the raw result.
 */
import type { Command } from 'commander';
import { SubconsciousError } from '../../core/errors.js';
import type { CliContext } from '../../engine/index.js';
import type { Task, TasksEvents, tasksContract } from '../../protocol/tasks.js';

type Cli = CliContext<(typeof tasksContract)['methods'], TasksEvents>;
type Call = Cli['call'];

type TaskRow = Pick<Task, 'id' | 'title' | 'source' | 'recurrence' | 'enabled' | 'needs_tools' | 'last_run_at' | 'next_run_at' | 'completed'>;

/** Adds the subcommands to `tasks` (the group command the CLI made for this module). */
export function registerTasksCommands(tasks: Command, { call, print }: Pick<Cli, 'call' | 'print'>): Command {
  tasks
    .command('list')
    .description('list tasks (system and user)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const rows: TaskRow[] = await call('subconscious.tasks_list');
      if (opts.json) return print(JSON.stringify(rows, null, 2));
      for (const line of formatTaskTable(rows)) print(line);
    });

  tasks
    .command('add')
    .description('add a user task')
    .argument('<title...>', 'what to check or do, e.g. "Check urgent emails"')
    .option('-r, --recurrence <recurrence>', 'pending (every tick), once, or cron:<expr>', 'pending')
    .option('--write', 'the task asks for a write action (send, post, …)')
    .option('--read-only', 'the task only reads')
    .option('--json', 'print JSON')
    .action(async (words: string[], opts: { recurrence: string; write?: boolean; readOnly?: boolean; json?: boolean }) => {
      if (opts.write && opts.readOnly) {
        throw new SubconsciousError('invalid_params', '--write and --read-only contradict each other; give one of them (or neither to decide from the title).');
      }
      const needsTools = opts.write ? true : opts.readOnly ? false : undefined;
      const task = await call('subconscious.tasks_add', {
        title: words.join(' '),
        recurrence: opts.recurrence,
        ...(needsTools === undefined ? {} : { needs_tools: needsTools }),
      });
      if (opts.json) return print(JSON.stringify(task, null, 2));
      print(`added ${task.id}: ${task.title} (${task.recurrence}, ${task.needs_tools ? 'write' : 'read-only'})`);
    });

  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    tasks
      .command(name)
      .description(`${name} a task (system tasks too)`)
      .argument('<id>', 'task id or a unique start of it, 4+ characters (see `tasks list`)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { json?: boolean }) => {
        const task = await call('subconscious.tasks_update', { id: await resolveTaskId(call, id), enabled });
        if (opts.json) return print(JSON.stringify(task, null, 2));
        print(`${enabled ? 'enabled' : 'disabled'} ${task.id}: ${task.title}`);
      });
  }

  tasks
    .command('remove')
    .description('remove a user task (system tasks can only be disabled)')
    .argument('<id>', 'task id or a unique start of it, 4+ characters (see `tasks list`)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const task = await call('subconscious.tasks_remove', { id: await resolveTaskId(call, id) });
      if (opts.json) return print(JSON.stringify(task, null, 2));
      print(`removed ${task.id}: ${task.title}`);
    });

  return tasks;
}

/** The shortest id start accepted: shorter ones match too much to be typed on purpose. */
const MIN_ID_PREFIX = 4;

/**
 * The full id for what a person typed: the id itself, or the one task whose id starts with it
 * (ids are 36-character UUIDs). Anything else goes on unchanged, so the RPC's own not-found
 * message answers it.
 */
async function resolveTaskId(call: Call, typed: string): Promise<string> {
  if (typed.length < MIN_ID_PREFIX) return typed;
  const rows: TaskRow[] = await call('subconscious.tasks_list');
  if (rows.some((t) => t.id === typed)) return typed;
  const start = typed.toLowerCase();
  const matches = rows.filter((t) => t.id.toLowerCase().startsWith(start));
  if (matches.length > 1) {
    throw new SubconsciousError('invalid_params', `"${typed}" starts ${matches.length} task ids: ${matches.map((t) => `${t.id} (${t.title})`).join(', ')}`, {
      hint: 'type more of the id',
    });
  }
  return matches[0]?.id ?? typed;
}

/** A plain table: ID, ON, SOURCE, INTENT, SCHEDULE, NEXT (UTC), TITLE. */
export function formatTaskTable(rows: TaskRow[]): string[] {
  if (rows.length === 0) return ['no tasks'];
  const table = rows.map((t) => [
    t.id,
    t.completed ? 'done' : t.enabled ? 'on' : 'off',
    t.source,
    t.needs_tools ? 'write' : 'read',
    t.recurrence,
    nextRun(t),
    t.title.length > 70 ? `${t.title.slice(0, 69)}…` : t.title,
  ]);
  const head = ['ID', 'ON', 'SOURCE', 'INTENT', 'SCHEDULE', 'NEXT (UTC)', 'TITLE'];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(head), ...table.map(line)];
}

/** When a task is evaluated next: a time (cron), the next tick (`once` not yet run) or every tick (`pending`). */
function nextRun(t: TaskRow): string {
  if (t.completed || !t.enabled) return '-';
  if (t.next_run_at !== null) return new Date(t.next_run_at).toISOString().slice(0, 16).replace('T', ' ');
  return t.recurrence === 'pending' ? 'every tick' : 'next tick';
}
