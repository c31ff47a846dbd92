/**
 * Issue 9 §5: 50 "Run now" presses in a row left 637 cancelled rows (each press superseded the
 * tick before it). Presses now coalesce into at most one waiting tick: 50 presses give at most
 * 2 ticks, and no more cancelled rows than the due tasks' worth.
 */
import { afterEach, expect, it } from 'vitest';
import { EventBus, flush, silentLogger, uuid } from '../../../src/core/index.js';
import { Registry } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createTasksHarness, isEvaluation, tasksInPrompt, type TasksHarness } from './harness.js';

let h: TasksHarness | undefined;
let registry: Registry | undefined;
afterEach(async () => {
  await registry?.stop();
  await h?.dispose();
  h = registry = undefined;
});

it('50 Run-now presses while a tick evaluates: 2 ticks, no row cancelled', async () => {
  // Every due task is evaluated on every tick here, so each tick has rows a supersession would cancel.
  h = await createTasksHarness({ agent: false, settings: { reevaluateUnchangedAfterMinutes: 0 } });
  const events = new EventBus(() => h!.clock.now());
  const finished: string[] = [];
  events.subscribe((e) => {
    if (e.type === 'tick.finished') finished.push(String(e.data.outcome));
  });
  registry = new Registry({
    db: h.store.db,
    llm: h.llm,
    clock: h.clock,
    ids: uuid,
    events,
    log: silentLogger,
    checkpointer: new StoreCheckpointer(h.store.db, h.clock),
  });
  registry.add(h.world);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  h.server.handle(async (req) => {
    if (isEvaluation(req) && h!.server.chatRequests.filter(isEvaluation).length === 1) await held;
    return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'noop', reason: 'quiet' })) } };
  });

  const first = registry.trigger('tasks').done;
  while (h.server.chatRequests.filter(isEvaluation).length === 0) await flush();
  const presses = Array.from({ length: 50 }, () => registry!.trigger('tasks').done);
  release();
  await Promise.all([first, ...presses]);
  for (let i = 0; i < 20; i++) await flush();

  expect(finished).toEqual(['committed', 'committed']);
  const rows = await h.world.service.listLog({ limit: 1000 });
  const due = (await h.world.service.listTasks()).filter((t) => t.enabled).length;
  expect(rows).toHaveLength(2 * due);
  expect(rows.filter((r) => r.decision === 'cancelled').length).toBeLessThanOrEqual(due);
  expect(rows.filter((r) => r.decision === 'cancelled')).toHaveLength(0);
  expect(h.server.chatRequests.filter(isEvaluation)).toHaveLength(2);
});
