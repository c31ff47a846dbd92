/**
 * The final answer a run received, kept in its task's checkpoint before the settle starts (issue
 * 17 §4: an answer that arrived is never paid for twice). A worker killed between the answer and
 * the settle leaves it behind; the job that takes the run over settles from it — the same text into
 * the same message, the same control lines, the usage the dead worker paid — with no model call.
 */
import { z } from 'zod';
import { buildCheckpoint, type ControlLine, type RecordedStep, type RunOutcome } from '../agent/index.js';
import type { TaskCheckpoint } from '../protocol/bots.js';
import { parseJson } from './rows.js';
import type { RunUsage } from './runtime.js';
import type { TaskRow } from './task-store.js';

export interface AnswerRecord {
  /** The run that received it: a record of an earlier run of the task is never settled from. */
  run_id: string;
  /** The reply as its settle would write it into the bot message. */
  text: string;
  controls: ControlLine[];
  /** Model calls of the run (its steps). */
  steps: number;
  usage: RunUsage;
  at: number;
}

const count = z.number().int().min(0);
const recordSchema = z.object({
  run_id: z.string().min(1),
  text: z.string(),
  // Control lines are the runner's own output, written by this release; only their kind is checked.
  controls: z.array(z.looseObject({ kind: z.enum(['memory', 'team_memory', 'handoff', 'followup', 'blocked', 'recommended_action', 'invalid']) })),
  steps: count,
  usage: z.object({ calls: count, inputTokens: count, outputTokens: count }),
  at: z.number(),
});

/** The reply text a settle writes: what was streamed (blank runs squeezed), else the run's final text. */
export function replyText(streamed: string, finalText: string): string {
  return streamed.replace(/\n{3,}/g, '\n\n').trim() || finalText;
}

/** The answer this task's current run checkpointed, or null (none, another run's, or unreadable). */
export function answerOf(row: Pick<TaskRow, 'checkpoint' | 'run_id'>): AnswerRecord | null {
  const cp = parseJson<{ answer?: unknown } | null>(row.checkpoint, null);
  if (!cp || typeof cp !== 'object' || cp.answer === undefined || row.run_id === null) return null;
  const parsed = recordSchema.safeParse(cp.answer);
  if (!parsed.success || parsed.data.run_id !== row.run_id) return null;
  return parsed.data as AnswerRecord;
}

/** The outcome the cut-off run would have settled with (done, its answer), for the settle of its take-over. */
export function answeredOutcome(a: AnswerRecord, row: Pick<TaskRow, 'checkpoint' | 'title' | 'started_at'>): RunOutcome {
  const steps = (parseJson<TaskCheckpoint | null>(row.checkpoint, null)?.steps ?? []) as RecordedStep[];
  return {
    runId: a.run_id,
    status: 'done',
    text: a.text,
    controls: a.controls,
    checkpoint: buildCheckpoint({ text: a.text, steps, title: row.title, at: a.at }),
    steps: a.steps,
    stepLimitReached: false,
    toolSteps: steps,
    startedAt: row.started_at === null ? a.at : Number(row.started_at),
    finishedAt: a.at,
  };
}
