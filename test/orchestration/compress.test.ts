/**
 * 20:1 compression: the budget rule, the floor, "never longer than the input", and the
 * one-call-then-cut path, with summarisers that really return what the test says.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/llm/index.js';
import {
  COMPRESSION_RATIO,
  SUMMARY_FLOOR_TOKENS,
  MIN_SUMMARY_TOKENS,
  compress,
  compressionBudget,
  extractiveSummarizer,
  truncateProportionally,
  type SummarizeRequest,
} from '../../src/orchestration/index.js';

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i % 97}`).join(' ');
const textOfTokens = (tokens: number) => 'abcd'.repeat(tokens);

describe('compressionBudget', () => {
  it('is strictly 20:1 above the floor (never rounded up)', () => {
    expect(COMPRESSION_RATIO).toBe(20);
    expect(compressionBudget(4000)).toBe(200);
    expect(compressionBudget(4019)).toBe(200);
    expect(compressionBudget(4020)).toBe(201);
    expect(compressionBudget(20_000)).toBe(1000);
    fc.assert(
      fc.property(fc.integer({ min: SUMMARY_FLOOR_TOKENS * COMPRESSION_RATIO, max: 10_000_000 }), (n) => {
        expect(compressionBudget(n)).toBe(Math.floor(n / COMPRESSION_RATIO));
      }),
    );
  });

  it('below the floor a record is at most halved and never cut below 40 tokens of meaning', () => {
    expect(SUMMARY_FLOOR_TOKENS).toBe(200);
    expect(MIN_SUMMARY_TOKENS).toBe(40);
    // The audit's case: an 85-token cycle got 4 tokens (20:1); now 43.
    expect(compressionBudget(85)).toBe(43);
    expect(compressionBudget(150)).toBe(75);
    expect(compressionBudget(400)).toBe(200);
    expect(compressionBudget(3999)).toBe(200);
    // 40 tokens or fewer: the record is its own summary (budget ≥ input).
    expect(compressionBudget(40)).toBe(40);
    expect(compressionBudget(1)).toBe(40);
    expect(compressionBudget(0)).toBe(40);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), (n) => {
        const b = compressionBudget(n);
        expect(b).toBeGreaterThanOrEqual(Math.floor(n / COMPRESSION_RATIO));
        expect(b).toBeGreaterThanOrEqual(Math.min(SUMMARY_FLOOR_TOKENS, MIN_SUMMARY_TOKENS));
        if (n > MIN_SUMMARY_TOKENS * 2) expect(b).toBeLessThan(n); // compressive wherever a call is made
        if (n >= 2 * MIN_SUMMARY_TOKENS) expect(b).toBeGreaterThanOrEqual(Math.min(SUMMARY_FLOOR_TOKENS, Math.ceil(n / 2)));
      }),
    );
  });
});

describe('compress', () => {
  it('accepts a summary within 1.5× budget on the first call', async () => {
    const calls: SummarizeRequest[] = [];
    const text = textOfTokens(10_000); // budget 500
    const r = await compress(text, async (req) => {
      calls.push(req);
      return textOfTokens(700); // 1.4× budget
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ inputTokens: 10_000, budgetTokens: 500, attempt: 1 });
    expect(r).toMatchObject({ input_tokens: 10_000, budget_tokens: 500, summary_tokens: 700, attempts: 1, truncated: false });
  });

  it('an 85-token record keeps at least 40 tokens of its summary, with one call', async () => {
    const calls: SummarizeRequest[] = [];
    const summary = words(30); // ~50 tokens: within 1.5× of 43
    const r = await compress(textOfTokens(85), async (req) => {
      calls.push(req);
      return summary;
    });
    expect(calls).toHaveLength(1);
    expect(r).toMatchObject({ input_tokens: 85, budget_tokens: 43, summary, attempts: 1, truncated: false });
    expect(r.summary_tokens).toBeGreaterThanOrEqual(40);
  });

  it('cuts an over-budget summary to the budget without asking again', async () => {
    const calls: number[] = [];
    const long = words(2000); // ~2.4k tokens
    const r = await compress(textOfTokens(10_000), async (req) => {
      calls.push(req.attempt);
      return long;
    });
    expect(calls).toEqual([1]);
    expect(r.truncated).toBe(true);
    expect(r.attempts).toBe(1);
    expect(r.summary_tokens).toBeLessThanOrEqual(500);
    expect(r.summary_tokens).toBeGreaterThan(450); // cut to the budget, not to nothing
    expect(long.startsWith(r.summary.slice(0, -1).trimEnd())).toBe(true);
    expect(r.summary.endsWith('…')).toBe(true);
  });

  it('never keeps a summary longer than its input, even within 1.5× budget', async () => {
    // 300 tokens in: budget 150; a 320-token summary is longer than the input: cut, not kept.
    const text = textOfTokens(300); // budget 150: 1.5× is 225
    const r = await compress(text, async () => textOfTokens(320));
    expect(r.budget_tokens).toBe(150);
    expect(r.attempts).toBe(1);
    expect(r.truncated).toBe(true);
    expect(r.summary_tokens).toBeLessThanOrEqual(150);
    fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6000 }), fc.integer({ min: 0, max: 9000 }), async (inTokens, outTokens) => {
        const c = await compress(textOfTokens(inTokens), async () => textOfTokens(outTokens));
        expect(c.summary_tokens).toBeLessThanOrEqual(c.input_tokens);
        expect(c.summary_tokens).toBeLessThanOrEqual(Math.floor(c.budget_tokens * 1.5));
      }),
      { numRuns: 200 },
    );
  });

  it('an empty answer is replaced by the extractive summary of the record, without a second call', async () => {
    const text = ['cycle 3 on slack: refund for acme', `reply: ${words(3000)}`, 'gate: forwarded (escalation)'].join('\n');
    let calls = 0;
    const r = await compress(text, async () => {
      calls++;
      return '   ';
    });
    expect(calls).toBe(1);
    expect(r).toMatchObject({ attempts: 1, truncated: true });
    expect(r.summary.startsWith('cycle 3 on slack: refund for acme; gate: forwarded (escalation)')).toBe(true);
    expect(r.summary_tokens).toBeLessThanOrEqual(r.budget_tokens);
  });

  it('makes no call for an empty or one-token record', async () => {
    let calls = 0;
    const count = async () => {
      calls++;
      return 'x';
    };
    expect(await compress('', count)).toMatchObject({ summary: '', attempts: 0 });
    expect(await compress('ok', count)).toMatchObject({ summary: 'ok', attempts: 0, summary_tokens: 1 });
    expect(calls).toBe(0);
  });

  it('the offline summariser is within budget by construction and puts the header first', async () => {
    const text = ['response: sure thing', `reply: ${words(400)}`, 'gate: held 1 diff (forwards at 3)', 'cycle 7 on slack: hello there'].join('\n');
    const budget = 30;
    const out = await extractiveSummarizer({ text, inputTokens: estimateTokens(text), budgetTokens: budget, attempt: 1 });
    expect(estimateTokens(out)).toBeLessThanOrEqual(budget);
    expect(out.startsWith('cycle 7 on slack: hello there; gate: held 1 diff')).toBe(true);
  });

  it('truncateProportionally keeps the budget share at a word boundary', () => {
    const text = words(100); // ~173 tokens
    const cut = truncateProportionally(text, 50);
    expect(estimateTokens(cut)).toBeLessThanOrEqual(50);
    expect(cut.endsWith('…')).toBe(true);
    expect(text.startsWith(cut.slice(0, -1))).toBe(true);
    expect(text[cut.length - 1]).toBe(' '); // cut before a space, not inside a word
    expect(truncateProportionally('short', 50)).toBe('short');
  });
});
