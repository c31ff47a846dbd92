/** Why a task is or is not looked at next (the daemon's `TaskWhy`), in a person's words. */
import type { Task } from '../../api/types.js';
import { clockTime } from '../../ui/format.js';

export function whyText(task: Task, now: number): string {
  const w = task.why;
  switch (w.kind) {
    case 'off':
      return w.detail ? `switched off: ${w.detail}` : 'switched off';
    case 'done':
      return w.at ? `done (ran ${clockTime(w.at, now)})` : 'done';
    case 'not_due':
      return w.at ? `not due until ${clockTime(w.at, now)}` : 'not due yet';
    case 'unchanged':
      return `unchanged since ${clockTime(w.at ?? now, now)}${w.until ? ` · looked at again when something changes, or at ${clockTime(w.until, now)}` : ''}`;
    case 'waiting':
      return `waiting for your answer to “${w.detail ?? 'its approval card'}”`;
    case 'world_off':
      return `not checked: the Tasks world is off${w.detail ? ` (${w.detail})` : ''}`;
    case 'model_unavailable':
      // The banner at the top says what is wrong and how to fix it, once (issue 23): a task only says it waits.
      return 'waiting for the model (the banner at the top says how to fix it)';
    case 'due':
      return 'checked at the next tick';
  }
}
