/**
 * The tasks world's report quotes the memory store's diff since its last evaluation. Its start
 * point is a real memory checkpoint (label `tasks`), so the memory world pruning its own
 * checkpoints (which compacts tombstones below the oldest checkpoint) cannot erase deletions the
 * tasks world has not reported yet: a removed document stays `removed`, a delete + re-add stays
 * `modified`. Real parts: the store, the memory store, the scripted model server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, uuid } from '../../../src/core/index.js';
import { MemoryStore, memoryMigrations, type MemoryTables } from '../../../src/memory/index.js';
import { applyMigrations, tablesView } from '../../../src/store/index.js';
import { MEMORY_CHECKPOINT } from '../../../src/worlds/tasks/world.js';
import type { RecordedRequest, ScriptedReply } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';
import { createTasksHarness, isEvaluation, tasksInPrompt, userOf, type TasksHarness } from './harness.js';

const MINUTE = 60_000;
let h: TasksHarness | undefined;
let store: TestStore | undefined;
afterEach(async () => {
  await h?.dispose();
  await store?.dispose();
  h = store = undefined;
});

const allNoop = (req: RecordedRequest): ScriptedReply => ({
  json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'noop', reason: 'Nothing new.' })) },
});

describe('tasks world: memory changes survive the memory world pruning its checkpoints', () => {
  it('a deletion and a delete + re-add made after the last evaluation are reported after memory compacts', async () => {
    store = await openTestStore('sqlite');
    await applyMigrations(store.db, store.dialect, memoryMigrations);
    const clock = new FakeClock();
    const memory = new MemoryStore({ db: tablesView<MemoryTables>(store.db), dialect: store.dialect, clock, ids: uuid });
    await memory.storeDocument({ namespace: 'mail', external_id: 'gone', title: 'Invoice 2291 overdue', body: 'Please pay.' });
    await memory.storeDocument({ namespace: 'mail', external_id: 'again', title: 'Meeting on Thursday', body: 'Room 4.' });
    h = await createTasksHarness({ store, clock, memoryStore: memory, agent: false, settings: { reevaluateUnchangedAfterMinutes: 7 * 24 * 60 } });
    await h.world.service.addTask({ title: 'Check the inbox' });
    h.server.handle(allNoop);
    expect((await h.instance.tick()).kind).toBe('committed');
    const start = await memory.latestCheckpoint(MEMORY_CHECKPOINT);
    expect(start?.seq).toBe(await memory.head());

    await memory.deleteDocument('mail', 'gone');
    await memory.deleteDocument('mail', 'again');
    await memory.storeDocument({ namespace: 'mail', external_id: 'again', title: 'Meeting on Friday', body: 'Room 5.' });
    // What the memory world's commit does: a checkpoint at the head, then keep only its newest one.
    await memory.createCheckpoint('memory');
    await memory.pruneCheckpoints('memory', 1);

    await clock.advance(5 * MINUTE);
    expect((await h.instance.tick()).kind).toBe('committed');
    const report = userOf(h.server.chatRequests.filter(isEvaluation).at(-1)!);
    expect(report).toContain('0 added, 1 modified, 1 removed');
    expect(report).toContain('[removed] Invoice 2291 overdue');
    expect(report).toContain('[modified] Meeting on Friday');
    // The tasks world keeps one checkpoint, now at the head it evaluated.
    const after = await memory.latestCheckpoint(MEMORY_CHECKPOINT);
    expect(after?.seq).toBe(await memory.head());
    expect(await memory.pruneCheckpoints(MEMORY_CHECKPOINT, 1)).toBe(0);
  }, 60_000);
});
