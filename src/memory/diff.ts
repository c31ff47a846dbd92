/**
 * A memory diff (what changed since a checkpoint) and its text rendering, which the memory
 * world reflects on, the page shows and the tasks world's situation report quotes:
 *
 *   12 changes since baseline "memory" (2026-01-01T09:00:00.000Z): 9 added, 2 modified, 1 removed
 *
 *   ### Mail (folder)
 *   [added] Invoice 2291 overdue
 *   …
 *   …and 3 more
 *
 * Titles are untrusted text: they are made one line here, and whoever puts the rendering into
 * a prompt fences it.
 */
import type { DiffChange, DiffTotals, MemoryBaseline } from '../protocol/memory.js';

export interface DiffEntry {
  id: number;
  external_id: string;
  title: string;
  source_kind: string;
  change: DiffChange;
  updated_at: number;
}

export interface NamespaceDiff {
  namespace: string;
  label: string;
  kind: string;
  totals: DiffTotals;
  /** Added, then modified, then removed; each most recent first. Capped by `entriesPerNamespace`. */
  entries: DiffEntry[];
}

export interface MemoryDiff {
  since: MemoryBaseline;
  /** The change sequence the diff reaches (the store's head when it was read). */
  head: number;
  totals: DiffTotals;
  namespaces: NamespaceDiff[];
}

/** Lines per source in the rendering (the "at most 10"). */
export const RENDER_LINES_PER_SOURCE = 10;

export function emptyTotals(): DiffTotals {
  return { added: 0, modified: 0, removed: 0 };
}

export function totalChanges(t: DiffTotals): number {
  return t.added + t.modified + t.removed;
}

export function renderDiff(diff: MemoryDiff, opts: { linesPerSource?: number } = {}): string {
  const perSource = opts.linesPerSource ?? RENDER_LINES_PER_SOURCE;
  const n = totalChanges(diff.totals);
  const when = new Date(diff.since.created_at).toISOString();
  const head = `${n} change${n === 1 ? '' : 's'} since checkpoint "${oneLine(diff.since.label, 80)}" (${when}): ${diff.totals.added} added, ${diff.totals.modified} modified, ${diff.totals.removed} removed`;
  if (n === 0) return head;
  const sections = diff.namespaces
    .filter((ns) => totalChanges(ns.totals) > 0)
    .map((ns) => {
      const lines = ns.entries.slice(0, perSource).map((e) => `[${e.change}] ${oneLine(e.title, 200) || '(untitled)'}`);
      const more = totalChanges(ns.totals) - lines.length;
      if (more > 0) lines.push(`…and ${more} more`);
      return [`### ${oneLine(ns.label, 100)} (${oneLine(ns.kind, 40)})`, ...lines].join('\n');
    });
  return [head, ...sections].join('\n\n');
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
