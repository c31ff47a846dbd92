/**
 * `createLlm` against the scripted server over real HTTP with the real AI SDK: text and object
 * calls, usage and estimates, fail-closed parsing, every error kind, and the ledger row of each.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isModelError, type ModelError } from '../../src/llm/index.js';
import { ledgerRows, openRig, settle, untilSleeping, type Rig } from './setup.js';

const ctx = { world: 'tasks', purpose: 'evaluate', role: 'local' as const };
const verdict = z.object({ verdict: z.enum(['noop', 'act', 'escalate']), reason: z.string() });

let rig: Rig;
let n = 0;
const sequential = () => () => `pinned-${++n}`;
beforeEach(async () => {
  rig = await openRig();
});
afterEach(async () => {
  await rig.dispose();
});

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const result = await settle(promise);
  if (result.ok) throw new Error('expected the call to fail');
  expect(isModelError(result.error)).toBe(true);
  return result.error as ModelError;
}

describe('text()', () => {
  it('sends system, prompt, max_tokens and temperature, and records the server usage', async () => {
    rig.server.enqueue({ text: 'all quiet', usage: { prompt_tokens: 42, completion_tokens: 5 } });
    const result = await rig.llm.text(ctx, { system: 'You evaluate tasks.', prompt: 'Anything due?', maxOutputTokens: 180, temperature: 0 });
    expect(result).toEqual({ text: 'all quiet', usage: { inputTokens: 42, outputTokens: 5, estimated: false } });

    const sent = rig.server.chatRequests[0]!.body!;
    expect(sent.model).toBe('local-model');
    expect(sent.messages).toEqual([
      { role: 'system', content: 'You evaluate tasks.' },
      { role: 'user', content: 'Anything due?' },
    ]);
    expect(sent.max_tokens).toBe(180);
    expect(sent.temperature).toBe(0);

    const rows = await ledgerRows(rig);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: 'call-1',
      at: rig.clock.now(),
      world: 'tasks',
      purpose: 'evaluate',
      role: 'local',
      model: 'local-model',
      input_tokens: 42,
      output_tokens: 5,
      estimated: 0,
      outcome: 'ok',
      error: null,
    });
    expect(Number(rows[0]!.latency_ms)).toBeGreaterThanOrEqual(0);
  });

  it('estimates tokens at 4 chars/token and flags them when the server sends no usage', async () => {
    rig.server.enqueue({ text: 'abcdefghij', usage: null });
    const result = await rig.llm.text(ctx, { system: 'sys', prompt: 'hello world' });
    // input: "sys" + "hello world" = 14 chars → 4 tokens; output: 10 chars → 3 tokens
    expect(result.usage).toEqual({ inputTokens: 4, outputTokens: 3, estimated: true });
    const [row] = await ledgerRows(rig);
    expect(row).toMatchObject({ input_tokens: 4, output_tokens: 3, estimated: 1, outcome: 'ok' });
  });

  it('sends the agent role to its model with its API key', async () => {
    rig.server.enqueue({ text: 'ok' });
    await rig.llm.text({ ...ctx, role: 'agent' }, { prompt: 'x' });
    expect(rig.server.chatRequests[0]!.body!.model).toBe('agent-model');
    expect(rig.server.chatRequests[0]!.headers.authorization).toBe('Bearer sk-test');
  });

  it('rejects bad input with a typed error naming the field, before any call', async () => {
    await expect(rig.llm.text({ ...ctx, world: '' }, { prompt: 'x' })).rejects.toMatchObject({ code: 'invalid_params', details: { field: 'world' } });
    await expect(rig.llm.text(ctx, { prompt: '' })).rejects.toMatchObject({ code: 'invalid_params', details: { field: 'prompt' } });
    await expect(rig.llm.text(ctx, { prompt: 'x', maxOutputTokens: 0 })).rejects.toMatchObject({ details: { field: 'maxOutputTokens' } });
    expect(rig.server.chatRequests).toHaveLength(0);
    expect(await ledgerRows(rig)).toHaveLength(0);
  });
});

describe('object()', () => {
  it('sends the JSON schema in the system prompt and parses a fenced JSON reply', async () => {
    rig.server.enqueue({ text: '```json\n{"verdict": "noop", "reason": "nothing due"}\n```\n' });
    const result = await rig.llm.object(ctx, { system: 'You evaluate tasks.', prompt: 'Evaluate.', schema: verdict });
    expect(result.value).toEqual({ verdict: 'noop', reason: 'nothing due' });
    const system = rig.server.chatRequests[0]!.body!.messages![0]!;
    expect(system.role).toBe('system');
    expect(String(system.content)).toContain('You evaluate tasks.');
    expect(String(system.content)).toContain('"enum":["noop","act","escalate"]');
    expect((await ledgerRows(rig))[0]).toMatchObject({ outcome: 'ok' });
  });

  it('parses a plain JSON reply scripted as json', async () => {
    rig.server.enqueue({ json: { verdict: 'act', reason: 'report is due' } });
    expect((await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: verdict })).value).toEqual({ verdict: 'act', reason: 'report is due' });
  });

  it.each([
    ['prose instead of JSON', 'I think you should probably act on it.'],
    ['broken JSON', '{"verdict": "act", "reason": '],
    ['JSON of the wrong shape', '{"verdict": "maybe", "reason": "unsure"}'],
    ['two JSON values', '{"verdict": "act", "reason": "due"} {"verdict": "noop", "reason": "no"}'],
  ])('fails closed on %s after one repair call: malformed, each call a ledger row', async (_name, reply) => {
    rig.server.enqueue(
      { text: reply, usage: { prompt_tokens: 30, completion_tokens: 9 } },
      { text: reply, usage: { prompt_tokens: 40, completion_tokens: 9 } },
    );
    const error = await failure(rig.llm.object(ctx, { prompt: 'Evaluate.', schema: verdict }));
    expect(error.kind).toBe('malformed');
    expect(error.code).toBe('model_malformed');
    expect(error.message).toContain(JSON.stringify(reply).slice(1, 20));
    const rows = await ledgerRows(rig);
    expect(rows.map((r) => [r.purpose, r.outcome])).toEqual([
      ['evaluate', 'malformed'],
      ['evaluate_repair', 'malformed'],
    ]);
    expect(rows[0]).toMatchObject({ input_tokens: 30, output_tokens: 9 });
    expect(rows[0]!.error).toContain('Raw output');
    expect(rig.server.chatRequests).toHaveLength(2); // one repair, never a guess
    const repair = rig.server.chatRequests[1]!.body!.messages!.at(-1)!;
    expect(String(repair.content)).toContain('Your previous reply was not valid JSON for this schema');
    expect(String(repair.content)).not.toContain('Raw output');
  });

  it('takes the repaired answer when the repair call is valid', async () => {
    rig.server.enqueue({ text: 'I think act.' }, { json: { verdict: 'act', reason: 'due' } });
    const result = await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: verdict });
    expect(result.value).toEqual({ verdict: 'act', reason: 'due' });
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['malformed', 'ok']);
  });

  it('makes no repair call when asked not to', async () => {
    rig.server.enqueue({ text: 'nope' });
    expect((await failure(rig.llm.object(ctx, { prompt: 'Evaluate.', schema: verdict, repair: false }))).kind).toBe('malformed');
    expect(rig.server.chatRequests).toHaveLength(1);
  });

  it('takes the one JSON value out of prose around a fenced block', async () => {
    rig.server.enqueue({ text: 'Here you go:\n```json\n{"verdict": "noop", "reason": "nothing due",}\n```\nHope that helps.' });
    expect((await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: verdict })).value).toEqual({ verdict: 'noop', reason: 'nothing due' });
  });

  it('a wire response that is not JSON is malformed too', async () => {
    rig.server.enqueue({ malformed: true });
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error.kind).toBe('malformed');
    expect((await ledgerRows(rig))[0]).toMatchObject({ outcome: 'malformed' });
  });
});

describe('structured output, max_tokens and truncation', () => {
  const strictVerdict = z.object({ verdict: z.enum(['noop', 'act']), reason: z.string() });
  const looseVerdict = z.object({ verdict: z.enum(['noop', 'act']), reason: z.string().optional() });

  it('sends the schema as response_format json_schema, strict when every field is required', async () => {
    rig.server.enqueue({ json: { verdict: 'act', reason: 'due' } }, { json: { verdict: 'act' } });
    await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict });
    await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: looseVerdict });
    const [strict, loose] = rig.server.chatRequests.map(
      (r) => r.body!.response_format as { type: string; json_schema: { strict: boolean; schema: { properties: object } } },
    );
    expect(strict).toMatchObject({ type: 'json_schema', json_schema: { strict: true, schema: { properties: { verdict: { enum: ['noop', 'act'] } } } } });
    expect(loose).toMatchObject({ type: 'json_schema', json_schema: { strict: false } });
    expect(rig.llm.structuredOutput!('local')).toEqual({ configured: 'auto', in_use: 'json_schema', learned: null });
  });

  it("sends max_tokens on every call: the call's own, else the endpoint's, else 2048", async () => {
    rig.server.handle(() => ({ text: 'ok' }));
    await rig.llm.text(ctx, { prompt: 'x', maxOutputTokens: 99 });
    await rig.llm.text(ctx, { prompt: 'x' });
    const tight = await openRig();
    try {
      tight.server.handle(() => ({ text: 'ok' }));
      const llm = (await import('../../src/llm/index.js')).createLlm({
        models: { ...tight.models, local: { ...tight.models.local, maxTokens: 300 } },
        db: tight.store.db,
        clock: tight.clock,
        ids: () => 'x',
      });
      await llm.text(ctx, { prompt: 'x' });
      expect(tight.server.chatRequests[0]!.body!.max_tokens).toBe(300);
    } finally {
      await tight.dispose();
    }
    expect(rig.server.chatRequests.map((r) => r.body!.max_tokens)).toEqual([99, 2048]);
  });

  it('fails a reply cut at max_tokens closed, naming the key to raise, and never repairs it', async () => {
    rig.server.enqueue({ text: '{"verdict": "act", "reason": "the report is d', finishReason: 'length' });
    const error = await failure(rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict, maxTokensKey: 'worlds.tasks.max_output_tokens' }));
    expect(error.kind).toBe('truncated');
    expect(error.code).toBe('model_truncated');
    expect(error.message).toContain('the model ran out of tokens'.replace('the', 'The'));
    expect(error.message).toContain('raise `worlds.tasks.max_output_tokens`');
    expect(rig.server.chatRequests).toHaveLength(1);
    expect((await ledgerRows(rig))[0]).toMatchObject({ outcome: 'truncated' });
    // A complete-looking reply cut by the limit is refused too: text() never returns a cut reply.
    rig.server.enqueue({ text: 'Dear team, the report', finishReason: 'length' });
    expect((await failure(rig.llm.text(ctx, { prompt: 'Write.' }))).message).toContain('raise `models.local.max_tokens`');
  });

  it('auto: a server that refuses json_schema gets json_object, then the prompt only; the finding is kept', async () => {
    rig.server.refuseResponseFormat = ['json_schema'];
    rig.server.handle(() => ({ json: { verdict: 'act', reason: 'due' } }));
    expect((await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict })).value.verdict).toBe('act');
    expect(rig.server.chatRequests.map((r) => (r.body!.response_format as { type: string }).type)).toEqual(['json_schema', 'json_object']);
    expect(rig.llm.structuredOutput!('local')).toMatchObject({ configured: 'auto', in_use: 'json_object', learned: { mode: 'json_object' } });
    expect(rig.llm.structuredOutput!('local').learned!.reason).toContain('not supported');
    // Learned once: the next call goes straight to json_object; one ledger row per call.
    await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict });
    expect(rig.server.chatRequests).toHaveLength(3);
    expect((rig.server.chatRequests[2]!.body!.response_format as { type: string }).type).toBe('json_object');
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['ok', 'ok']);

    rig.server.refuseResponseFormat = ['json_schema', 'json_object'];
    await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict });
    expect(rig.server.chatRequests.at(-1)!.body!.response_format).toBeUndefined();
    expect(rig.llm.structuredOutput!('local').in_use).toBe('off');
    // The other role's endpoint learned nothing.
    expect(rig.llm.structuredOutput!('agent').learned).toBeNull();
  });

  it('auto: what was learned is kept in the store, so a restarted process does not probe again', async () => {
    rig.server.refuseResponseFormat = ['json_schema'];
    rig.server.handle(() => ({ json: { verdict: 'act', reason: 'due' } }));
    await rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict });
    const learned = rig.llm.structuredOutput!('local').learned!;
    // Saved beside the call (a failed write is only logged): wait for the row.
    for (let i = 0; i < 100 && (await rig.store.db.selectFrom('model_structured_output').selectAll().execute()).length === 0; i++)
      await new Promise((r) => setTimeout(r, 5));
    rig.server.reset();
    const restarted = (await import('../../src/llm/index.js')).createLlm({ models: rig.models, db: rig.store.db, clock: rig.clock, ids: sequential() });
    await restarted.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict });
    expect(rig.server.chatRequests.map((r) => (r.body!.response_format as { type: string }).type)).toEqual(['json_object']);
    expect(restarted.structuredOutput!('local')).toEqual({ configured: 'auto', in_use: 'json_object', learned });
    expect(restarted.structuredOutput!('agent').learned).toBeNull();
  });

  it('a pinned mode is sent as set and never falls back', async () => {
    const pinned = (await import('../../src/llm/index.js')).createLlm({
      models: { ...rig.models, local: { ...rig.models.local, structuredOutput: 'json_object' }, agent: { ...rig.models.agent, structuredOutput: 'off' } },
      db: rig.store.db,
      clock: rig.clock,
      ids: sequential(),
    });
    rig.server.handle(() => ({ json: { verdict: 'noop', reason: 'quiet' } }));
    await pinned.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict });
    await pinned.object({ ...ctx, role: 'agent' }, { prompt: 'Evaluate.', schema: strictVerdict });
    expect(rig.server.chatRequests.map((r) => r.body!.response_format)).toEqual([{ type: 'json_object' }, undefined]);
    rig.server.refuseResponseFormat = ['json_object'];
    expect((await failure(pinned.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict }))).kind).toBe('provider');
  });

  it('an HTTP 200 that carries an error fails closed', async () => {
    rig.server.enqueue({ errorBody: 'model overloaded' }, { errorBody: 'model overloaded' });
    const error = await failure(rig.llm.object(ctx, { prompt: 'Evaluate.', schema: strictVerdict }));
    expect(['malformed', 'provider']).toContain(error.kind);
  });
});

describe('rate limits', () => {
  it('retries a 429 three times after 2, 4 and 8 s on the clock; all four attempts are ledger rows', async () => {
    rig.server.enqueue(...Array.from({ length: 4 }, () => ({ status: 429 })));
    const started = rig.clock.now();
    const call = settle(rig.llm.text(ctx, { prompt: 'x' }));
    for (const [i, wait] of [2000, 4000, 8000].entries()) {
      await untilSleeping(rig.clock);
      expect(rig.server.chatRequests).toHaveLength(i + 1);
      await rig.clock.advance(wait - 1);
      expect(rig.clock.pending).toBe(1); // not a millisecond early
      expect(rig.server.chatRequests).toHaveLength(i + 1);
      await rig.clock.advance(1);
    }
    const result = await call;
    expect(result.ok).toBe(false);
    const error = (result as { error: ModelError }).error;
    expect(error.kind).toBe('rate_limit');
    expect(error.message).toContain('gave up after 4 attempts');
    const rows = await ledgerRows(rig);
    expect(rows.map((r) => r.outcome)).toEqual(['rate_limit', 'rate_limit', 'rate_limit', 'rate_limit']);
    expect(rows.map((r) => Number(r.at) - started)).toEqual([0, 2000, 6000, 14000]);
  });

  it('honours Retry-After in seconds, then succeeds', async () => {
    rig.server.enqueue({ status: 429, retryAfter: 3 }, { text: 'done' });
    const call = settle(rig.llm.text(ctx, { prompt: 'x' }));
    await untilSleeping(rig.clock);
    await rig.clock.advance(2999);
    expect(rig.server.chatRequests).toHaveLength(1);
    await rig.clock.advance(1);
    const result = await call;
    expect(result).toMatchObject({ ok: true, value: { text: 'done' } });
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['rate_limit', 'ok']);
  });

  it('honours Retry-After as an HTTP date', async () => {
    rig.server.enqueue({ status: 429, retryAfter: new Date(rig.clock.now() + 5000).toUTCString() }, { text: 'done' });
    const call = settle(rig.llm.text(ctx, { prompt: 'x' }));
    await untilSleeping(rig.clock);
    await rig.clock.advance(4999);
    expect(rig.server.chatRequests).toHaveLength(1);
    await rig.clock.advance(1);
    expect(await call).toMatchObject({ ok: true, value: { text: 'done' } });
  });

  it('retry: false makes one attempt: a 429 fails at once with one ledger row (the pulse)', async () => {
    rig.server.enqueue({ status: 429 }, { text: 'never asked' });
    const error = await failure(rig.llm.text({ ...ctx, retry: false }, { prompt: 'pulse' }));
    expect(error.kind).toBe('rate_limit');
    expect(rig.server.chatRequests).toHaveLength(1);
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['rate_limit']);
  });

  it("a call may name another model on the role's endpoint: sent to the server and written to the ledger", async () => {
    rig.server.enqueue({ text: 'from the bot model' });
    const result = await rig.llm.text({ ...ctx, model: 'bot-model' }, { prompt: 'hi' });
    expect(result.text).toBe('from the bot model');
    expect(rig.server.chatRequests[0]!.body!.model).toBe('bot-model');
    expect((await ledgerRows(rig))[0]).toMatchObject({ role: 'local', model: 'bot-model' });
    await expect(rig.llm.text({ ...ctx, model: ' ' }, { prompt: 'hi' })).rejects.toThrow(/model must be a non-empty model name/);
  });

  it('a Retry-After longer than a minute is not waited for: rate_limit at once', async () => {
    rig.server.enqueue({ status: 429, retryAfter: 3600 });
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error).toMatchObject({ kind: 'rate_limit', retryAfterMs: 3_600_000 });
    expect(rig.clock.pending).toBe(0);
    expect(rig.server.chatRequests).toHaveLength(1);
  });

  it('a cancel while waiting out a 429 ends the call as cancelled', async () => {
    rig.server.enqueue({ status: 429 });
    const controller = new AbortController();
    const call = settle(rig.llm.text({ ...ctx, signal: controller.signal }, { prompt: 'x' }));
    await untilSleeping(rig.clock);
    controller.abort();
    const result = await call;
    expect(result.ok).toBe(false);
    expect((result as { error: ModelError }).error.kind).toBe('cancelled');
    expect(rig.server.chatRequests).toHaveLength(1);
  });

  it('413 is a permanent rate cap, never retried', async () => {
    rig.server.enqueue({ status: 413 });
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error.kind).toBe('rate_cap');
    expect(error.code).toBe('model_rate_cap');
    expect(rig.clock.pending).toBe(0);
    expect(rig.server.chatRequests).toHaveLength(1);
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['rate_cap']);
  });

  it('a 429 whose request exceeds the tokens-per-minute limit is a rate cap, not retried', async () => {
    rig.server.enqueue({
      status: 429,
      retryAfter: 1,
      message:
        'Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 45000. The input or output tokens must be reduced in order to run successfully.',
    });
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error.kind).toBe('rate_cap');
    expect(error.hint).toMatch(/retrying will not help/);
    expect(rig.clock.pending).toBe(0);
    expect(rig.server.chatRequests).toHaveLength(1);
  });
});

describe('other failures', () => {
  it('500 is a provider error with the provider message', async () => {
    rig.server.enqueue({ status: 500, message: 'CUDA out of memory' });
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error.kind).toBe('provider');
    expect(error.status).toBe(500);
    expect(error.message).toContain('CUDA out of memory');
    expect((await ledgerRows(rig))[0]).toMatchObject({ outcome: 'provider', input_tokens: 0, output_tokens: 0 });
    expect((await ledgerRows(rig))[0]!.error).toContain('CUDA out of memory');
  });

  it('a closed server is unreachable, and the message says what to do', async () => {
    await rig.server.close();
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error.kind).toBe('unreachable');
    expect(error.code).toBe('model_unreachable');
    expect(error.message).toContain(rig.models.local.baseUrl);
    expect(error.explain()).toContain('SUBCONSCIOUS_LOCAL_BASE_URL');
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['unreachable']);
  });

  it('a hung call times out after timeoutMs', async () => {
    await rig.dispose();
    rig = await openRig({ timeoutMs: 300 });
    rig.server.enqueue({ hang: true });
    const error = await failure(rig.llm.text(ctx, { prompt: 'x' }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('300 ms');
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['timeout']);
  });

  it("the caller's abort is cancelled, not timeout", async () => {
    rig.server.enqueue({ hang: true });
    const controller = new AbortController();
    const call = settle(rig.llm.text({ ...ctx, signal: controller.signal }, { prompt: 'x' }));
    await expect.poll(() => rig.server.chatRequests.length).toBe(1);
    controller.abort();
    const result = await call;
    expect((result as { error: ModelError }).error.kind).toBe('cancelled');
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['cancelled']);
  });
});

describe('probe, signature, endpoint', () => {
  it('reports an answering endpoint, caches for a few seconds on the clock, then sees it go down', async () => {
    expect(await rig.llm.probe('local')).toEqual({ available: true });
    expect(await rig.llm.probe('local')).toEqual({ available: true });
    expect(rig.server.requests.filter((r) => r.path === '/v1/models')).toHaveLength(1);

    await rig.server.close();
    expect(await rig.llm.probe('local')).toEqual({ available: true }); // still cached
    await rig.clock.advance(5000);
    const down = await rig.llm.probe('local');
    expect(down.available).toBe(false);
    expect(down.reason).toContain('not answering');
    expect(down.reason).toContain('SUBCONSCIOUS_LOCAL_BASE_URL');
    expect(await ledgerRows(rig)).toHaveLength(0); // a probe is not a model call
  });

  it('says when the model is not served or the key is refused', async () => {
    rig.server.models = ['other-model'];
    const missing = await rig.llm.probe('agent');
    expect(missing).toMatchObject({ available: false });
    expect(missing.reason).toContain('"agent-model" is not available');
    expect(missing.reason).toContain('other-model');

    rig.server.modelsFault = { status: 401, message: 'bad key' };
    await rig.clock.advance(5000);
    expect((await rig.llm.probe('agent')).reason).toContain('SUBCONSCIOUS_AGENT_API_KEY');
    expect(rig.server.requests.find((r) => r.path === '/v1/models')!.headers.authorization).toBe('Bearer sk-test');
  });

  it('exposes the endpoint and a signature that changes with base URL or model', () => {
    expect(rig.llm.signature('local')).toBe(`${rig.server.baseUrl}|local-model`);
    expect(rig.llm.endpoint('agent')).toMatchObject({ model: 'agent-model', timeoutMs: 5000 });
    rig.llm.endpoint('agent').model = 'mutated';
    expect(rig.llm.endpoint('agent').model).toBe('agent-model');
  });
});
