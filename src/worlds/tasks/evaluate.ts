/**
 * The evaluation (seed 1, step 4): ONE `local` model call for all due tasks, schema
 * `{decisions: [{task_id, decision, reason}]}`. Tasks are split into batches only when the
 * report plus the task list would not fit the context budget. A task the model left out or
 * named wrongly becomes `noop` with the reason "no decision"; a decision for a task that was
 * not asked about is ignored.
 */
import { z } from 'zod';
import { estimateTokens, schemaInstruction } from '../../llm/index.js';
import type { LedgerRow, Llm } from '../../llm/types.js';
import { CAPS, capText, type EvaluationRecord } from './log-detail.js';
import { EVALUATION_SYSTEM, evaluationPrompt, taskLine } from './prompts.js';
import type { ModelDecision, Task } from './types.js';

export const decisionsSchema = z.object({
  decisions: z.array(
    z.object({
      task_id: z.string(),
      decision: z.enum(['noop', 'act', 'escalate']),
      reason: z.string().optional(),
    }),
  ),
});

export type DecisionsOutput = z.output<typeof decisionsSchema>;

export interface TaskDecision {
  task_id: string;
  decision: ModelDecision;
  reason: string;
}

export const NO_DECISION = 'no decision';
const MAX_REASON_CHARS = 500;

let overhead: number | undefined;

/** Fixed tokens of one evaluation call besides the report and the task lines (system, schema, scaffolding). */
export function evaluationOverheadTokens(): number {
  overhead ??= estimateTokens(`${EVALUATION_SYSTEM}\n\n${schemaInstruction(decisionsSchema)}${evaluationPrompt('', [])}`) + 32;
  return overhead;
}

/** A one-sentence reason, as the prompt asks: what one answer entry is budgeted for. */
const ANSWER_REASON_CHARS = 120;

/**
 * What one due task costs an evaluation call: its line in the prompt plus its entry in the
 * answer. The answer shares the model's context with the prompt, so a batch that only counted
 * the prompt could be cut off mid-JSON (1,000 decisions are ~25k tokens of output) and fail
 * every tick.
 */
export function taskEvaluationTokens(t: Pick<Task, 'id' | 'title' | 'needs_tools' | 'recurrence'>): number {
  const answer = JSON.stringify({ task_id: t.id, decision: 'escalate', reason: 'x'.repeat(ANSWER_REASON_CHARS) });
  return estimateTokens(taskLine(t)) + estimateTokens(`${answer},`);
}

/**
 * Split task lines into as few batches as fit `budget` next to a report of `reportTokens`.
 * A single line too big for any batch still gets a batch of its own (it is capped by fencing).
 */
export function planBatches(lines: readonly { id: string; tokens: number }[], reportTokens: number, budget: number): string[][] {
  const room = Math.max(1, budget - reportTokens - evaluationOverheadTokens());
  const batches: string[][] = [];
  let current: string[] = [];
  let used = 0;
  for (const line of lines) {
    if (current.length && used + line.tokens > room) {
      batches.push(current);
      current = [];
      used = 0;
    }
    current.push(line.id);
    used += line.tokens;
  }
  if (current.length) batches.push(current);
  return batches;
}

/** One decision per asked task, in the asked order: first answer wins, missing ones are noop. */
export function normalizeDecisions(askedIds: readonly string[], output: DecisionsOutput): TaskDecision[] {
  const asked = new Set(askedIds);
  const got = new Map<string, TaskDecision>();
  for (const d of output.decisions) {
    const id = d.task_id.trim();
    if (!asked.has(id) || got.has(id)) continue;
    const reason = (d.reason ?? '').replace(/\s+/g, ' ').trim().slice(0, MAX_REASON_CHARS);
    got.set(id, { task_id: id, decision: d.decision, reason: reason || `(${d.decision}, no reason given)` });
  }
  return askedIds.map((id) => got.get(id) ?? { task_id: id, decision: 'noop', reason: NO_DECISION });
}

/** One evaluation call's decisions, with its raw answer and the figures the ledger recorded for it. */
export interface BatchResult {
  decisions: TaskDecision[];
  record: EvaluationRecord;
}

export async function evaluateBatch(
  llm: Llm,
  call: { world: string; signal: AbortSignal; now: () => number },
  report: string,
  batch: readonly { id: string; line: string }[],
): Promise<BatchResult> {
  const ledger = ledgerFigures();
  const { value, text } = await llm.object(
    { world: call.world, purpose: 'evaluate', role: 'local', signal: call.signal, onLedger: ledger.add },
    {
      system: EVALUATION_SYSTEM,
      prompt: evaluationPrompt(
        report,
        batch.map((b) => b.line),
      ),
      schema: decisionsSchema,
      temperature: 0,
    },
  );
  const ids = batch.map((b) => b.id);
  return {
    decisions: normalizeDecisions(ids, value),
    record: {
      task_ids: ids,
      raw: capText(text, CAPS.rawAnswer),
      model: modelOf(llm, 'local'),
      ...ledger.figures(),
    },
  };
}

/**
 * Collects the ledger rows a call wrote (each attempt one) and sums them: a row's figures are the
 * ledger's, never a count of our own.
 */
export function ledgerFigures(): {
  add: (row: LedgerRow) => void;
  figures: () => { calls: number; input_tokens: number; output_tokens: number; latency_ms: number };
} {
  const sum = { calls: 0, input_tokens: 0, output_tokens: 0, latency_ms: 0 };
  return {
    add: (row) => {
      sum.calls++;
      sum.input_tokens += row.inputTokens;
      sum.output_tokens += row.outputTokens;
      sum.latency_ms += row.latencyMs;
    },
    figures: () => ({ ...sum }),
  };
}

/** The model a role is served by (for the record; a layer without endpoints says nothing). */
export function modelOf(llm: Pick<Llm, 'endpoint'>, role: 'local' | 'agent'): string | null {
  try {
    return llm.endpoint(role).model;
  } catch {
    return null;
  }
}
