/**
 * The tasks world's tables on both dialects: system defaults, HEARTBEAT.md import (1,000
 * lines with headers, blank lines and duplicates; idempotent; vanished lines disable), user
 * task rules, recurrence validation, log rows, escalation compare-and-set, and the RPC surface.
 */
import { implement, tasksContract } from '../../../src/protocol/index.js';
import { rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, RpcDispatcher, uuid, type BusEvent } from '../../../src/core/index.js';
import { DEFAULT_SYSTEM_TASKS, TasksService, heartbeatTaskId, tasksRpcHandlers, writesGranted, type Task } from '../../../src/worlds/tasks/index.js';
import { openTestStore, testDialects, type TestStore } from '../../support/stores.js';

describe.each(await testDialects())('tasks store on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let events: BusEvent[];
  let service: TasksService;
  let rpc: RpcDispatcher;

  beforeEach(async () => {
    store = await openTestStore(dialect);
    clock = new FakeClock();
    events = [];
    const bus = new EventBus(() => clock.now());
    bus.subscribe((e) => events.push(e));
    service = new TasksService({ db: store.db, clock, ids: uuid, events: bus, workspace: store.workspace, timezone: 'Europe/Paris' });
    rpc = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(service)));
  });
  afterEach(async () => {
    await store.dispose();
  });

  const heartbeatFile = () => path.join(store.workspace, 'HEARTBEAT.md');
  const heartbeatTasks = async () => (await service.listTasks()).filter((t) => t.origin === 'heartbeat_md');

  it('seeds the three system defaults once, with stable ids; they can be disabled, never removed', async () => {
    const tasks = await service.listTasks();
    expect(tasks.map((t) => t.id)).toEqual(DEFAULT_SYSTEM_TASKS.map((t) => t.id));
    expect(tasks.every((t) => t.source === 'system' && t.enabled && t.recurrence === 'pending' && !t.needs_tools)).toBe(true);
    await service.updateTask('system:check-skills', { enabled: false });
    // A second process seeding again neither duplicates nor re-enables.
    const again = new TasksService({ ...service.deps });
    const after = await again.listTasks();
    expect(after).toHaveLength(3);
    expect(after.find((t) => t.id === 'system:check-skills')!.enabled).toBe(false);
    await expect(rpc.call('subconscious.tasks_remove', { task_id: 'system:health-nope' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(rpc.call('subconscious.tasks_remove', { task_id: 'system:system-health' })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('cannot be removed, only disabled'),
    });
    await expect(rpc.call('subconscious.tasks_update', { task_id: 'system:system-health', title: 'x' })).rejects.toMatchObject({ code: 'forbidden' });
    expect(await service.listTasks()).toHaveLength(3);
  });

  it('imports HEARTBEAT.md with 1,000 lines, headers, blank lines and duplicates; re-import is idempotent', async () => {
    const lines: string[] = ['# Heartbeat', '', 'Standing instructions for the assistant:', ''];
    for (let i = 0; i < 1000; i++) {
      if (i % 100 === 0) lines.push(`## Section ${i / 100}`, '');
      if (i % 10 === 9)
        lines.push(`-   CHECK   item ${i - 1}  `); // a duplicate of the previous line (case and spacing differ)
      else lines.push(`- Check item ${i}`);
      if (i % 7 === 0) lines.push('');
    }
    lines.push('* not a task (wrong bullet)', '-no space is not a task either', '- ', '  - Nested item counts');
    writeFileSync(heartbeatFile(), lines.join('\n'));
    const imported = await heartbeatTasks();
    // 900 unique "Check item N" lines + the nested one.
    expect(imported).toHaveLength(901);
    expect(imported.every((t) => t.source === 'system' && t.enabled)).toBe(true);
    expect(new Set(imported.map((t) => t.title.toLowerCase())).size).toBe(901);
    expect(imported.find((t) => t.id === heartbeatTaskId('Check item 8'))!.title).toBe('Check item 8');

    // Same content, new mtime: nothing changes. A fresh process re-imports idempotently.
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 5000));
    expect((await service.syncHeartbeat()).sync).toBeNull(); // hash unchanged: not even re-imported
    const fresh = new TasksService({ ...service.deps });
    expect(await fresh.listTasks()).toHaveLength(904);
  });

  it('a vanished line disables its task, a returning one re-enables it; a user-disabled task stays disabled', async () => {
    writeFileSync(heartbeatFile(), '# tasks\n- Check the backups\n- Check the certificates\n- Send the weekly digest\n');
    const first = await heartbeatTasks();
    expect(first).toHaveLength(3);
    // A line's words grant nothing: only `- [write] …` does (issue 9).
    expect(first.find((t) => t.title === 'Send the weekly digest')).toMatchObject({ needs_tools: false, write_choice: 'none', write_suggested: true });
    writeFileSync(heartbeatFile(), '# tasks\n- Check the backups\n- Check the certificates\n- [write] Send the weekly digest\n');
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 5_000));
    expect((await service.syncHeartbeat()).sync).toMatchObject({ added: 0, rights: 1 });
    // The marker asks; it grants nothing until a person confirms (a file is untrusted text).
    const asking = (await heartbeatTasks()).find((t) => t.title === 'Send the weekly digest')!;
    expect(asking).toMatchObject({ needs_tools: true, write_choice: 'heartbeat_md' });
    expect(writesGranted(asking)).toBe(false);
    await service.updateTask(heartbeatTaskId('Check the certificates'), { enabled: false });
    await expect(service.updateTask(heartbeatTaskId('Check the backups'), { title: 'other' })).rejects.toMatchObject({ code: 'forbidden' });

    writeFileSync(heartbeatFile(), '# tasks\n- Check the certificates\n- [write] Send the weekly digest\n- Check the logs\n');
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 10_000));
    expect((await service.syncHeartbeat()).sync).toMatchObject({ added: 1, disabled: 1 });
    const second = await heartbeatTasks();
    const byTitle = (t: string) => second.find((x) => x.title === t)!;
    expect(byTitle('Check the backups').enabled).toBe(false);
    expect(byTitle('Check the certificates').enabled).toBe(false); // the user's choice stands
    expect(byTitle('Check the logs').enabled).toBe(true);

    writeFileSync(heartbeatFile(), '- Check the backups\n');
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 20_000));
    await service.syncHeartbeat();
    const third = await heartbeatTasks();
    expect(third.filter((t) => t.enabled).map((t) => t.title)).toEqual(['Check the backups']);
    expect(events.some((e) => e.type === 'tasks.changed' && e.data.reason === 'heartbeat_md')).toBe(true);

    // The user's switched-off task comes back off when its line returns; the others come back on.
    writeFileSync(heartbeatFile(), '- Check the backups\n- Check the certificates\n- Check the logs\n');
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 30_000));
    expect((await service.syncHeartbeat()).sync).toMatchObject({ added: 0, reenabled: 1 });
    const fourth = await heartbeatTasks();
    expect(fourth.find((t) => t.title === 'Check the certificates')!.enabled).toBe(false);
    expect(fourth.find((t) => t.title === 'Check the logs')!.enabled).toBe(true);
    // Switched on by the user, it stays on through the next disappearance and return.
    await service.updateTask(heartbeatTaskId('Check the certificates'), { enabled: true });
    writeFileSync(heartbeatFile(), '- Check the backups\n');
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 40_000));
    await service.syncHeartbeat();
    writeFileSync(heartbeatFile(), '- Check the certificates\n- Check the backups\n');
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 50_000));
    await service.syncHeartbeat();
    expect((await heartbeatTasks()).find((t) => t.title === 'Check the certificates')!.enabled).toBe(true);
  });

  it("lists HEARTBEAT.md tasks in the file's order, after the defaults and before user tasks, and follows a reorder", async () => {
    const user = await service.addTask({ title: 'Check the staging server' });
    const titles = ['Water the plants', 'Check the backups', 'Review the invoices', 'Archive old tickets', 'Call the bank'];
    writeFileSync(heartbeatFile(), titles.map((t) => `- ${t}`).join('\n'));
    const listed = async () => (await service.listTasks()).map((t) => t.title);
    const defaults = DEFAULT_SYSTEM_TASKS.map((t) => t.title);
    expect(await listed()).toEqual([...defaults, ...titles, user.title]);
    const reordered = [...titles].reverse();
    writeFileSync(heartbeatFile(), reordered.map((t) => `- ${t}`).join('\n'));
    utimesSync(heartbeatFile(), new Date(), new Date(Date.now() + 10_000));
    expect(await listed()).toEqual([...defaults, ...reordered, user.title]);
  });

  it('an edited HEARTBEAT.md shows in tasks_list before any tick; an unreadable one changes nothing', async () => {
    writeFileSync(heartbeatFile(), '- Check the backups\n');
    expect((await heartbeatTasks()).map((t) => t.title)).toEqual(['Check the backups']);
    writeFileSync(heartbeatFile(), '- Check the backups\n- Check the certificates\n');
    const listed = (await rpc.call('subconscious.tasks_list')) as Task[];
    expect(listed.filter((t) => t.origin === 'heartbeat_md').map((t) => t.title)).toEqual(['Check the backups', 'Check the certificates']);

    // A file that exists but cannot be read (here a symlink loop) is not a file whose lines vanished.
    rmSync(heartbeatFile());
    symlinkSync('HEARTBEAT.md', heartbeatFile());
    const sync = await service.syncHeartbeat();
    expect(sync.sync).toBeNull();
    expect((await heartbeatTasks()).every((t) => t.enabled)).toBe(true);
    // Removing it for real does disable them.
    rmSync(heartbeatFile());
    expect((await service.syncHeartbeat()).sync).toMatchObject({ disabled: 2 });
    expect((await heartbeatTasks()).some((t) => t.enabled)).toBe(false);
  });

  it('remove is a soft delete: hidden, never due, kept; restore brings the same task back; typed refusals', async () => {
    const task = (await rpc.call('subconscious.tasks_add', { title: 'Check the build status', recurrence: 'cron:0 9 * * *', needs_tools: true })) as Task;
    await rpc.call('subconscious.tasks_update', { task_id: task.id, enabled: false });
    await rpc.call('subconscious.tasks_update', { task_id: task.id, enabled: true });
    clock.set(clock.now() + 2 * 86_400_000);
    expect((await service.tasks.due(clock.now())).map((t) => t.id)).toContain(task.id);
    await rpc.call('subconscious.tasks_remove', { task_id: task.id });
    // Hidden and not evaluated, but kept in the table.
    expect((await service.listTasks()).some((t) => t.id === task.id)).toBe(false);
    expect((await service.tasks.due(clock.now())).map((t) => t.id)).not.toContain(task.id);
    expect(await service.tasks.get(task.id)).toBeUndefined();
    const kept = await store.db.selectFrom('subconscious_tasks').select(['id', 'removed_at']).where('id', '=', task.id).executeTakeFirst();
    expect(kept).toMatchObject({ id: task.id, removed_at: clock.now() });
    // Removed twice, or changed while removed: as gone.
    await expect(rpc.call('subconscious.tasks_remove', { task_id: task.id })).rejects.toMatchObject({ code: 'not_found' });
    await expect(rpc.call('subconscious.tasks_update', { task_id: task.id, enabled: false })).rejects.toMatchObject({ code: 'not_found' });

    const back = (await rpc.call('subconscious.tasks_restore', { task_id: task.id })) as Task;
    expect(back).toMatchObject({ id: task.id, title: task.title, recurrence: task.recurrence, needs_tools: true, write_choice: 'person', enabled: true });
    expect((await service.listTasks()).some((t) => t.id === task.id)).toBe(true);
    expect((await service.tasks.due(clock.now())).map((t) => t.id)).toContain(task.id);
    expect(events.filter((e) => e.type === 'tasks.changed').map((e) => e.data.action)).toEqual(['added', 'updated', 'updated', 'removed', 'restored']);

    // Typed refusals: an unknown id, a task that is not removed.
    await expect(rpc.call('subconscious.tasks_restore', { task_id: 'no-such-task' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(rpc.call('subconscious.tasks_restore', { task_id: task.id })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('is not removed'),
    });
    await expect(rpc.call('subconscious.tasks_restore', { task_id: 'system:system-health' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(rpc.call('subconscious.tasks_restore', {})).rejects.toMatchObject({ message: expect.stringContaining('id') });

    // While removed its wording is free; adding it again meanwhile makes the restore a duplicate.
    await rpc.call('subconscious.tasks_remove', { task_id: task.id });
    const again = (await rpc.call('subconscious.tasks_add', { title: 'check the BUILD status', recurrence: 'cron:0 9 * * *', needs_tools: true })) as Task;
    await expect(rpc.call('subconscious.tasks_restore', { task_id: task.id })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('A task with this wording already exists'),
    });
    expect((await service.listTasks()).filter((t) => t.source === 'user').map((t) => t.id)).toEqual([again.id]);
  });

  it('a cron expression that never fires is refused on add and update (it would otherwise run at once)', async () => {
    await expect(rpc.call('subconscious.tasks_add', { title: 'Check the leap day', recurrence: 'cron:0 0 30 2 *' })).rejects.toMatchObject({
      code: 'invalid_params',
      message: expect.stringContaining('recurrence: the cron expression "0 0 30 2 *" never fires'),
    });
    const task = (await rpc.call('subconscious.tasks_add', { title: 'Check the leap day', recurrence: 'once' })) as Task;
    await expect(rpc.call('subconscious.tasks_update', { task_id: task.id, recurrence: 'cron:0 0 31 4 *' })).rejects.toMatchObject({ code: 'invalid_params' });
    expect((await service.tasks.get(task.id))!.recurrence).toBe('once');
    expect((await service.listTasks()).filter((t) => t.source === 'user')).toHaveLength(1);
  });

  it('user tasks: read-only unless a person says so, update, remove; recurrence validated with the reason', async () => {
    // The title only suggests (issue 9): write rights are the person's choice.
    const send = (await rpc.call('subconscious.tasks_add', { title: 'Send daily summary to Slack' })) as Task;
    expect(send).toMatchObject({ source: 'user', recurrence: 'pending', needs_tools: false, write_choice: 'none', write_suggested: true, enabled: true });
    const reply = (await rpc.call('subconscious.tasks_add', { title: 'Check which emails I need to reply to' })) as Task;
    expect(reply).toMatchObject({ needs_tools: false, write_choice: 'none' });
    const allowed = (await rpc.call('subconscious.tasks_update', { task_id: send.id, needs_tools: true })) as Task;
    expect(allowed).toMatchObject({ needs_tools: true, write_choice: 'person' });
    await rpc.call('subconscious.tasks_remove', { task_id: reply.id });
    const check = (await rpc.call('subconscious.tasks_add', { title: '  Check   urgent emails ', recurrence: 'cron:0 9 * * 1-5' })) as Task;
    expect(check.title).toBe('Check urgent emails');
    expect(check.needs_tools).toBe(false);
    // Next weekday 09:00 in Paris after 2026-01-01 10:00 Paris (a Thursday) is Friday 08:00 UTC.
    expect(new Date(check.next_run_at!).toISOString()).toBe('2026-01-02T08:00:00.000Z');
    const forced = (await rpc.call('subconscious.tasks_add', { title: 'Check urgent emails', needs_tools: true })) as Task;
    expect(forced).toMatchObject({ needs_tools: true, write_choice: 'person' });
    // The same task again (wording up to case and spacing, schedule, intent) is refused, naming the
    // first by its title (the page shows the message; an id means nothing there).
    const dup = rpc.call('subconscious.tasks_add', { title: 'check  URGENT emails', recurrence: 'cron:0 9 * * 1-5' });
    await expect(dup).rejects.toMatchObject({ code: 'conflict', message: 'A task with this wording already exists: "Check urgent emails".' });
    await expect(dup).rejects.toSatisfy((e: Error) => !e.message.includes(check.id));
    // … and so is an edit that would make one task the same as another.
    await expect(rpc.call('subconscious.tasks_update', { task_id: forced.id, needs_tools: false, recurrence: 'cron:0 9 * * 1-5' })).rejects.toMatchObject({
      code: 'conflict',
    });
    expect((await service.tasks.get(forced.id))!).toMatchObject({ needs_tools: true, recurrence: 'pending' });
    // A title of control characters only is refused by the contract, saying why.
    await expect(rpc.call('subconscious.tasks_add', { title: '\u0001\u0002\u0007' })).rejects.toMatchObject({
      message: 'Invalid params for subconscious.tasks_add: title: must contain visible text: control or invisible characters alone do not make a task title',
    });
    await expect(rpc.call('subconscious.tasks_update', { task_id: send.id, title: '\u200b\u2060\u0085' })).rejects.toMatchObject({
      message: expect.stringContaining('title: must contain visible text'),
    });
    await expect(service.addTask({ title: '\u0003\u0004' })).rejects.toMatchObject({
      code: 'invalid_params',
      message: expect.stringContaining('visible text'),
    });

    await expect(rpc.call('subconscious.tasks_add', { title: 'x', recurrence: 'cron:61 * * * *' })).rejects.toMatchObject({
      code: 'invalid_params',
      message: 'recurrence: "61 * * * *" is not a valid cron expression (minute must be 0-59)',
      hint: expect.stringContaining('`cron:0 9 * * 1-5`'),
    });
    await expect(rpc.call('subconscious.tasks_add', { title: 'x', recurrence: 'weekly' })).rejects.toMatchObject({
      message: expect.stringContaining('recurrence'),
    });
    await expect(rpc.call('subconscious.tasks_add', { title: '' })).rejects.toMatchObject({ message: expect.stringContaining('title') });
    await expect(rpc.call('subconscious.tasks_add', { titel: 'typo' })).rejects.toMatchObject({ message: expect.stringMatching(/title|titel/) });
    await expect(rpc.call('subconscious.tasks_update', { task_id: send.id })).rejects.toMatchObject({ message: expect.stringContaining('at least one') });
    await expect(rpc.call('subconscious.tasks_update', { task_id: send.id, enabled: 'yes' })).rejects.toMatchObject({
      message: expect.stringContaining('enabled'),
    });

    const updated = (await rpc.call('subconscious.tasks_update', {
      task_id: send.id,
      title: 'Post daily summary to Slack',
      recurrence: 'once',
      needs_tools: false,
      enabled: false,
    })) as Task;
    expect(updated).toMatchObject({ title: 'Post daily summary to Slack', recurrence: 'once', needs_tools: false, enabled: false, completed: false });
    const removed = (await rpc.call('subconscious.tasks_remove', { task_id: send.id })) as Task;
    expect(removed.id).toBe(send.id);
    const gone = rpc.call('subconscious.tasks_remove', { task_id: send.id });
    await expect(gone).rejects.toMatchObject({ code: 'not_found' });
    await expect(gone).rejects.toSatisfy((e: Error) => !e.message.includes(send.id));
    expect((await service.listTasks()).map((t) => t.id)).not.toContain(send.id);
    expect(events.filter((e) => e.type === 'tasks.changed').map((e) => e.data.action)).toEqual([
      'added',
      'added',
      'updated',
      'removed',
      'added',
      'added',
      'updated',
      'removed',
    ]);
  });

  it('escalations list: every pending one however old, by priority, then the newest resolved ones', async () => {
    const make = async (id: string, priority: 'critical' | 'important' | 'normal') => {
      await clock.advance(1000);
      return service.escalations.create({
        id,
        task_id: 'system:check-skills',
        log_id: `log-${id}`,
        title: 't',
        description: id,
        analysis: null,
        priority,
        skill_related: false,
      });
    };
    await make('old-pending', 'normal');
    await make('urgent', 'critical');
    for (const id of ['r1', 'r2', 'r3']) {
      await make(id, 'normal');
      await service.dismiss(id); // its log row does not exist: only the status matters here
    }
    const resolvedIds = (await service.escalations.list('dismissed')).map((e) => e.id);
    expect(resolvedIds).toEqual(['r3', 'r2', 'r1']);
    expect((await service.escalations.list(undefined, 2)).map((e) => e.id)).toEqual(['urgent', 'old-pending', 'r3', 'r2']);
  });

  it('log rows: one per task per tick, reused by a resumed observe; escalations resolve exactly once', async () => {
    const tasks = await service.listTasks();
    const first = await service.logs.openRows('tick-1', clock.now(), tasks, uuid);
    const again = await service.logs.openRows('tick-1', clock.now(), tasks, uuid);
    expect([...again.values()].map((r) => r.id)).toEqual([...first.values()].map((r) => r.id));
    expect(await service.listLog()).toHaveLength(3);
    expect((await service.listLog()).every((r) => r.decision === 'in_progress' && r.result === 'Evaluating...')).toBe(true);

    const row = first.get('system:check-skills')!;
    const e = await service.escalations.create({
      id: 'esc-1',
      task_id: row.task_id,
      log_id: row.id,
      title: 't',
      description: 'Fix the Notion connection',
      analysis: null,
      priority: 'important',
      skill_related: true,
    });
    const dup = await service.escalations.create({
      id: 'esc-2',
      task_id: row.task_id,
      log_id: row.id,
      title: 't',
      description: 'd',
      analysis: null,
      priority: 'normal',
      skill_related: false,
    });
    expect(dup.id).toBe(e.id);
    expect(await service.listEscalations()).toHaveLength(1);
    await rpc.call('subconscious.escalations_dismiss', { id: 'esc-1' });
    await expect(rpc.call('subconscious.escalations_dismiss', { id: 'esc-1' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(rpc.call('subconscious.escalations_dismiss', { id: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(rpc.call('subconscious.escalations_list', { status: 'waiting' })).rejects.toMatchObject({ message: expect.stringContaining('status') });
    expect((await service.listLog()).find((r) => r.id === row.id)).toMatchObject({ decision: 'dismissed', result: 'Skipped' });

    // Rows another tick left open are cancelled by the next one; finished rows are untouched.
    expect(await service.logs.cancelStale('tick-2')).toHaveLength(2);
    expect((await service.listLog()).map((r) => r.decision).sort()).toEqual(['cancelled', 'cancelled', 'dismissed']);
  });
});
