/**
 * Zero calls when nothing changed (issue 10). Before a tick evaluates a due task it fingerprints
 * what the task would be judged on:
 *
 *   - the task itself: its words, schedule and write rights;
 *   - the parts of the situation report every task sees: the skills' health (name, status, tool
 *     count — not the time they were last checked), the memory store's change sequence, the
 *     distinct errors of recent failures (an outage failing every tick the same way is one
 *     input, not a new one per tick), the workspace's files (path, size, mtime), and whether the
 *     agent model answers;
 *   - the date, in the task's zone, when the task is about time ("Send the daily digest").
 *
 * A task whose fingerprint equals the one its last "nothing new" was decided on is not sent to
 * the model (until the safety net runs out). What is left out on purpose: the report's window
 * line and timestamps, which change every tick and say nothing new.
 */
import { createHash } from 'node:crypto';
import { isAboutTime } from './intent.js';
import type { SkillHealth, Task } from './types.js';

export interface FingerprintInputs {
  /** undefined: no skills are wired. */
  skills: SkillHealth[] | undefined;
  skillsError: string | undefined;
  /** The memory store's change sequence (null: no memory store). */
  memoryHead: number | null;
  /** Distinct error texts of task runs that failed recently. */
  failures: string[];
  /** A digest of the workspace's files (see `scanWorkspace`). */
  workspace: string;
  /** Whether the agent model answered its last probe (null: not known). */
  agentModel: boolean | null;
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** One digest of what every task sees; computed once per tick. */
export function sharedDigest(inputs: FingerprintInputs): string {
  const skills =
    inputs.skills === undefined
      ? null
      : inputs.skills
          .map((s) => [s.name, s.status, Array.isArray(s.tools) ? s.tools.length : (s.tools ?? null)] as const)
          .sort((a, b) => a[0].localeCompare(b[0]));
  return sha(
    JSON.stringify({
      skills,
      skillsError: inputs.skillsError ?? null,
      memory: inputs.memoryHead,
      failures: [...new Set(inputs.failures)].sort(),
      workspace: inputs.workspace,
      agent: inputs.agentModel,
    }),
  );
}

/** The day in `timeZone` (YYYY-MM-DD). */
export function localDay(at: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(at));
}

/** The fingerprint of one task's inputs. `writes`: the rights it really runs with. */
export function taskFingerprint(task: Pick<Task, 'title' | 'recurrence'>, writes: boolean, shared: string, now: number, timeZone: string): string {
  const day = isAboutTime(task.title) ? localDay(now, timeZone) : null;
  return sha(JSON.stringify({ title: task.title, recurrence: task.recurrence, writes, shared, day }));
}
