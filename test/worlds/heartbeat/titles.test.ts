/**
 * The page reads which work a log entry is about by its task's title (issue 12 §10: "Woke:
 * interrupted task 'Prepare the Q4 checklist' — resumed"): `task_title` on the log and snapshot
 * reads and on the `heartbeat.log_added` event, looked up in the bots host; null without a task.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HeartbeatLogEntry, HeartbeatSnapshot } from '../../../src/protocol/heartbeat.js';
import { withTaskTitles } from '../../../src/worlds/heartbeat/titles.js';
import { testDialects } from '../../support/stores.js';
import { createHeartbeatHarness, interruptedTask, until, type HeartbeatHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

describe.each(await testDialects())('log entries name their task by title on %s', (dialect) => {
  let h: HeartbeatHarness;
  beforeEach(async () => {
    h = await createHeartbeatHarness({ dialect, mcp: mcpHolder.value! });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('a resume’s entries carry the task title (reads and event); a skip without a task has none', async () => {
    const bot = await h.createBot('scout');
    await h.call('bots.heartbeat_now', { bot_id: bot.id });
    await h.tick();
    const t = await interruptedTask(h, bot.id, { title: 'Prepare the Q4 checklist' });
    await h.due(bot.id);
    h.verdict({ verdict: 'resume', taskId: t.id, reason: 'the checklist was cut off' });
    h.model.enqueue({ text: 'Finished the checklist.' });
    await h.tick();
    await until(async () => (await h.task(t.id)).status === 'done' && h.host.runtime.isIdle(bot.id));

    const log = await h.call<HeartbeatLogEntry[]>('bots.heartbeat_log', { bot_id: bot.id });
    const resumed = log.find((e) => e.outcome === 'resumed')!;
    expect(resumed).toMatchObject({ task_id: t.id, task_title: 'Prepare the Q4 checklist', rule: 'interrupted_task' });
    expect(resumed.dispatched?.task_id).toBe(t.id);
    const settledEntry = log.find((e) => e.outcome === 'settled')!;
    expect(settledEntry.task_title).toBe('Prepare the Q4 checklist');
    const skip = log.find((e) => e.outcome === 'skipped' && e.skip === 'nothing_unfinished')!;
    expect(skip).toMatchObject({ task_id: null, task_title: null });

    const snap = await h.call<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [bot.id] });
    expect(snap.log.find((e) => e.outcome === 'resumed')?.task_title).toBe('Prepare the Q4 checklist');

    const events = h.hbEvents.flatMap((e) => (e.type === 'heartbeat.log_added' ? [e.data.entry] : []));
    expect(events.find((e) => e.outcome === 'resumed')?.task_title).toBe('Prepare the Q4 checklist');
    expect(events.find((e) => e.outcome === 'skipped')?.task_title).toBeNull();
  });
});

describe('withTaskTitles', () => {
  it('one lookup per distinct task; a task deleted since reads as null, the rest of the entry kept', async () => {
    const base: HeartbeatLogEntry = {
      id: 'e1',
      bot_id: 'b',
      at: 1,
      last_at: 1,
      repeats: 1,
      mode: 'resume',
      tier: 2,
      outcome: 'settled',
      rule: null,
      skip: null,
      verdict: null,
      reason: 'the resume ended done',
      task_id: 'task-a',
      task_title: null,
      dispatched: null,
      escalated: false,
      model: null,
      ms: 10,
      error: null,
      input_tokens: 5,
      output_tokens: 6,
    };
    const asked: string[] = [];
    const host = {
      getTask: async (id: string) => {
        asked.push(id);
        return id === 'task-a' ? ({ id, title: 'Write the plan' } as Awaited<ReturnType<HeartbeatHarness['task']>>) : undefined;
      },
    };
    const out = await withTaskTitles(host, [
      base,
      { ...base, id: 'e2' },
      { ...base, id: 'e3', task_id: null, dispatched: { task_id: 'task-gone', message_id: 'm' } },
      { ...base, id: 'e4', task_id: null },
    ]);
    expect(out.map((e) => e.task_title)).toEqual(['Write the plan', 'Write the plan', null, null]);
    expect(asked.sort()).toEqual(['task-a', 'task-gone']);
    expect(out[0]).toEqual({ ...base, task_title: 'Write the plan' });
    expect(await withTaskTitles(host, [])).toEqual([]);
  });
});
