/**
 * Seed 1's activity-log table, row by row: the dot colour and text the page shows for each
 * decision, and which results are collapsed. The browser tests see some of these live; this
 * pins all eight (seed 1's seven and `resolved`), and the reasons issue 10 adds.
 */
import { describe, expect, it } from 'vitest';
import type { LogGroup } from '../../src/protocol/index.js';
import type { LogEntry } from '../../src/worlds/tasks/types.js';
import { DECISION_LOOK, EXPAND_OVER, groupSummary, logText, whyLine } from '../../web/src/tabs/subconscious/decisions.js';
import { relativeTime } from '../../web/src/ui/format.js';

const SEED_TABLE = [
  ['in_progress', 'blue', true, 'Deciding what it needs...'],
  ['act', 'green', false, null], // the result text
  ['noop', 'gray', false, 'Nothing new'],
  ['escalate', 'amber', false, 'Waiting for approval'],
  ['failed', 'coral', false, null], // the error message
  ['cancelled', 'gray', false, null], // why it was cancelled, when the row says
  ['dismissed', 'gray', false, 'Skipped'],
  ['resolved', 'green', false, null], // how it resolved by itself
] as const;

function entry(decision: LogEntry['decision'], result: string | null): LogEntry {
  return {
    id: 'l1',
    task_id: 't1',
    task_title: 'Check urgent emails',
    tick_id: 'k1',
    tick_at: 0,
    decision,
    model_decision: null,
    reason: null,
    result,
    duration_ms: null,
    exec_state: 'none',
    exec_mode: null,
    run_id: null,
    created_at: 0,
    updated_at: 0,
  };
}

describe('activity log decisions (seed 1)', () => {
  it.each(SEED_TABLE)('%s: %s dot, pulsing=%s, text %s', (decision, color, pulse, text) => {
    const look = DECISION_LOOK[decision];
    expect(look.color).toBe(color);
    expect(!!look.pulse).toBe(pulse);
    const shown = logText(entry(decision, '  Forwarded 3 emails to #team-alerts  '));
    expect(shown).toBe(text ?? 'Forwarded 3 emails to #team-alerts');
  });

  it('covers every decision the store can write', () => {
    expect(Object.keys(DECISION_LOOK).sort()).toEqual(SEED_TABLE.map((r) => r[0]).sort());
  });

  it('act and failed without text fall back to a word, never an empty row', () => {
    expect(logText(entry('act', null))).toBe('Done');
    expect(logText(entry('failed', '   '))).toBe('Failed');
    expect(logText(entry('cancelled', null))).toBe('Cancelled');
  });

  it('every row shows the model’s reason: "Nothing new: …", and "Why: …" under a result', () => {
    const noop = { ...entry('noop', 'Nothing new'), reason: 'No release date moved since the last check.' };
    expect(logText(noop)).toBe('Nothing new: No release date moved since the last check.');
    expect(whyLine(noop)).toBeNull();
    // The model gave none: nothing is made up.
    expect(logText({ ...noop, reason: 'no decision' })).toBe('Nothing new');
    expect(logText({ ...noop, reason: '(noop, no reason given)' })).toBe('Nothing new');
    const acted = { ...entry('act', 'Build is green.'), reason: 'The nightly build finished.' };
    expect(logText(acted)).toBe('Build is green.');
    expect(whyLine(acted)).toBe('The nightly build finished.');
    // An approved action running says so, not "Evaluating...".
    expect(logText({ ...entry('in_progress', 'Running the approved action...'), exec_state: 'running' })).toBe('Running the approved action...');
    // The store's placeholder is an internal word: an open row says its stage instead (issue 23).
    expect(logText({ ...entry('in_progress', 'Evaluating...'), exec_state: 'running' })).toBe('Carrying out the task...');
    expect(logText({ ...entry('in_progress', 'Evaluating...') })).toBe('Deciding what it needs...');
  });

  it('results over 120 characters are the ones collapsed', () => {
    expect(EXPAND_OVER).toBe(120);
  });
});

describe('relative times', () => {
  const now = Date.UTC(2026, 0, 1, 12);
  it.each([
    [null, 'never'],
    [now - 3_000, 'just now'],
    [now - 45_000, '45 s ago'],
    [now - 5 * 60_000, '5 min ago'],
    [now - 3 * 3_600_000, '3 h ago'],
    [now - 2 * 86_400_000, '2 d ago'],
    [now + 5 * 60_000, 'in 5 min'],
    [now + 2_000, 'in a moment'],
  ] as const)('%s → %s', (at, text) => {
    expect(relativeTime(at, now)).toBe(text);
  });
});

describe('groupSummary', () => {
  const at = Date.parse('2026-10-21T09:30:00Z');
  const group = (over: Partial<LogGroup>): LogGroup => ({
    tick_id: 't',
    tick_at: at,
    until: null,
    ticks: 1,
    tasks: 3,
    counts: { noop: 3 },
    tokens: null,
    duration_ms: null,
    quiet: true,
    lines: [],
    ...over,
  });
  it('leaves out a duration of 0 ms (a tick that made no call), and shows any other', () => {
    expect(groupSummary(group({ duration_ms: 0 }), at)).not.toMatch(/ms/);
    expect(groupSummary(group({ duration_ms: 0 }), at)).toMatch(/ · 3 tasks · 3 nothing new$/);
    expect(groupSummary(group({ duration_ms: 40, tokens: 1200 }), at)).toMatch(/ · 3 tasks · 3 nothing new · 1.2k tokens · 40 ms$/);
  });
  it('a run of quiet ticks reads as one line: its span and how many ticks', () => {
    const line = groupSummary(group({ ticks: 4, tasks: 12, counts: { noop: 12 }, until: at + 15 * 60_000 }), at);
    expect(line).toMatch(/^\S.*–.* · 4 ticks · 12 tasks · 12 nothing new$/);
  });
});
