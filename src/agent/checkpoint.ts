/**
 * The checkpoint written at settle (seed 2 §7.6): enough for a later resume to continue
 * without redoing work. `summary` is the tail of the final assistant text (≤ 600 chars,
 * whitespace collapsed); without any text it falls back to the title and the last error.
 */

/** One tool step of a run, as recorded for checkpoints and the run's live view. */
export interface RecordedStep {
  toolCallId: string;
  /** Model-facing tool name (`server__tool`). */
  tool: string;
  /** JSON of the arguments, truncated. */
  input: string;
  outcome: 'ok' | 'error' | 'denied' | 'expired' | 'cancelled';
  /** The result (or error) text, truncated. */
  output: string;
  at: number;
}

export interface Checkpoint {
  summary: string;
  steps: RecordedStep[];
  at: number;
}

export const CHECKPOINT_SUMMARY_MAX = 600;
export const CHECKPOINT_STEPS_MAX = 10;

export function buildCheckpoint(input: {
  text: string;
  steps: readonly RecordedStep[];
  title?: string | undefined;
  error?: string | undefined;
  at: number;
}): Checkpoint {
  const text = collapse(input.text);
  let summary: string;
  if (text) summary = tail(text, CHECKPOINT_SUMMARY_MAX);
  else {
    const parts = [input.title ? collapse(input.title) : 'Run', input.error ? `last error: ${collapse(input.error)}` : 'no answer yet'];
    summary = head(parts.join(' — '), CHECKPOINT_SUMMARY_MAX);
  }
  return { summary, steps: input.steps.slice(-CHECKPOINT_STEPS_MAX), at: input.at };
}

/** One line per step, for a resume preamble (`formatRecordedSteps` in seed 2). */
export function formatSteps(steps: readonly RecordedStep[]): string {
  return steps.map((s, i) => `${i + 1}. ${s.tool}(${s.input}) → ${s.outcome}${s.output ? `: ${s.output}` : ''}`).join('\n');
}

export function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function tail(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - (max - 1))}`;
}

export function head(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
