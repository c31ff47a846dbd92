/**
 * Confirm an actionable that needs the person's confirmation (issue 23 §7): it becomes a one-off
 * task for the tasks world, read-only, so whatever it would send or change comes back as a card
 * under Needs you with the exact call — through the approval gate, never straight away. The
 * actionable is then marked done (Undo brings it back; the task stays in Active Tasks).
 */
import type { Actionable } from '../../../../src/protocol/index.js';
import { call } from '../../api/rpc.js';

/** The task's title: the item and what it says, within the 500 characters a title may hold. */
export function confirmTitle(a: Pick<Actionable, 'title' | 'description'>): string {
  const what = a.description.trim() && a.description.trim() !== a.title.trim() ? `${a.title.trim()}: ${a.description.trim()}` : a.title.trim();
  return what.length > 480 ? `${what.slice(0, 479)}…` : what;
}

export async function confirmActionable(a: Actionable): Promise<string> {
  await call('subconscious.tasks_add', { title: confirmTitle(a), recurrence: 'once', needs_tools: false });
  await call('conscious.complete', { id: a.id });
  return `Confirmed “${a.title}”: the agent looks at it at the next tick; anything it would send or change waits for you under Needs you.`;
}
