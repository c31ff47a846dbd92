/**
 * 20:1 compression: the budget rule, the floor, "never longer than the input", and the
 * retry-once-then-truncate path, with summarisers that really return what the test says.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/llm/index.js';
import {
  COMPRESSION_RATIO,
  SUMMARY_FLOOR_TOKENS,
  compress,
  compressionBudget,
  extractiveSummarizer,
  truncateProportionally,
  type SummarizeRequest,
} from '../../src/orchestration/index.js';

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i % 97}`).join(' ');
const textOfTokens = (tokens: number) => 'abcd'.repeat(tokens);

describe('compressionBudget', () => {
  it('is strictly 20:1 where the floor does not apply (never rounded up)', () => {
    expect(COMPRESSION_RATIO).toBe(20);
    expect(compressionBudget(4000)).toBe(200);
    expect(compressionBudget(4019)).toBe(200);
    expect(compressionBudget(4020)).toBe(201);
    expect(compressionBudget(20_000)).toBe(1000);
    expect(compressionBudget(200)).toBe(10);
    expect(compressionBudget(39)).toBe(1);
    expect(compressionBudget(40)).toBe(2);
    expect(compressionBudget(1)).toBe(1);
    expect(compressionBudget(0)).toBe(1);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (n) => {
        const b = compressionBudget(n);
        if (n <= SUMMARY_FLOOR_TOKENS || n >= SUMMARY_FLOOR_TOKENS * COMPRESSION_RATIO) {
          expect(b).toBe(Math.max(1, Math.floor(n / COMPRESSION_RATIO)));
        }
      }),
    );
  });

  it('applies the 200-token floor only where it is still compressive', () => {
    expect(SUMMARY_FLOOR_TOKENS).toBe(200);
    // Above the floor, up to 4000 tokens, the floor lifts the 20:1 budget — still below the input.
    expect(compressionBudget(201)).toBe(200);
    expect(compressionBudget(1000)).toBe(200);
    expect(compressionBudget(3999)).toBe(200);
    // At or below 200 tokens a 200-token budget would not compress at all: 20:1 holds.
    expect(compressionBudget(150)).toBe(7);
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 1_000_000 }), (n) => {
        const b = compressionBudget(n);
        expect(b).toBeLessThan(n); // always compressive
        expect(b).toBeGreaterThanOrEqual(Math.floor(n / COMPRESSION_RATIO));
        if (n > SUMMARY_FLOOR_TOKENS) expect(b).toBeGreaterThanOrEqual(SUMMARY_FLOOR_TOKENS);
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

  it('retries an over-budget summary once, and keeps the retry when it fits', async () => {
    const calls: SummarizeRequest[] = [];
    const r = await compress(textOfTokens(10_000), async (req) => {
      calls.push(req);
      return req.attempt === 1 ? textOfTokens(751) : textOfTokens(480);
    });
    expect(calls.map((c) => [c.attempt, c.previousTokens])).toEqual([
      [1, undefined],
      [2, 751],
    ]);
    expect(r).toMatchObject({ summary_tokens: 480, attempts: 2, truncated: false });
  });

  it('truncates proportionally when the retry is still over budget', async () => {
    const calls: number[] = [];
    const long = words(2000); // ~2.4k tokens
    const r = await compress(textOfTokens(10_000), async (req) => {
      calls.push(req.attempt);
      return long;
    });
    expect(calls).toEqual([1, 2]);
    expect(r.truncated).toBe(true);
    expect(r.attempts).toBe(2);
    expect(r.summary_tokens).toBeLessThanOrEqual(500);
    expect(r.summary_tokens).toBeGreaterThan(450); // cut to the budget, not to nothing
    expect(long.startsWith(r.summary.slice(0, -1).trimEnd())).toBe(true);
    expect(r.summary.endsWith('…')).toBe(true);
  });

  it('never keeps a summary longer than its input, even within 1.5× budget', async () => {
    // 220 tokens in: budget 200 by the floor; a 290-token summary is within 1.5× but longer than the input.
    const text = textOfTokens(220);
    const r = await compress(text, async () => textOfTokens(290));
    expect(r.budget_tokens).toBe(200);
    expect(r.attempts).toBe(2);
    expect(r.truncated).toBe(true);
    expect(r.summary_tokens).toBeLessThanOrEqual(200);
    fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6000 }), fc.integer({ min: 0, max: 9000 }), async (inTokens, outTokens) => {
        const c = await compress(textOfTokens(inTokens), async () => textOfTokens(outTokens));
        expect(c.summary_tokens).toBeLessThanOrEqual(c.input_tokens);
        expect(c.summary_tokens).toBeLessThanOrEqual(Math.floor(c.budget_tokens * 1.5));
      }),
      { numRuns: 200 },
    );
  });

  it('falls back to the head of the record when the summariser answers nothing twice', async () => {
    const text = words(3000);
    const r = await compress(text, async () => '   ');
    expect(r.attempts).toBe(2);
    expect(r.truncated).toBe(true);
    expect(r.summary.length).toBeGreaterThan(0);
    expect(text.startsWith(r.summary.slice(0, -1).trimEnd())).toBe(true);
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
