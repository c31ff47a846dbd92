/**
 * The tasks world's probe (`World.probe`, issue 22): a tick it calls quiet ends before the tick
 * lease with nothing written, so it must never call a tick quiet that has work — a task due, a
 * changed HEARTBEAT.md, a log row to cancel or fail, an answered approval that frees its task.
 * Each case: the probe says not quiet (the full tick runs), on both dialects, on a fake clock.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { uuid } from '../../../src/core/index.js';
import type { TickContext } from '../../../src/engine/index.js';
import { DEFAULT_SYSTEM_TASKS } from '../../../src/worlds/tasks/task-store.js';
import { testDialects } from '../../support/stores.js';
import { createTasksHarness, type TasksHarness } from './harness.js';

const dialects = await testDialects();

describe.each(dialects)('tasks world probe on %s', (dialect) => {
  let h: TasksHarness;
  afterEach(async () => {
    await h.dispose();
  });

  /** The probe as the engine calls it at the start of a tick (it reads only `startedAt`). */
  const probe = () => h.world.probe!({ startedAt: h.clock.now(), signal: new AbortController().signal } as unknown as TickContext);
  const generation = async () =>
    Number((await h.store.db.selectFrom('tick_leases').select('generation').where('world', '=', 'tasks').executeTakeFirst())?.generation ?? 0);

  /** A world whose default tasks are switched off (they are due every tick) and whose first tick ran. */
  async function settled(): Promise<void> {
    h = await createTasksHarness({ dialect, agent: false });
    expect(await probe()).toBeNull(); // not ready yet: defaults and HEARTBEAT.md not imported in this process
    await h.world.service.ensureReady();
    for (const t of DEFAULT_SYSTEM_TASKS) await h.world.service.updateTask(t.id, { enabled: false });
    const first = await h.instance.tick();
    expect(first).toMatchObject({ kind: 'quiet', message: 'no task due' });
  }

  it('a quiet tick ends before the lease, writes nothing, and calls no model', async () => {
    await settled();
    const before = await generation();
    const rows = async () =>
      (await h.store.db.selectFrom('instance_state').selectAll().where('key', 'like', 'tasks:%').execute()).map((r) => JSON.stringify(r));
    const state = await rows();
    for (let i = 0; i < 5; i++) {
      h.clock.set(h.clock.now() + 60_000); // within the counters' 10-minute flush

      expect(await h.instance.tick()).toMatchObject({ kind: 'quiet', message: 'no task due' });
    }
    expect(await generation()).toBe(before); // no lease taken
    expect(await rows()).toEqual(state); // nothing written: the counters wait in memory
    expect(h.server.chatRequests).toHaveLength(0);
  });

  it('a task added, or a cron task whose time came, is not quiet', async () => {
    await settled();
    h.clock.set(Date.UTC(2026, 0, 5, 8, 0));
    const cron = await h.world.service.addTask({ title: 'Look at the deploy queue', recurrence: 'cron:0 9 * * *' });
    expect(cron.id).toBeTruthy();
    expect(await probe()).toBe('no task due');
    h.clock.set(Date.UTC(2026, 0, 5, 9, 0, 1));
    expect(await probe()).toBeNull();
    await h.world.service.updateTask(cron.id, { enabled: false });
    expect(await probe()).toBe('no task due');
    await h.world.service.addTask({ title: 'Check the deploy queue once', recurrence: 'once' });
    expect(await probe()).toBeNull();
  });

  it('a changed HEARTBEAT.md is not quiet until a tick imported it', async () => {
    await settled();
    writeFileSync(path.join(h.store.workspace, 'HEARTBEAT.md'), '# Notes\n\nNothing to do here yet.\n');
    expect(await probe()).toBeNull();
    expect((await h.instance.tick()).kind).toBe('quiet'); // the full tick reads it (no task lines)
    expect(await probe()).toBe('no task due');
  });

  it('a row another tick left in progress, or an execution still marked running, is not quiet', async () => {
    await settled();
    const task = await h.world.service.addTask({ title: 'Check the deploy queue', recurrence: 'cron:0 9 * * *' });
    const stored = (await h.world.service.tasks.get(task.id))!;
    expect(await probe()).toBe('no task due');
    const rows = await h.world.service.logs.openRows('tick-gone', h.clock.now(), [stored], uuid);
    const row = rows.get(task.id)!;
    expect(await probe()).toBeNull();
    const gen = await generation();
    expect((await h.instance.tick()).kind).toBe('quiet'); // the full tick cancels it
    expect(await generation()).toBe(gen + 1);
    expect((await h.world.service.logs.get(row.id))?.decision).toBe('cancelled');
    expect(await probe()).toBe('no task due');
    await h.world.service.logs.update(row.id, { exec_state: 'running', exec_started_at: h.clock.now(), exec_owner: 'elsewhere:1' });
    expect(await probe()).toBeNull();
    await h.world.service.logs.update(row.id, { exec_state: 'executed' });
    expect(await probe()).toBeNull();
    await h.world.service.logs.update(row.id, { exec_state: 'done' });
    expect(await probe()).toBe('no task due');
  });

  it('a due task held by a pending approval is quiet; once the approval is answered it is not', async () => {
    await settled();
    const task = await h.world.service.addTask({ title: 'Check the deploy queue', recurrence: 'pending' });
    const stored = (await h.world.service.tasks.get(task.id))!;
    expect(await probe()).toBeNull();
    const row = (await h.world.service.logs.openRows('tick-old', h.clock.now(), [stored], uuid)).get(task.id)!;
    await h.world.service.logs.update(row.id, { decision: 'escalate', exec_state: 'done' });
    const card = await h.world.service.escalations.create({
      id: uuid(),
      task_id: task.id,
      log_id: row.id,
      title: task.title,
      description: 'Restart the deploy',
      analysis: null,
      priority: 'normal',
      skill_related: false,
    });
    expect(await probe()).toBe('no task due'); // observe would not load it either
    expect((await h.instance.tick()).message).toBe('no task due');
    await h.world.service.dismiss(card.id);
    expect(await probe()).toBeNull();
  });

  it('inference off is quiet as observe says it, but not over rows to tidy', async () => {
    await settled();
    await h.world.service.addTask({ title: 'Check the deploy queue once', recurrence: 'once' });
    h.settings.inferenceEnabled = false;
    expect(await probe()).toBe('inference disabled: no task evaluated');
    const stored = (await h.world.service.tasks.list()).find((t) => t.recurrence === 'once')!;
    await h.world.service.logs.openRows('tick-gone', h.clock.now(), [stored], uuid);
    expect(await probe()).toBeNull();
  });
});
