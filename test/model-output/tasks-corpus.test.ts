/**
 * Issue 19 §6, tasks world: every corpus reply, served by the scripted model server as the
 * evaluation's answer, through the real tasks world and engine tick. Parsed replies commit the
 * decision; every other reply fails the tick closed: no execution, no escalation, the task's row
 * (schedule, last run) untouched, its log row never a decision.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { corpusFor, scriptFor } from '../../devtools/model-replies.js';
import { createTasksHarness, isEvaluation, tasksInPrompt, type TasksHarness } from '../worlds/tasks/harness.js';
import { expectGuardedWire } from './wire.js';

let h: TasksHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('model-output corpus: tasks evaluation', () => {
  it.each(corpusFor('tasks').map((e) => [e.shape, e] as const))('%s', async (_shape, entry) => {
    h = await createTasksHarness({ agent: false });
    const task = await h.world.service.addTask({ title: 'Check the inbox for anything urgent' });
    h.server.handle((req) => {
      if (!isEvaluation(req)) return { text: 'EXECUTED' }; // any other call would be an action
      expect(tasksInPrompt(req).map((t) => t.id)).toContain(task.id);
      return scriptFor(entry.reply, task.id);
    });
    const before = await h.store.db.selectFrom('subconscious_tasks').selectAll().where('id', '=', task.id).executeTakeFirstOrThrow();

    const outcome = await h.instance.tick();

    const calls = h.server.chatRequests;
    expect(calls.every(isEvaluation), 'only evaluation calls: nothing executed').toBe(true);
    expectGuardedWire(calls);
    // The tasks world has no output budget of its own: the endpoint's (models.local.max_tokens, default 2048).
    expect(calls.every((r) => r.body!.max_tokens === 2048)).toBe(true);
    if ('finishReason' in entry.reply) expect(outcome.message).toContain('models.local.max_tokens');
    const escalations = await h.store.db.selectFrom('subconscious_escalations').selectAll().execute();
    expect(escalations).toEqual([]);
    const rows = await h.store.db.selectFrom('subconscious_log').select(['decision', 'reason']).where('task_id', '=', task.id).execute();
    const after = await h.store.db.selectFrom('subconscious_tasks').selectAll().where('id', '=', task.id).executeTakeFirstOrThrow();
    if (entry.expect === 'parsed') {
      expect(outcome.kind).toBe('committed');
      expect(rows.map((r) => r.decision)).toEqual([entry.value]);
      expect(rows[0]!.reason).toBe('nothing new since the last check');
      expect(calls).toHaveLength(1);
    } else {
      expect(outcome.kind).toBe('failed');
      expect(
        rows.every((r) => !['noop', 'act', 'escalate'].includes(r.decision)),
        JSON.stringify(rows),
      ).toBe(true);
      expect(after).toEqual(before);
      // One repair call at most (none for a cut reply: it needs a bigger budget, not a retry).
      expect(calls.length).toBeLessThanOrEqual(2);
    }
  });
});
