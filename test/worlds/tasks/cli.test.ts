/** `subconscious tasks list|add|enable|disable|remove` over the real RPC methods and store. */
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerTasksCommands } from '../../../src/cli/tasks.js';
import { EventBus, FakeClock, RpcDispatcher, uuid } from '../../../src/core/index.js';
import { TasksService, tasksRpcMethods, type Task } from '../../../src/worlds/tasks/index.js';
import { openTestStore, type TestStore } from '../../support/stores.js';

let store: TestStore;
let lines: string[];
let program: Command;

beforeEach(async () => {
  store = await openTestStore('sqlite');
  const service = new TasksService({ db: store.db, clock: new FakeClock(), ids: uuid, events: new EventBus(), workspace: store.workspace, timezone: 'UTC' });
  const rpc = new RpcDispatcher(tasksRpcMethods(service));
  lines = [];
  program = new Command('subconscious').exitOverride();
  registerTasksCommands(program, (method, params) => rpc.call(method, params ?? {}), (l) => lines.push(l));
});
afterEach(async () => {
  await store.dispose();
});

const run = (...args: string[]) => program.parseAsync(['node', 'subconscious', 'tasks', ...args]);

describe('tasks CLI', () => {
  it('adds, lists as a table and as JSON, disables, enables and removes', async () => {
    await run('add', 'Send', 'daily', 'summary', 'to', 'Slack', '--recurrence', 'cron:0 9 * * *');
    expect(lines.at(-1)).toMatch(/^added \S+: Send daily summary to Slack \(cron:0 9 \* \* \*, write\)$/);
    await run('add', 'Check the build status', '--recurrence', 'once');
    await run('add', 'Check urgent emails', '--json');
    const added = JSON.parse(lines.slice(2).join('\n')) as Task;
    expect(added).toMatchObject({ title: 'Check urgent emails', needs_tools: false, source: 'user' });

    lines.length = 0;
    await run('list');
    expect(lines[0]).toMatch(/^ID\s+ON\s+SOURCE\s+INTENT\s+SCHEDULE\s+NEXT \(UTC\)\s+TITLE$/);
    expect(lines).toHaveLength(7); // header + 3 system + 3 user
    expect(lines.find((l) => l.includes('Check the build status'))).toMatch(/on\s+user\s+read\s+once\s+next tick\s+Check the build status$/);
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
    expect(lines.at(-1)).toBe(`removed ${added.id}: Check urgent emails`);

    lines.length = 0;
    await run('list', '--json');
    const all = JSON.parse(lines.join('\n')) as Task[];
    expect(all.map((t) => t.id)).not.toContain(added.id);
    expect(all.find((t) => t.id === 'system:check-skills')!.enabled).toBe(false);
  });

  it('refuses to remove a system task, with the reason', async () => {
    await expect(run('remove', 'system:system-health')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('only disabled') });
  });
});
