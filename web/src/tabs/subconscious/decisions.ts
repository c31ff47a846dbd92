/**
 * Seed 1's activity-log table (the dot colour and text for each decision), the model's reason
 * beside every decision (issue 10: "Nothing new: no release date moved since the last check"),
 * and the words a person reads for the world's internal names (modes, purposes).
 */
import type { LogGroup } from '../../../../src/protocol/index.js';
import type { Decision, LogEntry } from '../../api/types.js';
import { clockTime, compact, count, duration } from '../../ui/format.js';
import type { DotColor } from '../../ui/Dot.js';

export const DECISION_LOOK: Record<Decision, { color: DotColor; pulse?: boolean; label: string }> = {
  in_progress: { color: 'blue', pulse: true, label: 'Deciding what it needs...' },
  act: { color: 'green', label: 'Done' },
  noop: { color: 'gray', label: 'Nothing new' },
  escalate: { color: 'amber', label: 'Waiting for approval' },
  failed: { color: 'coral', label: 'Failed' },
  cancelled: { color: 'gray', label: 'Cancelled' },
  dismissed: { color: 'gray', label: 'Skipped' },
  resolved: { color: 'green', label: 'Resolved by itself' },
};

/** The filter's names for each decision (plural, as a person asks for them). */
export const DECISION_FILTER: Record<Decision, string> = {
  in_progress: 'running now',
  act: 'acted',
  noop: 'nothing new',
  escalate: 'waiting for approval',
  failed: 'failed',
  cancelled: 'cancelled',
  dismissed: 'skipped',
  resolved: 'resolved by itself',
};

/** Every decision, in the order the filter lists them (the page bundles no runtime code from the contract). */
export const DECISIONS = Object.keys(DECISION_FILTER) as Decision[];

/** Reasons that carry nothing for a person (the model gave none). */
const EMPTY_REASON = /^(?:no decision|\((?:noop|act|escalate), no reason given\))$/;

export function reasonOf(entry: LogEntry): string | null {
  const r = entry.reason?.trim();
  return r && !EMPTY_REASON.test(r) ? r : null;
}

/** What the log store writes into a row still open (src/worlds/tasks/log-store.ts). */
const STORE_PLACEHOLDER = 'Evaluating...';

/**
 * The row's text: a "nothing new" says why; act and failed show their result; a row running an
 * approved action says so; the others show the seed's fixed text (or their own, when resolved).
 */
export function logText(entry: LogEntry): string {
  const look = DECISION_LOOK[entry.decision] ?? { label: entry.decision };
  const result = entry.result?.trim();
  if (entry.decision === 'noop') {
    const reason = reasonOf(entry);
    return reason ? `${look.label}: ${reason}` : look.label;
  }
  if ((entry.decision === 'act' || entry.decision === 'failed' || entry.decision === 'resolved') && result) return result;
  if (entry.decision === 'in_progress') {
    // The store's placeholder for an open row is "Evaluating..." (an internal word): said as the stage instead.
    const own = result && result !== look.label && result !== STORE_PLACEHOLDER ? result : null;
    if (entry.exec_state === 'running' || entry.exec_state === 'executed') return own ?? 'Carrying out the task...';
    return look.label;
  }
  if (entry.decision === 'cancelled' && result && result !== look.label) return result;
  return look.label;
}

/** The model's reason, shown under rows whose text is a result (act, escalate): why it did that. */
export function whyLine(entry: LogEntry): string | null {
  if (entry.decision === 'noop' || entry.decision === 'in_progress') return null;
  return reasonOf(entry);
}

export const EXPAND_OVER = 120;

/** How a row was carried out, in words. */
export const MODE_WORDS: Record<string, string> = {
  local: 'a short text answer by the local model (no tools, nothing sent)',
  analysis: 'a read-only look by the agent (it could read, not write)',
  tainted: 'carried out by the agent: only the writes the task’s own words name ran without asking',
  full: 'the action you approved, carried out by the agent',
};

/** "14:05 · 4 tasks · 1 acted · 3 nothing new · 1.2k tokens · 3.1 s" */
export function groupSummary(g: LogGroup, now: number): string {
  const from = clockTime(g.tick_at, now);
  const to = g.until !== null ? clockTime(g.until, now) : from;
  const when = to !== from ? `${from}–${to}` : from;
  const parts = [when];
  if (g.ticks > 1) parts.push(`${g.ticks} ticks`);
  parts.push(`${count(g.tasks)} ${g.tasks === 1 ? 'task' : 'tasks'}`);
  const c = g.counts;
  const said: Array<[number | undefined, string]> = [
    [c.act, 'acted'],
    [c.escalate, 'waiting for approval'],
    [c.noop, 'nothing new'],
    [c.failed, 'failed'],
    [c.in_progress, 'running'],
    [c.cancelled, 'cancelled'],
    [c.dismissed, 'skipped'],
    [c.resolved, 'resolved by itself'],
  ];
  for (const [n, words] of said) if (n) parts.push(`${count(n)} ${words}`);
  // A tick whose calls all failed spent nothing worth a figure.
  if (g.tokens) parts.push(`${compact(g.tokens)} tokens`);
  // "0 ms" says nothing (a tick that made no call): left out.
  if (g.duration_ms) parts.push(duration(g.duration_ms));
  return parts.join(' · ');
}
