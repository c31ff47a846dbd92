/**
 * Issue 9 §2: a model reply over a sane size is cut with a note (`MAX_REPLY_CHARS`, 32,000
 * characters), through the real model layer and the scripted server over HTTP. Structured
 * replies are not cut (they are parsed whole and fail closed).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAX_REPLY_CHARS, capReply } from '../../src/llm/index.js';
import { ledgerRows, openRig, type Rig } from './setup.js';

const ctx = { world: 'tasks', purpose: 'execute', role: 'local' as const };

let rig: Rig;
beforeEach(async () => {
  rig = await openRig();
});
afterEach(async () => {
  await rig.dispose();
});

describe('reply size cap', () => {
  it('cuts a 1 MB text reply to 32,000 characters and says so; the ledger still counts the whole reply', async () => {
    const long = 'all work and no play. '.repeat(50_000); // 1.1 MB
    rig.server.enqueue({ text: long, usage: { prompt_tokens: 10, completion_tokens: 275_000 } });
    const { text, usage } = await rig.llm.text(ctx, { prompt: 'Write the digest.' });
    expect(text.startsWith(long.slice(0, MAX_REPLY_CHARS))).toBe(true);
    expect(text).toMatch(/\n\n\[reply cut: the model wrote 1,100,000 characters; only the first 32,000 are kept \(1,068,000 dropped\)\]$/);
    expect(text.length).toBeLessThan(MAX_REPLY_CHARS + 200);
    expect(usage.outputTokens).toBe(275_000);
    expect((await ledgerRows(rig))[0]).toMatchObject({ outcome: 'ok', output_tokens: 275_000 });
  });

  it('leaves a reply at the limit as it is', async () => {
    const exact = 'x'.repeat(MAX_REPLY_CHARS);
    rig.server.enqueue({ text: exact });
    expect((await rig.llm.text(ctx, { prompt: 'p' })).text).toBe(exact);
  });

  it('never splits a surrogate pair', () => {
    const cut = capReply(`${'a'.repeat(9)}😀tail`, 10);
    expect(cut.startsWith('a'.repeat(9) + '\n\n[reply cut')).toBe(true);
    expect(cut).toMatch(/only the first 9 are kept/);
  });

  it('does not cut structured replies (parsed whole)', async () => {
    const note = 'n'.repeat(MAX_REPLY_CHARS + 10);
    rig.server.enqueue({ json: { note } });
    const { value } = await rig.llm.object(ctx, { prompt: 'p', schema: z.object({ note: z.string() }) });
    expect(value.note).toBe(note);
  });
});
