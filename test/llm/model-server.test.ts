/**
 * The scripted model server speaks the wire protocol the AI SDK's openai-compatible provider
 * expects: plain and streamed completions, usage chunks, tool calls and multi-step loops.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startModelServer, unreachableBaseUrl, type ModelServer } from '../support/model-server.js';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

function model(includeUsage = true) {
  return createOpenAICompatible({ name: 'scripted', baseURL: server.baseUrl, includeUsage })('scripted-model');
}

const weather = tool({
  description: 'Weather for a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, forecast: 'sunny' }),
});

describe('scripted model server', () => {
  it('answers a plain completion with scripted usage and records what was sent', async () => {
    server.enqueue({ text: 'hello there', usage: { prompt_tokens: 11, completion_tokens: 3 } });
    const result = await generateText({ model: model(), system: 'be brief', prompt: 'hi', maxOutputTokens: 50, temperature: 0, maxRetries: 0 });
    expect(result.text).toBe('hello there');
    expect(result.usage.inputTokens).toBe(11);
    expect(result.usage.outputTokens).toBe(3);
    const sent = server.chatRequests[0]!.body!;
    expect(sent.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ]);
    expect(sent.max_tokens).toBe(50);
    expect(sent.temperature).toBe(0);
    expect(sent.stream).toBeFalsy();
  });

  it('omits usage when told to', async () => {
    server.enqueue({ json: { ok: true }, usage: null });
    const result = await generateText({ model: model(), prompt: 'x', maxRetries: 0 });
    expect(JSON.parse(result.text)).toEqual({ ok: true });
    expect(result.usage.inputTokens).toBeUndefined();
  });

  it('streams text in pieces with a usage chunk only when the client asks for it', async () => {
    server.enqueue({ text: 'a fairly long streamed answer, in several pieces', usage: { prompt_tokens: 7, completion_tokens: 12 } });
    const withUsage = streamText({ model: model(true), prompt: 'go', maxRetries: 0 });
    expect(await withUsage.text).toBe('a fairly long streamed answer, in several pieces');
    expect((await withUsage.usage).outputTokens).toBe(12);
    expect(server.chatRequests[0]!.body!.stream_options).toEqual({ include_usage: true });

    server.enqueue({ text: 'no usage asked', usage: { prompt_tokens: 7, completion_tokens: 12 } });
    const without = streamText({ model: model(false), prompt: 'go', maxRetries: 0 });
    expect(await without.text).toBe('no usage asked');
    expect((await without.usage).outputTokens).toBeUndefined();
  });

  it.each([false, true])('drives a multi-step tool loop (stream=%s); tool results come back as role tool', async (stream) => {
    server.enqueue({ toolCalls: [{ name: 'weather', arguments: { city: 'Lisbon' }, id: 'call_w1' }] }, { text: 'It is sunny in Lisbon.' });
    const args = { model: model(), tools: { weather }, stopWhen: stepCountIs(3), prompt: 'weather in Lisbon?', maxRetries: 0 };
    const text = stream ? await streamText(args).text : (await generateText(args)).text;
    expect(text).toBe('It is sunny in Lisbon.');
    expect(server.chatRequests).toHaveLength(2);
    const first = server.chatRequests[0]!.body!;
    expect(first.tools?.map((t) => t.function.name)).toEqual(['weather']);
    const second = server.chatRequests[1]!.body!.messages!;
    const assistant = second.find((m) => m.role === 'assistant')!;
    expect(assistant.tool_calls?.[0]).toMatchObject({ id: 'call_w1', function: { name: 'weather' } });
    const toolMessage = second.find((m) => m.role === 'tool')!;
    expect(toolMessage.tool_call_id).toBe('call_w1');
    expect(JSON.parse(String(toolMessage.content))).toEqual({ city: 'Lisbon', forecast: 'sunny' });
  });

  it('sends faults with their status, message and Retry-After', async () => {
    server.enqueue({ status: 429, retryAfter: 7, message: 'slow down' });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toMatchObject({ error: { message: 'slow down' } });
  });

  it('fails loudly when nothing was scripted, and uses the handler as the default', async () => {
    await expect(generateText({ model: model(), prompt: 'x', maxRetries: 0 })).rejects.toThrow(/no scripted reply/);
    server.handle((req) => ({ text: `echo ${req.body!.messages!.length}` }));
    expect((await generateText({ model: model(), prompt: 'x', maxRetries: 0 })).text).toBe('echo 1');
  });

  it('answers late when told to, and a delay alone is an empty answer', async () => {
    server.enqueue({ text: 'late', delayMs: 30 }, { delayMs: 10 });
    expect((await generateText({ model: model(), prompt: 'x', maxRetries: 0 })).text).toBe('late');
    expect((await generateText({ model: model(), prompt: 'x', maxRetries: 0 })).text).toBe('');
    expect(server.pending).toBe(0);
  });

  it('returns an invalid body for malformed replies', async () => {
    server.enqueue({ malformed: true });
    await expect(generateText({ model: model(), prompt: 'x', maxRetries: 0 })).rejects.toThrow();
  });

  it('hangs until the client aborts, and records the abort', async () => {
    server.enqueue({ hang: true });
    await expect(generateText({ model: model(), prompt: 'x', maxRetries: 0, abortSignal: AbortSignal.timeout(200) })).rejects.toThrow();
    await expect.poll(() => server.chatRequests[0]!.aborted).toBe(true);
  });

  it('lists models, and a closed server refuses connections', async () => {
    const list = (await (await fetch(`${server.baseUrl}/models`)).json()) as { data: Array<{ id: string }> };
    expect(list.data.map((m) => m.id)).toEqual(['scripted-model']);
    const url = server.baseUrl;
    await server.close();
    await expect(fetch(`${url}/models`)).rejects.toThrow();
    await expect(fetch(`${await unreachableBaseUrl()}/models`)).rejects.toThrow();
  });
});
