/**
 * `simulate`'s scratch store starts from the user's tasks as their database has them — the
 * user's own choices included — and never writes that database.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { productModules } from '../../src/app/modules.js';
import { openScratchStore } from '../../src/app/scratch-store.js';
import { EventBus, FakeClock, uuid } from '../../src/core/index.js';
import { openStore, tablesView } from '../../src/store/index.js';
import { TasksService, heartbeatTaskId, type TasksTables } from '../../src/worlds/tasks/index.js';

let workspace: string;
beforeEach(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-scratch-'));
});
afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

it("copies the user's tasks with their file order and switched-off state, leaving their database as it was", async () => {
  writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '- Water the plants\n- Check the backups\n- Call the bank\n');
  const store = await openStore({ workspace, migrations: productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : [])) });
  const service = new TasksService({
    db: tablesView<TasksTables>(store.db),
    clock: new FakeClock(),
    ids: uuid,
    events: new EventBus(),
    workspace,
    timezone: 'UTC',
  });
  await service.updateTask(heartbeatTaskId('Check the backups'), { enabled: false });
  await service.addTask({ title: 'Check the staging server' });
  const before = await service.listTasks();
  await store.close();
  const dbFile = path.join(workspace, '.subconscious', 'subconscious.db');
  const bytes = readFileSync(dbFile);

  const scratch = await openScratchStore(workspace, loadConfig({ workspace, modules: productModules, env: {} }), productModules);
  try {
    const copied = new TasksService({
      db: tablesView<TasksTables>(scratch.store.db),
      clock: new FakeClock(),
      ids: uuid,
      events: new EventBus(),
      workspace,
      timezone: 'UTC',
    });
    const after = await copied.listTasks();
    expect(after.map((t) => [t.title, t.enabled])).toEqual(before.map((t) => [t.title, t.enabled]));
    const row = await tablesView<TasksTables>(scratch.store.db)
      .selectFrom('subconscious_tasks')
      .select(['user_disabled', 'origin_order'])
      .where('id', '=', heartbeatTaskId('Check the backups'))
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ user_disabled: 1, origin_order: 1 });
  } finally {
    await scratch.store.close();
  }
  expect(readFileSync(dbFile).equals(bytes)).toBe(true);
});
