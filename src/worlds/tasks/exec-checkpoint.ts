/**
 * An execution's step-level checkpoint (issue 17), kept on its log row (`exec_checkpoint`) while
 * it runs, and what a take-over makes of it. A row found `running` whose worker died is:
 *
 * - **answered** — its final answer had arrived: applied from the checkpoint, no model call
 *   (never paid twice);
 * - **in flight** — a call that can write had begun and not returned: it may or may not have
 *   happened, so nothing is run again and the row says so, for the person;
 * - **cut off too often** — `MAX_CUT_OFF_RUNS` runs began and none finished (a poison execution
 *   that brings its worker down each time): failed, and not continued again;
 * - **fresh** — no run began yet (an approved action whose job was queued): it simply runs;
 * - **continued** — a new run, told the tool steps already taken (fenced as data, "do not repeat
 *   them"), so an effect that happened happens once;
 * - **unknown** — no readable checkpoint (a row of an older release, a hand-edited one): failed as
 *   interrupted, never re-run blindly.
 *
 * Runs are counted when they begin (written before the first model call), so a worker that died
 * before its run began cut nothing off.
 */
import { z } from 'zod';
import type { InFlightCall, RecordedStep } from '../../agent/index.js';
import { MAX_CUT_OFF_RUNS } from '../../bots/index.js';
import type { ApprovalContext, EscalationAction } from '../../protocol/index.js';
import type { AutoApproval, HeldWrite } from './log-detail.js';

/** The final answer a run received, kept before anything is done with it. */
export interface ExecAnswer {
  run_id: string;
  /** Visible text (control lines stripped). */
  text: string;
  controls: { kind: string; text?: string | undefined }[];
  /** Model calls of the run. */
  steps: number;
  at: number;
}

/** The ledger's figures for an execution's model calls so far. */
export interface ExecUsage {
  calls: number;
  input: number;
  output: number;
  latency_ms: number;
}

/** A write the approval gate held (the first becomes the card's action). */
export interface HeldCall {
  action: EscalationAction;
  context: ApprovalContext | null;
}

export interface ExecCheckpoint {
  /** Runs begun for this row; each that did not finish was cut off. */
  runs: number;
  /** Tool steps of every run so far, in order. */
  steps: RecordedStep[];
  /** Writing calls begun with no result recorded. */
  in_flight: InFlightCall[];
  answer: ExecAnswer | null;
  usage: ExecUsage;
  auto: AutoApproval[];
  held: HeldWrite[];
  held_calls: HeldCall[];
}

export const NO_USAGE: ExecUsage = { calls: 0, input: 0, output: 0, latency_ms: 0 };

/** A row that was marked to run and has not begun a run yet. */
export function freshCheckpoint(runs = 0): ExecCheckpoint {
  return { runs, steps: [], in_flight: [], answer: null, usage: { ...NO_USAGE }, auto: [], held: [], held_calls: [] };
}

const count = z.number().int().min(0);
const step = z.object({
  toolCallId: z.string(),
  tool: z.string(),
  input: z.string(),
  outcome: z.enum(['ok', 'error', 'denied', 'expired', 'cancelled']),
  output: z.string(),
  at: z.number(),
});
const call = z.object({
  toolCallId: z.string(),
  tool: z.string(),
  server: z.string(),
  access: z.enum(['read', 'write']),
  input: z.string(),
  at: z.number(),
});
// Written by this release's own code; the nested records the gate keeps are only checked for shape.
const schema = z.object({
  runs: count,
  steps: z.array(step).default([]),
  in_flight: z.array(call).default([]),
  answer: z
    .object({ run_id: z.string().min(1), text: z.string(), controls: z.array(z.looseObject({ kind: z.string() })), steps: count, at: z.number() })
    .nullable()
    .default(null),
  usage: z.object({ calls: count, input: count, output: count, latency_ms: z.number().min(0) }).default({ ...NO_USAGE }),
  auto: z.array(z.looseObject({ tool: z.string(), server: z.string() })).default([]),
  held: z.array(z.looseObject({ tool: z.string(), server: z.string() })).default([]),
  held_calls: z.array(z.looseObject({ action: z.looseObject({ tool: z.string(), server: z.string() }) })).default([]),
});

/** The row's checkpoint, or null when there is none or it does not read as one. */
export function parseExecCheckpoint(json: string | null): ExecCheckpoint | null {
  if (!json) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(json));
    return parsed.success ? (parsed.data as unknown as ExecCheckpoint) : null;
  } catch {
    return null;
  }
}

export type ResumePlan =
  | { kind: 'fresh'; checkpoint: ExecCheckpoint }
  | { kind: 'continue'; checkpoint: ExecCheckpoint }
  | { kind: 'answered'; checkpoint: ExecCheckpoint; answer: ExecAnswer }
  | { kind: 'in_flight'; checkpoint: ExecCheckpoint; call: InFlightCall }
  | { kind: 'too_often'; checkpoint: ExecCheckpoint }
  | { kind: 'unknown' };

/** What a take-over does with a `running` row (see the header). */
export function resumePlan(checkpoint: ExecCheckpoint | null): ResumePlan {
  if (!checkpoint) return { kind: 'unknown' };
  if (checkpoint.answer) return { kind: 'answered', checkpoint, answer: checkpoint.answer };
  const writing = checkpoint.in_flight.find((c) => c.access === 'write');
  if (writing) return { kind: 'in_flight', checkpoint, call: writing };
  if (checkpoint.runs >= MAX_CUT_OFF_RUNS) return { kind: 'too_often', checkpoint };
  return checkpoint.runs === 0 ? { kind: 'fresh', checkpoint } : { kind: 'continue', checkpoint };
}

/** An execution cut off with nothing readable recorded (an older release's row, a hand-edited one), or whose task went away. */
export const INTERRUPTED =
  'Interrupted while executing (the process stopped). Not run again, so it cannot act or be paid for twice; a recurring task runs again at its next time.';

/** The row's text when a take-over runs nothing again (`unknown`, `in_flight`, `too_often`). */
export function stoppedText(plan: Extract<ResumePlan, { kind: 'unknown' | 'in_flight' | 'too_often' }>, from: string): string {
  if (plan.kind === 'in_flight') return inFlightText(plan.call, from);
  if (plan.kind === 'too_often') return cutOffTooOftenText(plan.checkpoint.runs, from);
  return INTERRUPTED;
}

/** The row's text for a writing call cut off in flight: it may have happened, and the person decides. */
export function inFlightText(call: InFlightCall, from: string): string {
  return (
    `Cut off while ${call.tool} (on ${call.server}) was running, when its worker (${from}) stopped: it may or may not have happened, ` +
    `so it is not run again on its own. Check ${call.server}, and run the task again if it did not happen. Its arguments: ${call.input}`
  );
}

/** The row's text for an execution cut off `MAX_CUT_OFF_RUNS` times. */
export function cutOffTooOftenText(runs: number, from: string): string {
  return (
    `Interrupted: its execution was cut off ${runs} times (its worker stopped during the run; last ${from}), so it is not continued again. ` +
    'Something in it may bring its worker down: look at the steps below before you run the task again.'
  );
}
