/** Seed 1's activity-log table: the dot colour and text for each decision. */
import type { Decision, LogEntry } from '../../api/types.js';
import type { DotColor } from '../../ui/Dot.js';

export const DECISION_LOOK: Record<Decision, { color: DotColor; pulse?: boolean; label: string }> = {
  in_progress: { color: 'blue', pulse: true, label: 'Evaluating...' },
  act: { color: 'green', label: 'Done' },
  noop: { color: 'gray', label: 'Nothing new' },
  escalate: { color: 'amber', label: 'Waiting for approval' },
  failed: { color: 'coral', label: 'Failed' },
  cancelled: { color: 'gray', label: 'Cancelled' },
  dismissed: { color: 'gray', label: 'Skipped' },
  resolved: { color: 'green', label: 'Resolved by itself' },
};

/** act shows its result text and failed its error message; the others show the seed's fixed text. */
export function logText(entry: LogEntry): string {
  const look = DECISION_LOOK[entry.decision] ?? { label: entry.decision };
  if ((entry.decision === 'act' || entry.decision === 'failed') && entry.result && entry.result.trim()) return entry.result.trim();
  return look.label;
}

export const EXPAND_OVER = 120;
