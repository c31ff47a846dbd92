/** `subconscious tasks list|add|enable|disable|remove|restore` over the real RPC methods and store. */
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, RpcDispatcher, uuid } from '../../../src/core/index.js';
import { createRpcClient, implement, tasksContract } from '../../../src/protocol/index.js';
import { TasksService, formatTaskTable, registerTasksCommands, tasksRpcHandlers, type Task } from '../../../src/worlds/tasks/index.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

let store: TestStore;
let lines: string[];
let program: Command;
let service: TasksService;
let clock: FakeClock;

beforeEach(async () => {
  store = await openTestStore('sqlite');
  clock = new FakeClock();
  service = new TasksService({ db: store.db, clock, ids: uuid, events: new EventBus(), workspace: store.workspace, timezone: 'UTC' });
  const rpc = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(service)));
  lines = [];
  program = new Command('subconscious').exitOverride();
  registerTasksCommands(program.command('tasks'), {
    call: createRpcClient((method, params) => rpc.call(method, params)),
    print: (l) => lines.push(l),
  });
});
afterEach(async () => {
  await store.dispose();
});

const run = (...args: string[]) => program.parseAsync(['node', 'subconscious', 'tasks', ...args]);

describe('tasks CLI', () => {
  it('adds, lists as a table and as JSON, disables, enables and removes', async () => {
    // Read-only unless --write says so (issue 9): a title that sounds like a write gets a suggestion.
    await run('add', 'Send', 'daily', 'summary', 'to', 'Slack', '--recurrence', 'cron:0 9 * * *');
    expect(lines[0]).toMatch(/^added \S+: Send daily summary to Slack \(cron:0 9 \* \* \*, read-only\)$/);
    expect(lines[1]).toMatch(
      /^This sounds like it sends or changes things\. It was added read-only: it asks before any write\. To let it act without asking: subconscious tasks writes \S+ on$/,
    );
    const sendId = lines[0]!.split(' ')[1]!.replace(/:$/, '');
    await run('writes', sendId.slice(0, 8), 'on');
    expect(lines.at(-1)).toBe(`writes allowed: ${sendId}: Send daily summary to Slack`);
    await run('add', 'Post', 'the', 'weekly', 'report', '--write');
    expect(lines.at(-1)).toMatch(/^added \S+: Post the weekly report \(pending, write\)$/);
    await run('remove', lines.at(-1)!.split(' ')[1]!.replace(/:$/, ''));
    lines.length = 0;
    await run('add', 'Check the build status', '--recurrence', 'once');
    await run('add', 'Check urgent emails', '--json');
    const added = JSON.parse(lines.slice(1).join('\n')) as Task;
    expect(added).toMatchObject({ title: 'Check urgent emails', needs_tools: false, source: 'user' });

    lines.length = 0;
    await run('list');
    expect(lines[0]).toMatch(/^ID\s+ON\s+SOURCE\s+INTENT\s+SCHEDULE\s+NEXT \(UTC\)\s+TITLE\s+WHY$/);
    expect(lines).toHaveLength(7); // header + 3 system + 3 user
    expect(lines.find((l) => l.includes('Check the build status'))).toMatch(/on\s+user\s+read\s+once\s+next tick\s+Check the build status\s+-$/);
    expect(lines.find((l) => l.includes('Send daily summary'))).toMatch(/on\s+user\s+write\s+cron:0 9 \* \* \*\s+2026-01-02 09:00/);
    expect(lines.find((l) => l.startsWith('system:check-skills'))).toMatch(/on\s+system\s+read\s+pending\s+every tick/);

    await run('disable', 'system:check-skills');
    expect(lines.at(-1)).toBe('disabled system:check-skills: Check connected skills for errors or disconnections');
    lines.length = 0;
    await run('list');
    expect(lines.find((l) => l.startsWith('system:check-skills'))).toMatch(/off\s+system\s+read\s+pending\s+-\s+Check connected/);
    await run('enable', added.id);
    expect(lines.at(-1)).toBe(`enabled ${added.id}: Check urgent emails`);
    await run('remove', added.id);
    expect(lines.at(-1)).toBe(`removed ${added.id}: Check urgent emails (undo: subconscious tasks restore ${added.id})`);

    lines.length = 0;
    await run('list', '--json');
    const all = JSON.parse(lines.join('\n')) as Task[];
    expect(all.map((t) => t.id)).not.toContain(added.id);
    expect(all.find((t) => t.id === 'system:check-skills')!.enabled).toBe(false);

    // Removing is a soft delete: restore brings the same task back.
    await run('restore', added.id);
    expect(lines.at(-1)).toBe(`restored ${added.id}: Check urgent emails`);
    lines.length = 0;
    await run('list', '--json');
    expect((JSON.parse(lines.join('\n')) as Task[]).map((t) => t.id)).toContain(added.id);
    await expect(run('restore', added.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('is not removed') });
    await expect(run('restore', 'no-such-task')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('list: the WHY column is the reason of each task’s last decision', async () => {
    const task = await service.addTask({ title: 'Check the build status' });
    const stored = (await service.tasks.get(task.id))!;
    for (const [at, reason] of [
      [1_000, 'An older reason.'],
      [2_000, 'Nothing new:\n  the build stayed green since the last check.'],
    ] as const) {
      clock.set(clock.now() + at); // the newer row is written later
      const rows = await service.logs.openRows(`tick-${at}`, at, [stored], uuid);
      await service.logs.update(rows.get(task.id)!.id, { decision: 'noop', reason });
    }
    lines.length = 0;
    await run('list');
    expect(lines.find((l) => l.includes('Check the build status'))).toMatch(
      /Check the build status\s+Nothing new: the build stayed green since the last check\.$/,
    );
    expect(lines.find((l) => l.startsWith('system:check-skills'))).toMatch(/\s+-$/);
  });

  it('list with the Tasks world off: NEXT says never and WHY says the world is off (not "every tick")', async () => {
    const off = new TasksService({
      ...{ db: store.db, clock, ids: uuid, events: new EventBus(), workspace: store.workspace, timezone: 'UTC' },
      worldOff: () => Promise.resolve('switched off on the page (switch it on first)'),
    });
    const rpc = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(off)));
    program = new Command('subconscious').exitOverride();
    registerTasksCommands(program.command('tasks'), { call: createRpcClient((method, params) => rpc.call(method, params)), print: (l) => lines.push(l) });
    await off.addTask({ title: 'Check the build status' });
    lines.length = 0;
    await run('list');
    expect(lines.find((l) => l.includes('Check the build status'))).toMatch(
      /on\s+user\s+read\s+pending\s+never \(world off\)\s+Check the build status\s+the Tasks world is off: switched off on the page \(switch it on first\)$/,
    );
    lines.length = 0;
    await run('list', '--json');
    expect((JSON.parse(lines.join('\n')) as Task[]).every((t) => t.completed || !t.enabled || t.why.kind === 'world_off')).toBe(true);
  });

  it('list: with no decision reason, WHY shows why the task is skipped (the model is down), as --json says', async () => {
    const [task] = await service.listTasks();
    const row = { ...task!, why: { kind: 'model_unavailable' as const, at: null, until: null, detail: 'The local endpoint is not answering' } };
    expect(formatTaskTable([row])[1]).toMatch(/\s+model unavailable: The local endpoint is not answering$/);
    expect(formatTaskTable([row], new Map([[row.id, 'The build is green.']]))[1]).toMatch(/\s+The build is green\.$/);
  });

  it('refuses to remove a system task, with the reason', async () => {
    await expect(run('remove', 'system:system-health')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('only disabled') });
  });
});

