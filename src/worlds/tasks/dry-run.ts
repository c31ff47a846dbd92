/**
 * This world's side of a dry run (`subconscious simulate`): the steady-state answer to its
 * evaluation — every task asked about decides `noop`, the cost of watching when nothing needs
 * doing — and what the prompt shows about the tick (which tasks, how big the situation report).
 * It reads the prompt `evaluationPrompt` builds, so it lives next to it. Untrusted text in that
 * prompt is fenced on one line, so the lines read here can only be the host's own.
 */
import { estimateTokens } from '../../llm/index.js';
import type { DecisionsOutput } from './evaluate.js';

const DUE_HEADER = '\n# Due tasks (';
const TASK_ID_LINE = /^- task_id: (\S+)$/gm;

/** A one-sentence reason, the length the evaluation budgets for. */
export const DRY_RUN_REASON = 'Nothing relevant changed for this task since the last check, so there is nothing to do right now.';

export interface EvaluationRead {
  /** The task ids listed in the prompt, in order. */
  taskIds: string[];
  /** The situation report's size, measured as the world measures it. */
  reportTokens: number;
}

/** The tasks and report size of one evaluation prompt; undefined when `prompt` is not one. */
export function readEvaluationPrompt(prompt: string): EvaluationRead | undefined {
  const at = prompt.lastIndexOf(DUE_HEADER);
  if (at < 0) return undefined;
  const taskIds = [...prompt.slice(at).matchAll(TASK_ID_LINE)].map((m) => m[1]!);
  return { taskIds, reportTokens: estimateTokens(prompt.slice(0, at)) };
}

/** The evaluation's reply in which every listed task decides `noop`. */
export function noopDecisionsReply(taskIds: readonly string[]): string {
  const output: DecisionsOutput = { decisions: taskIds.map((task_id) => ({ task_id, decision: 'noop', reason: DRY_RUN_REASON })) };
  return JSON.stringify(output);
}
