/**
 * Issue 9 §2: the duplicate-task refusal is a unique key in the database, so it holds inside a
 * batch (1,000 identical adds, sent as the ten batches of 100 the dispatcher allows, all at once)
 * and between processes adding at the same moment (two connections to one database).
 */
import { describe, expect, it } from 'vitest';
import { EventBus, FakeClock, RpcDispatcher, uuid } from '../../../src/core/index.js';
import { implement, tasksContract } from '../../../src/protocol/index.js';
import { TasksService, tasksRpcHandlers } from '../../../src/worlds/tasks/index.js';
import { openTestStore, testDialects } from '../../support/stores.js';

const userTasks = async (service: TasksService) => (await service.listTasks()).filter((t) => t.source === 'user');

describe.each(await testDialects())('duplicate tasks on %s', (dialect) => {
  it('1,000 identical adds in batches create one task; the others are refused, each saying why', async () => {
    const store = await openTestStore(dialect);
    try {
      const service = new TasksService({
        db: store.db,
        clock: new FakeClock(),
        ids: uuid,
        events: new EventBus(),
        workspace: store.workspace,
        timezone: 'UTC',
      });
      await service.ensureReady();
      const dispatcher = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(service)));
      const batch = (n: number) =>
        Array.from({ length: 100 }, (_, i) => ({
          jsonrpc: '2.0',
          id: n * 100 + i,
          method: 'subconscious.tasks_add',
          // Case, spacing and compatibility forms do not make another task.
          params: { title: i % 3 === 0 ? 'Check urgent emails' : i % 3 === 1 ? '  check   URGENT emails ' : 'Check urgent ｅｍａｉｌｓ' },
        }));
      const answers = (await Promise.all(Array.from({ length: 10 }, (_, n) => dispatcher.handle(batch(n))))).flat() as Array<{
        result?: unknown;
        error?: { message: string; data?: { code?: string } };
      }>;
      expect(answers).toHaveLength(1000);
      expect(answers.filter((a) => a.result)).toHaveLength(1);
      const refused = answers.filter((a) => a.error);
      expect(refused).toHaveLength(999);
      expect(new Set(refused.map((a) => a.error!.data?.code))).toEqual(new Set(['conflict']));
      expect(refused[0]!.error!.message).toBe('A task with this wording already exists: "Check urgent emails".');
      expect(await userTasks(service)).toHaveLength(1);
      // Another schedule or another intent is another task.
      await service.addTask({ title: 'Check urgent emails', recurrence: 'once' });
      await service.addTask({ title: 'Check urgent emails', needs_tools: true });
      expect(await userTasks(service)).toHaveLength(3);
    } finally {
      await store.dispose();
    }
  });

  it('two processes adding the same task at the same moment: one task', async () => {
    const store = await openTestStore(dialect);
    const second = await store.reopen();
    try {
      const make = (db: typeof store.db) =>
        new TasksService({ db, clock: new FakeClock(), ids: uuid, events: new EventBus(), workspace: store.workspace, timezone: 'UTC' });
      const a = make(store.db);
      const b = make(second.db);
      await a.ensureReady();
      await b.ensureReady();
      const results = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).addTask({ title: 'Summarize the release notes', recurrence: 'cron:0 9 * * *' })),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'conflict' });
      expect(await userTasks(a)).toHaveLength(1);
      // A completed `once` task may be added again (it is not a standing duplicate).
      const once = await a.addTask({ title: 'Watch the build', recurrence: 'once' });
      await a.tasks.advance(store.db, once.id, Date.now());
      await expect(b.addTask({ title: 'Watch the build', recurrence: 'once' })).resolves.toMatchObject({ title: 'Watch the build' });
    } finally {
      await second.close();
      await store.dispose();
    }
  });
});
