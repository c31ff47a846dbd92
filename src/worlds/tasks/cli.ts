/**
 * `subconscious tasks list|add|enable|disable|writes|remove|restore`: the task loop without the page.
 * Every command is one RPC call (the same methods the page uses, typed by the contract); `--json`
 * prints the raw result. A task is read-only unless `--write` says otherwise (issue 9): a title
 * that sounds like it writes only gets a suggestion.
 */
import type { Command } from 'commander';
import { SubconsciousError } from '../../core/errors.js';
import type { CliContext } from '../../engine/index.js';
import type { Task, TasksEvents, tasksContract } from '../../protocol/tasks.js';

type Cli = CliContext<(typeof tasksContract)['methods'], TasksEvents>;
type Call = Cli['call'];

type TaskRow = Pick<Task, 'id' | 'title' | 'source' | 'recurrence' | 'enabled' | 'needs_tools' | 'last_run_at' | 'next_run_at' | 'completed'> &
  Partial<Pick<Task, 'write_choice' | 'why'>>;

/** Adds the subcommands to `tasks` (the group command the CLI made for this module). */
export function registerTasksCommands(tasks: Command, { call, print }: Pick<Cli, 'call' | 'print'>): Command {
  tasks
    .command('list')
    .description('list tasks (system and user)')
    .option('--removed', 'the removed tasks instead (what `tasks restore` brings back)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean; removed?: boolean }) => {
      const rows: TaskRow[] = await call('subconscious.tasks_list', opts.removed ? { removed: true } : {});
      if (opts.json) return print(JSON.stringify(rows, null, 2));
      for (const line of formatTaskTable(rows, await lastReasons(call))) print(line);
    });

  tasks
    .command('add')
    .description('add a user task')
    .argument('<title...>', 'what to check or do, e.g. "Check urgent emails"')
    .option('-r, --recurrence <recurrence>', 'pending (every tick), once, or cron:<expr>', 'pending')
    .option('--write', 'allow it to carry out the writes its words name (send, post, …) without asking')
    .option('--read-only', 'it only reads (the default)')
    .option('--json', 'print JSON')
    .action(async (words: string[], opts: { recurrence: string; write?: boolean; readOnly?: boolean; json?: boolean }) => {
      if (opts.write && opts.readOnly) {
        throw new SubconsciousError(
          'invalid_params',
          '--write and --read-only contradict each other; give one of them (without either, the task is read-only).',
        );
      }
      const needsTools = opts.write ? true : opts.readOnly ? false : undefined;
      const task = await call('subconscious.tasks_add', {
        title: words.join(' '),
        recurrence: opts.recurrence,
        ...(needsTools === undefined ? {} : { needs_tools: needsTools }),
      });
      if (opts.json) return print(JSON.stringify(task, null, 2));
      print(`added ${task.id}: ${task.title} (${task.recurrence}, ${task.needs_tools ? 'write' : 'read-only'})`);
      if (!task.needs_tools && task.write_suggested && needsTools === undefined) {
        print(
          `This sounds like it sends or changes things. It was added read-only: it asks before any write. To let it act without asking: subconscious tasks writes ${task.id} on`,
        );
      }
    });

  tasks
    .command('writes')
    .description('allow a user task to carry out the writes its words name without asking (on), or make it read-only (off)')
    .argument('<id>', 'task id or a unique start of it, 4+ characters (see `tasks list`)')
    .argument('<on|off>', 'on: it may act without asking; off: read-only, it asks before any write')
    .option('--json', 'print JSON')
    .action(async (id: string, choice: string, opts: { json?: boolean }) => {
      const value = choice.trim().toLowerCase();
      if (value !== 'on' && value !== 'off')
        throw new SubconsciousError('invalid_params', `"${choice}" is neither on nor off.`, { hint: 'subconscious tasks writes <id> on|off' });
      const task = await call('subconscious.tasks_update', { task_id: await resolveTaskId(call, id), needs_tools: value === 'on' });
      if (opts.json) return print(JSON.stringify(task, null, 2));
      print(`${task.needs_tools ? 'writes allowed' : 'read-only'}: ${task.id}: ${task.title}`);
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
        const task = await call('subconscious.tasks_update', { task_id: await resolveTaskId(call, id), enabled });
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
      const task = await call('subconscious.tasks_remove', { task_id: await resolveTaskId(call, id) });
      if (opts.json) return print(JSON.stringify(task, null, 2));
      print(`removed ${task.id}: ${task.title} (undo: subconscious tasks restore ${task.id})`);
    });

  tasks
    .command('restore')
    .description('bring back a removed user task as it was')
    .argument('<id>', 'the id `tasks remove` printed, or its first characters (see `tasks list --removed`)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const task = await call('subconscious.tasks_restore', { task_id: await resolveTaskId(call, id.trim(), { removed: true }) });
      if (opts.json) return print(JSON.stringify(task, null, 2));
      print(`restored ${task.id}: ${task.title}`);
    });

  return tasks;
}

