/**
 * 20:1 compression of a cycle's execution record (seed 4: the steering world reads "the 20:1
 * compressed execution history") — by ratio only where the ratio leaves something to read:
 *
 *   budget = max(⌊input / 20⌋, min(200, max(40, ⌈input / 2⌉))) tokens: 20:1 above the 200-token
 *   floor (inputs from 4000 tokens); below it a record is at most halved and never cut below
 *   40 tokens of meaning (an 85-token cycle gets 43, not 4); a record of 40 tokens or fewer is
 *   its own summary (no call);
 *   one model call at most per cycle: a summary over 1.5× budget (or longer than its input) is
 *   cut proportionally to the budget, an empty one is replaced by the extractive summary of
 *   the record itself — never asked again;
 *   a summary is never longer than its input.
 *
 * Tokens are counted as the ledger estimates them: 4 characters each.
 */
import { estimateTokens } from '../llm/fence.js';
import type { CompressedSummary } from './types.js';

export const COMPRESSION_RATIO = 20;
/** Inputs from `SUMMARY_FLOOR_TOKENS × COMPRESSION_RATIO` tokens are compressed strictly 20:1. */
export const SUMMARY_FLOOR_TOKENS = 200;
/** No summary is asked for fewer tokens than this: below it a record is kept as it is. */
export const MIN_SUMMARY_TOKENS = 40;
/** A summary up to this multiple of its budget is accepted as is. */
export const SUMMARY_TOLERANCE = 1.5;

export function compressionBudget(inputTokens: number): number {
  const input = Number.isFinite(inputTokens) ? Math.max(0, Math.floor(inputTokens)) : 0;
  const floor = Math.min(SUMMARY_FLOOR_TOKENS, Math.max(MIN_SUMMARY_TOKENS, Math.ceil(input / 2)));
  return Math.max(Math.floor(input / COMPRESSION_RATIO), floor);
}

export interface SummarizeRequest {
  text: string;
  inputTokens: number;
  budgetTokens: number;
  /** Always 1: one call per cycle (kept for summarisers written against the two-call rule). */
  attempt: 1;
}

/** Produces a summary; the live one asks the local model, the offline one is deterministic. */
export type Summarizer = (req: SummarizeRequest) => Promise<string>;

/** Compress `text` with `summarize` (called at most once), enforcing the budget rules above. */
export async function compress(text: string, summarize: Summarizer): Promise<CompressedSummary> {
  const inputTokens = estimateTokens(text);
  const budget = compressionBudget(inputTokens);
  if (inputTokens === 0) return { input_tokens: 0, budget_tokens: budget, summary: '', summary_tokens: 0, attempts: 0, truncated: false };
  if (inputTokens <= budget) {
    // Nothing to gain: a record this short is its own summary.
    return { input_tokens: inputTokens, budget_tokens: budget, summary: text, summary_tokens: inputTokens, attempts: 0, truncated: false };
  }
  const fits = (s: string) => s.length > 0 && estimateTokens(s) <= Math.min(budget * SUMMARY_TOLERANCE, inputTokens);
  const request: SummarizeRequest = { text, inputTokens, budgetTokens: budget, attempt: 1 };
  let summary = (await summarize(request)).trim();
  let truncated = false;
  if (!fits(summary)) {
    // An empty answer: the record's own extractive summary rather than nothing; an over-long one: cut.
    summary = summary.length > 0 ? truncateProportionally(summary, budget) : await extractiveSummarizer(request);
    truncated = true;
  }
  return { input_tokens: inputTokens, budget_tokens: budget, summary, summary_tokens: estimateTokens(summary), attempts: 1, truncated };
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
