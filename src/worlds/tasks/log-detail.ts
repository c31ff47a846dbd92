/**
 * What is kept behind a log row so a person can see why it reads as it does (issue 10, "row
 * detail"): the execution's answer, its tool calls with arguments and results, and its figures
 * (model, calls, tokens, latency — the numbers the model layer wrote to the ledger for those
 * calls), the runs behind the row, and the writes an approval gate let through or held back.
 * Everything a model or a tool produced is untrusted text: it is stored and shown as data, capped.
 */
import type { ExecMode, ExecutionDetail, ModelCalls, ToolCallDetail } from '../../protocol/tasks.js';
import type { AgentToolStep } from './types.js';

/** Caps for what is kept of untrusted text. */
export const CAPS = { answer: 8000, toolText: 2000, rawAnswer: 20_000, report: 400_000 } as const;

export interface ExecutionRecord {
  mode: ExecMode;
  purpose: string;
  answer: string | null;
  calls: ModelCalls;
  tool_calls: ToolCallDetail[];
  run_id: string | null;
  /** The worker a continued (or applied) execution was taken over from (null or absent: it ran where it began). */
  taken_over_from?: string | null | undefined;
}

/** A writing call the task's words named, approved by the world on the person's behalf. */
export interface AutoApproval {
  at: number;
  tool: string;
  server: string;
  arguments: string;
}

/** A writing call the task's words did not name: held for the person (it became the escalation). */
export interface HeldWrite {
  tool: string;
  server: string;
  arguments: string;
}

export interface RowDetail {
  execution?: ExecutionRecord | undefined;
  approved?: ExecutionRecord | undefined;
  auto_approved?: AutoApproval[] | undefined;
  held?: HeldWrite[] | undefined;
}

/** One evaluation call of a tick: which tasks it decided, its raw answer and figures. */
export interface EvaluationRecord {
  task_ids: string[];
  raw: string | null;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  latency_ms: number;
  /** Ledger rows of the call (a retried attempt is one more); absent in older records: 1. */
  calls?: number;
}

export function parseDetail(json: string | null): RowDetail {
  if (!json) return {};
  try {
    const v = JSON.parse(json) as unknown;
    return v && typeof v === 'object' ? (v as RowDetail) : {};
  } catch {
    return {};
  }
}

export function parseEvaluations(json: string | null): EvaluationRecord[] {
  if (!json) return [];
  try {
    const v = JSON.parse(json) as unknown;
    return Array.isArray(v) ? (v as EvaluationRecord[]) : [];
  } catch {
    return [];
  }
}

/** Cut at `max` characters with a note saying how much went. */
export function cap(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  return { text: `${text.slice(0, max)}\n… (${(text.length - max).toLocaleString('en-US')} more characters not kept)`, truncated: true };
}

export function capText(text: string | null | undefined, max: number): string | null {
  return text === null || text === undefined ? null : cap(text, max).text;
}

/** A JSON-ish argument value as one capped text. */
export function argumentsText(args: unknown): string {
  let text: string;
  try {
    text = typeof args === 'string' ? args : JSON.stringify(args);
  } catch {
    text = String(args);
  }
  return cap(text ?? '', CAPS.toolText).text;
}

export function toolCalls(steps: readonly AgentToolStep[] | undefined): ToolCallDetail[] {
  return (steps ?? []).map((s) => {
    const args = cap(s.input, CAPS.toolText);
    const result = cap(s.output, CAPS.toolText);
    return { tool: s.tool, arguments: args.text, outcome: s.outcome, result: result.text, at: s.at, truncated: args.truncated || result.truncated };
  });
}

export function executionDetail(r: ExecutionRecord | undefined): ExecutionDetail | null {
  return r
    ? {
        mode: r.mode,
        purpose: r.purpose,
        answer: r.answer,
        calls: r.calls,
        tool_calls: r.tool_calls,
        run_id: r.run_id,
        taken_over_from: r.taken_over_from ?? null,
      }
    : null;
}

/** An execution's record from the ledger's figures of its runs, its tool steps and its answer (capped). */
export function executionRecord(o: {
  mode: ExecMode;
  purpose: string;
  model: string | null;
  usage: { calls: number; input: number; output: number; latency_ms: number };
  steps: readonly AgentToolStep[];
  runId: string | null;
  from: string | null;
  answer: string | null;
}): ExecutionRecord {
  return {
    mode: o.mode,
    purpose: o.purpose,
    answer: capText(o.answer, CAPS.answer),
    calls: { model: o.model, calls: o.usage.calls, input_tokens: o.usage.input, output_tokens: o.usage.output, latency_ms: o.usage.latency_ms },
    tool_calls: toolCalls(o.steps),
    run_id: o.runId,
    taken_over_from: o.from,
  };
}