/** The shortest id start accepted: shorter ones match too much to be typed on purpose. */
const MIN_ID_PREFIX = 4;

/**
 * The full id for what a person typed: the id itself, or the one task whose id starts with it
 * (ids are 36-character UUIDs; 4 characters at least). Nothing else matches: the CLI says so with
 * what was typed (the daemon's own message names no id, since the page shows it). `removed`:
 * among the removed tasks (restore); a full id goes to the daemon as typed, which says what it is.
 */
async function resolveTaskId(call: Call, typed: string, opts: { removed?: boolean } = {}): Promise<string> {
  const rows: TaskRow[] = await call('subconscious.tasks_list', opts.removed ? { removed: true } : {});
  if (rows.some((t) => t.id === typed) || (opts.removed && typed.length >= 36)) return typed;
  const start = typed.toLowerCase();
  const matches = typed.length < MIN_ID_PREFIX ? [] : rows.filter((t) => t.id.toLowerCase().startsWith(start));
  if (matches.length > 1) {
    throw new SubconsciousError('invalid_params', `"${typed}" starts ${matches.length} task ids: ${matches.map((t) => `${t.id} (${t.title})`).join(', ')}`, {
      hint: 'type more of the id',
    });
  }
  if (!matches[0]) {
    throw new SubconsciousError('not_found', `No ${opts.removed ? 'removed ' : ''}task with id "${typed}".`, {
      hint: `List ${opts.removed ? 'removed ' : ''}tasks with \`subconscious tasks list${opts.removed ? ' --removed' : ''}\`${typed.length < MIN_ID_PREFIX ? ` (give at least ${MIN_ID_PREFIX} characters of an id)` : ''}.`,
      details: { field: 'id' },
    });
  }
  return matches[0].id;
}

/** How many recent log rows `tasks list` reads for the WHY column (a task not among them shows `-`). */
const REASON_ROWS = 1000;

/** Each task's last decision reason, from the newest log rows (the model's words, on one line). */
async function lastReasons(call: Call): Promise<Map<string, string>> {
  const rows = await call('subconscious.log_list', { limit: REASON_ROWS });
  const out = new Map<string, string>();
  for (const r of rows) if (r.reason && !out.has(r.task_id)) out.set(r.task_id, r.reason.replace(/\s+/g, ' ').trim());
  return out;
}

/**
 * A plain table: ID, ON, SOURCE, INTENT, SCHEDULE, NEXT (UTC), TITLE, WHY. INTENT `write?`: write
 * rights an older version guessed, or a HEARTBEAT.md `[write]` line asks for; it asks before every
 * write until `tasks writes <id> on|off`. WHY: the reason the model gave for its last decision, or
 * without one why it is skipped (the world or the model is off, an approval waits).
 */
export function formatTaskTable(rows: TaskRow[], reasons: ReadonlyMap<string, string> = new Map()): string[] {
  if (rows.length === 0) return ['no tasks'];
  const table = rows.map((t) => [
    t.id,
    t.completed ? 'done' : t.enabled ? 'on' : 'off',
    t.source,
    t.needs_tools ? (t.write_choice === 'older_version' || t.write_choice === 'heartbeat_md' ? 'write?' : 'write') : 'read',
    t.recurrence,
    nextRun(t),
    t.title.length > 70 ? `${t.title.slice(0, 69)}…` : t.title,
    reasons.has(t.id) ? clip(reasons.get(t.id)!, 80) : (skipWords(t.why) ?? '-'),
  ]);
  const head = ['ID', 'ON', 'SOURCE', 'INTENT', 'SCHEDULE', 'NEXT (UTC)', 'TITLE', 'WHY'];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(head), ...table.map(line)];
}

/** Why a task is skipped, in a line (the page says the same in `why.ts`); null when it is simply due or not due yet. */
function skipWords(why: TaskRow['why']): string | null {
  const also = (text: string) => (why?.detail ? `${text}: ${why.detail}` : text);
  switch (why?.kind) {
    case 'world_off':
      return also('the Tasks world is off');
    case 'model_unavailable':
      return also('model unavailable');
    case 'waiting':
      return also('waiting for your answer');
    case 'off':
      return also('switched off');
    case 'unchanged':
      return `unchanged since ${new Date(why.at ?? 0).toISOString().slice(0, 16).replace('T', ' ')}`;
    default:
      return null;
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** When a task is evaluated next: a time (cron), the next tick (`once` not yet run) or every tick (`pending`). */
function nextRun(t: TaskRow): string {
  if (t.completed || !t.enabled) return '-';
  if (t.why?.kind === 'world_off') return 'never (world off)';
  if (t.next_run_at !== null) return new Date(t.next_run_at).toISOString().slice(0, 16).replace('T', ' ');
  return t.recurrence === 'pending' ? 'every tick' : 'next tick';
}
