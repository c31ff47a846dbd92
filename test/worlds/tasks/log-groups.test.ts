/** The grouped log (log-groups.ts): quiet ticks in a row are one group line; anything else breaks the run. */
import { describe, expect, it } from 'vitest';
import type { LogDecision, LogEntry } from '../../../src/protocol/tasks.js';
import { groupLog } from '../../../src/worlds/tasks/log-groups.js';

function row(tick: number, task: string, decision: LogDecision, result = decision): LogEntry {
  return {
    id: `${tick}-${task}`,
    task_id: task,
    task_title: `Task ${task}`,
    tick_id: `t${tick}`,
    tick_at: tick,
    decision,
    model_decision: decision === 'failed' ? null : 'noop',
    reason: 'r',
    result,
    duration_ms: 0,
    exec_state: 'done',
    exec_mode: null,
    run_id: null,
    created_at: tick,
    updated_at: tick,
  } as unknown as LogEntry;
}

describe('groupLog', () => {
  it('merges a run of quiet ticks into one group with their sums; an acting tick breaks the run', () => {
    // Newest first: ticks 500..100; 300 acted.
    const ticks = [500, 400, 300, 200, 100].map((t) => ({ tick_id: `t${t}`, tick_at: t }));
    const rows = [
      row(500, 'a', 'noop'),
      row(500, 'b', 'noop'),
      row(400, 'a', 'noop'),
      row(400, 'b', 'cancelled'),
      row(300, 'a', 'act'),
      row(300, 'b', 'noop'),
      row(200, 'a', 'noop'),
      row(100, 'a', 'noop'),
    ];
    const totals = new Map([
      ['t500', { tokens: 100, duration_ms: 10 }],
      ['t400', { tokens: 50, duration_ms: 5 }],
      ['t200', { tokens: 7, duration_ms: null }],
    ]);
    const groups = groupLog(ticks, rows, totals);
    expect(groups.map((g) => [g.tick_at, g.until, g.ticks, g.quiet])).toEqual([
      [400, 500, 2, true],
      [300, null, 1, false],
      [100, 200, 2, true],
    ]);
    expect(groups[0]).toMatchObject({ tasks: 4, counts: { noop: 3, cancelled: 1 }, tokens: 150, duration_ms: 15 });
    expect(groups[0]!.lines.map((l) => l.entry.id)).toEqual(['500-a', '500-b', '400-a', '400-b']);
    expect(groups[2]).toMatchObject({ tasks: 2, counts: { noop: 2 }, tokens: 7, duration_ms: null });
  });
});
