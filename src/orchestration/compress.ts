/**
 * 20:1 compression of a cycle's execution record (seed 4: the steering world reads "the 20:1
 * compressed execution history").
 *
 *   budget = max(1, ⌊input / 20⌋) tokens — strictly 20:1, never rounded up;
 *   a 200-token floor lifts the budget only where it is still compressive (input > 200 tokens),
 *   so a short record is never "summarised" into something as long as itself;
 *   a summary is never longer than its input;
 *   a summary over 1.5× budget (or longer than its input) is retried once, then cut
 *   proportionally to the budget.
 *
 * Tokens are counted as the ledger estimates them: 4 characters each.
 */
import { estimateTokens } from '../llm/fence.js';
import type { CompressedSummary } from './types.js';

export const COMPRESSION_RATIO = 20;
export const SUMMARY_FLOOR_TOKENS = 200;
/** A summary up to this multiple of its budget is accepted as is. */
export const SUMMARY_TOLERANCE = 1.5;

export function compressionBudget(inputTokens: number): number {
  const input = Number.isFinite(inputTokens) ? Math.max(0, Math.floor(inputTokens)) : 0;
  const ratio = Math.max(1, Math.floor(input / COMPRESSION_RATIO));
  return input > SUMMARY_FLOOR_TOKENS ? Math.max(ratio, SUMMARY_FLOOR_TOKENS) : ratio;
}

export interface SummarizeRequest {
  text: string;
  inputTokens: number;
  budgetTokens: number;
  /** 1, or 2 for the retry after an over-long summary. */
  attempt: 1 | 2;
  /** The over-long first summary's tokens (attempt 2). */
  previousTokens?: number | undefined;
}

/** Produces a summary; the live one asks the local model, the offline one is deterministic. */
export type Summarizer = (req: SummarizeRequest) => Promise<string>;

/** Compress `text` with `summarize`, enforcing the budget rules above. */
export async function compress(text: string, summarize: Summarizer): Promise<CompressedSummary> {
  const inputTokens = estimateTokens(text);
  const budget = compressionBudget(inputTokens);
  if (inputTokens === 0) return { input_tokens: 0, budget_tokens: budget, summary: '', summary_tokens: 0, attempts: 0, truncated: false };
  if (inputTokens <= budget) {
    // Nothing to gain: a one-token record is its own summary.
    return { input_tokens: inputTokens, budget_tokens: budget, summary: text, summary_tokens: inputTokens, attempts: 0, truncated: false };
  }
  const fits = (s: string) => s.length > 0 && estimateTokens(s) <= Math.min(budget * SUMMARY_TOLERANCE, inputTokens);

  let summary = (await summarize({ text, inputTokens, budgetTokens: budget, attempt: 1 })).trim();
  let attempts = 1;
  if (!fits(summary)) {
    const previousTokens = estimateTokens(summary);
    summary = (await summarize({ text, inputTokens, budgetTokens: budget, attempt: 2, previousTokens })).trim();
    attempts = 2;
  }
  let truncated = false;
  if (!fits(summary)) {
    // An empty answer twice: keep the head of the record itself rather than nothing.
    summary = truncateProportionally(summary.length > 0 ? summary : text, budget);
    truncated = true;
  }
  return { input_tokens: inputTokens, budget_tokens: budget, summary, summary_tokens: estimateTokens(summary), attempts, truncated };
}

/**
 * Keep the share `budget / tokens` of the text (so a summary twice its budget keeps half), at most
 * `budget` tokens, cut at a word boundary where one is near, with an ellipsis.
 */
export function truncateProportionally(text: string, budgetTokens: number): string {
  const budget = Math.max(1, Math.floor(budgetTokens));
  const tokens = estimateTokens(text);
  if (tokens <= budget) return text;
  const maxChars = Math.min(Math.floor((text.length * budget) / tokens), budget * 4);
  if (maxChars <= 1) return text.slice(0, Math.max(0, maxChars));
  const head = text.slice(0, maxChars - 1);
  const space = head.search(/\s\S*$/);
  const cut = space > head.length / 2 ? head.slice(0, space) : head;
  return `${cut.trimEnd()}…`;
}

/**
 * The offline summariser: deterministic and extractive. Lines are taken in order of importance
 * (the header first, then gate, escalation, diffs, response), each shortened, until the budget is
 * used; it never exceeds the budget, so it never needs the retry.
 */
export const extractiveSummarizer: Summarizer = async ({ text, budgetTokens }) => {
  const maxChars = budgetTokens * 4;
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const rank = (line: string): number => {
    if (/^cycle /i.test(line)) return 0;
    if (/^(escalation|gate|eviction)/i.test(line)) return 1;
    if (/^(diff|instruction)/i.test(line)) return 2;
    if (/^(reply|response)/i.test(line)) return 3;
    return 4;
  };
  const ordered = lines.map((line, i) => ({ line, i, r: rank(line) })).sort((a, b) => a.r - b.r || a.i - b.i);
  let out = '';
  for (const { line } of ordered) {
    const sep = out ? '; ' : '';
    const room = maxChars - out.length - sep.length;
    if (room <= 8) break;
    out += sep + (line.length <= room ? line : truncateProportionally(line, Math.floor(room / 4)));
  }
  return out.length <= maxChars ? out : out.slice(0, maxChars);
};
