/**
 * The activity log grouped by tick (issue 10): one group per tick with its counts, tokens and
 * duration ("14:05 · 4 tasks · 1 acted · 3 nothing new · 1.2k tokens · 3.1 s"). A failure that
 * repeats is one line with a count: the same error for several tasks of a tick is one line, and
 * ticks in a row that all failed the same way (an outage) are one group. Quiet ticks in a row
 * (nothing but "nothing new") are one group too, collapsed on the page.
 */
import type { LogDecision, LogEntry, LogGroup, LogLine } from '../../protocol/tasks.js';

const QUIET: ReadonlySet<LogDecision> = new Set(['noop', 'cancelled']);

export function groupLog(
  ticks: readonly { tick_id: string; tick_at: number }[],
  rows: readonly LogEntry[],
  totals: ReadonlyMap<string, { tokens: number; duration_ms: number | null }>,
): LogGroup[] {
  const byTick = new Map<string, LogEntry[]>();
  for (const r of rows) {
    const list = byTick.get(r.tick_id);
    if (list) list.push(r);
    else byTick.set(r.tick_id, [r]);
  }
  const groups = ticks.map((t) => oneTick(t, byTick.get(t.tick_id) ?? [], totals.get(t.tick_id)));
  return mergeQuietRuns(mergeRepeatedFailures(groups));
}

function oneTick(tick: { tick_id: string; tick_at: number }, rows: LogEntry[], total: { tokens: number; duration_ms: number | null } | undefined): LogGroup {
  const counts: Partial<Record<LogDecision, number>> = {};
  for (const r of rows) counts[r.decision] = (counts[r.decision] ?? 0) + 1;
  const lines: LogLine[] = [];
  const failures = new Map<string, LogLine>();
  for (const r of rows) {
    if (r.decision === 'failed') {
      const key = r.result ?? '';
      const same = failures.get(key);
      if (same) {
        same.count++;
        if (!same.task_titles.includes(r.task_title)) same.task_titles.push(r.task_title);
        same.first_at = Math.min(same.first_at, r.created_at);
        same.last_at = Math.max(same.last_at, r.updated_at);
        continue;
      }
      const line: LogLine = { entry: r, count: 1, task_titles: [r.task_title], first_at: r.created_at, last_at: r.updated_at };
      failures.set(key, line);
      lines.push(line);
      continue;
    }
    lines.push({ entry: r, count: 1, task_titles: [r.task_title], first_at: r.created_at, last_at: r.updated_at });
  }
  return {
    tick_id: tick.tick_id,
    tick_at: tick.tick_at,
    until: null,
    ticks: 1,
    tasks: rows.length,
    counts,
    tokens: total ? total.tokens : null,
    duration_ms: total ? total.duration_ms : null,
    quiet: rows.length > 0 && rows.every((r) => QUIET.has(r.decision)),
    lines,
  };
}

/** The one error a group is made of, when it is nothing but that failure (else null). */
function onlyFailure(g: LogGroup): string | null {
  if (g.lines.length !== 1) return null;
  const line = g.lines[0]!;
  if (line.entry.decision !== 'failed') return null;
  return `${line.entry.result ?? ''}\n${[...line.task_titles].sort().join('\n')}`;
}

/** Groups come newest first; a run of neighbours failing the same way becomes the newest one, spanning them all. */
function mergeRepeatedFailures(groups: LogGroup[]): LogGroup[] {
  const out: LogGroup[] = [];
  for (const g of groups) {
    const prev = out.at(-1);
    const sig = onlyFailure(g);
    if (prev && sig !== null && onlyFailure(prev) === sig) {
      const line = prev.lines[0]!;
      const older = g.lines[0]!;
      line.count += older.count;
      line.first_at = Math.min(line.first_at, older.first_at);
      prev.until ??= prev.tick_at;
      prev.tick_at = g.tick_at;
      prev.ticks += g.ticks;
      prev.tasks += g.tasks;
      prev.counts = { failed: (prev.counts.failed ?? 0) + (g.counts.failed ?? 0) };
      prev.tokens = prev.tokens === null && g.tokens === null ? null : (prev.tokens ?? 0) + (g.tokens ?? 0);
      prev.duration_ms = prev.duration_ms === null && g.duration_ms === null ? null : (prev.duration_ms ?? 0) + (g.duration_ms ?? 0);
      continue;
    }
    out.push(g);
  }
  return out;
}

/** Groups come newest first; a run of quiet neighbours becomes the newest one, spanning them all, with all their lines. */
function mergeQuietRuns(groups: LogGroup[]): LogGroup[] {
  const out: LogGroup[] = [];
  for (const g of groups) {
    const prev = out.at(-1);
    if (prev && prev.quiet && g.quiet) {
      prev.until ??= prev.tick_at;
      prev.tick_at = g.tick_at;
      prev.ticks += g.ticks;
      prev.tasks += g.tasks;
      for (const [decision, n] of Object.entries(g.counts) as [LogDecision, number][]) prev.counts[decision] = (prev.counts[decision] ?? 0) + n;
      prev.tokens = prev.tokens === null && g.tokens === null ? null : (prev.tokens ?? 0) + (g.tokens ?? 0);
      prev.duration_ms = prev.duration_ms === null && g.duration_ms === null ? null : (prev.duration_ms ?? 0) + (g.duration_ms ?? 0);
      prev.lines.push(...g.lines);
      continue;
    }
    out.push(g);
  }
  return out;
}