describe('tasks CLI: a task id may be given by its first characters', () => {
  const TWINS = ['7b9bc043-1111-4000-8000-000000000001', '7b9bc043-2222-4000-8000-000000000002'];
  const OTHER = '5d2a0c9e-3333-4000-8000-000000000003';

  beforeEach(async () => {
    // The next three user tasks get these ids (two share their first 8 characters, as UUIDs may).
    const queued = [...TWINS, OTHER];
    const service = new TasksService({
      db: store.db,
      clock: new FakeClock(),
      ids: () => queued.shift() ?? uuid(),
      events: new EventBus(),
      workspace: store.workspace,
      timezone: 'UTC',
    });
    const rpc = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(service)));
    program = new Command('subconscious').exitOverride();
    registerTasksCommands(program.command('tasks'), {
      call: createRpcClient((method, params) => rpc.call(method, params)),
      print: (l) => lines.push(l),
    });
    await run('add', 'Check urgent emails');
    await run('add', 'Check the build status');
    await run('add', 'Read the release notes');
  });

  it('enable, disable and remove accept a unique start of the id (any case) and print the full id', async () => {
    await run('disable', '5d2a');
    expect(lines.at(-1)).toBe(`disabled ${OTHER}: Read the release notes`);
    await run('enable', '5D2A0C9E');
    expect(lines.at(-1)).toBe(`enabled ${OTHER}: Read the release notes`);
    await run('remove', '7b9bc043-2');
    expect(lines.at(-1)).toBe(`removed ${TWINS[1]}: Check the build status (undo: subconscious tasks restore ${TWINS[1]})`);
    lines.length = 0;
    await run('list', '--json');
    expect((JSON.parse(lines.join('\n')) as Task[]).map((t) => t.id)).toEqual(expect.arrayContaining([TWINS[0], OTHER]));
    expect((JSON.parse(lines.join('\n')) as Task[]).map((t) => t.id)).not.toContain(TWINS[1]);
  });

  it('an ambiguous start is refused, listing every match; nothing changes', async () => {
    const refused = run('remove', '7b9bc043');
    await expect(refused).rejects.toMatchObject({ code: 'invalid_params', hint: 'type more of the id' });
    const message = ((await refused.catch((e: unknown) => e)) as Error).message;
    expect(message).toBe(`"7b9bc043" starts 2 task ids: ${TWINS[0]} (Check urgent emails), ${TWINS[1]} (Check the build status)`);
    lines.length = 0;
    await run('list', '--json');
    expect((JSON.parse(lines.join('\n')) as Task[]).filter((t) => t.source === 'user')).toHaveLength(3);
  });

  it('restore accepts a unique start of a removed task’s id; an ambiguous one lists the removed matches; a live task is no match', async () => {
    await run('remove', TWINS[0]!);
    await run('remove', TWINS[1]!);
    lines.length = 0;
    await run('list', '--removed');
    expect(lines.slice(1).map((l) => l.split(' ')[0])).toEqual([TWINS[0], TWINS[1]].sort());
    await expect(run('restore', '7b9bc043')).rejects.toMatchObject({
      code: 'invalid_params',
      message: `"7b9bc043" starts 2 task ids: ${TWINS[0]} (Check urgent emails), ${TWINS[1]} (Check the build status)`,
    });
    await run('restore', '7B9BC043-2');
    expect(lines.at(-1)).toBe(`restored ${TWINS[1]}: Check the build status`);
    await expect(run('restore', '5d2a')).rejects.toMatchObject({ code: 'not_found', message: 'No removed task with id "5d2a".' });
  });

  it('no match, or fewer than 4 characters, keeps the not-found message', async () => {
    await expect(run('enable', 'ffff')).rejects.toMatchObject({ code: 'not_found', message: 'No task with id "ffff".' });
    await expect(run('disable', '7b9')).rejects.toMatchObject({ code: 'not_found', message: 'No task with id "7b9".' });
  });
});
