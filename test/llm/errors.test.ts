/** Error classification from what providers actually send (statuses, messages, headers). */
import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import { classifyModelError, ModelError, parseRetryAfter } from '../../src/llm/index.js';

function apiError(statusCode: number | undefined, message: string, headers: Record<string, string> = {}, cause?: unknown): APICallError {
  return new APICallError({
    message,
    url: 'http://127.0.0.1:1/v1/chat/completions',
    requestBodyValues: {},
    ...(statusCode === undefined ? {} : { statusCode, responseBody: JSON.stringify({ error: { message } }) }),
    responseHeaders: headers,
    cause,
  });
}

const local = { role: 'local' as const, baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.2', now: Date.UTC(2026, 0, 1) };

describe('classifyModelError', () => {
  it('429 is a transient rate limit carrying Retry-After', () => {
    const error = classifyModelError(apiError(429, 'Rate limit reached', { 'Retry-After': '12' }), local);
    expect(error).toMatchObject({ kind: 'rate_limit', code: 'model_rate_limit', status: 429, retryAfterMs: 12_000, transient: true });
  });

  it("OpenAI's per-minute 429 with Used/Requested under the limit stays transient", () => {
    const msg = 'Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.';
    expect(classifyModelError(apiError(429, msg), local).kind).toBe('rate_limit');
  });

  it('a request larger than the TPM limit, or a 413, is a permanent rate cap', () => {
    const msg = 'Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30,000, Requested 45,000.';
    expect(classifyModelError(apiError(429, msg), local)).toMatchObject({ kind: 'rate_cap', transient: false });
    expect(classifyModelError(apiError(413, 'Payload Too Large'), local).kind).toBe('rate_cap');
  });

  it.each([
    [400, 'registry.ollama.ai/library/gemma:2b does not support tools'],
    [404, 'No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs'],
    [400, 'tool calling is not supported for this model'],
  ])('%i "%s" is no_tools', (status, message) => {
    const error = classifyModelError(apiError(status, message), local);
    expect(error.kind).toBe('no_tools');
    expect(error.message).toContain('pick a tool-capable model');
    expect(error.message).toContain('llama3.2');
  });

  it('a refused connection is unreachable; for Ollama the message says `ollama serve`', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:11434'), { code: 'ECONNREFUSED' });
    const error = classifyModelError(apiError(undefined, 'Cannot connect to API: connect ECONNREFUSED', {}, refused), local);
    expect(error.kind).toBe('unreachable');
    expect(error.message).toBe('Ollama is not answering at http://127.0.0.1:11434/v1.');
    expect(error.hint).toBe('Start it with `ollama serve` or set SUBCONSCIOUS_LOCAL_BASE_URL.');
    // Said once: the explanation people read joins message and hint without repeating the advice.
    expect(error.explain()).toBe('Ollama is not answering at http://127.0.0.1:11434/v1. — Start it with `ollama serve` or set SUBCONSCIOUS_LOCAL_BASE_URL.');
    expect(error.explain().match(/ollama serve/g)).toHaveLength(1);
    const dns = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }) });
    expect(classifyModelError(dns, { role: 'agent', baseUrl: 'https://api.example.test/v1' }).explain()).toContain('SUBCONSCIOUS_AGENT_BASE_URL');
  });

  it('timeouts, aborts and 5xx', () => {
    expect(classifyModelError(new DOMException('t', 'TimeoutError'), local).kind).toBe('timeout');
    expect(classifyModelError(new Error('aborted'), { ...local, timedOut: true, timeoutMs: 8000 }).message).toContain('8000 ms');
    expect(classifyModelError(new DOMException('a', 'AbortError'), local).kind).toBe('cancelled');
    expect(classifyModelError(apiError(502, 'Bad gateway'), local)).toMatchObject({ kind: 'provider', code: 'model_error', status: 502 });
    expect(classifyModelError(apiError(401, 'Invalid API key'), local).hint).toContain('SUBCONSCIOUS_LOCAL_API_KEY');
  });

  it('passes a ModelError through and unwraps RetryError-like wrappers', () => {
    const original = new ModelError('rate_cap', 'too big');
    expect(classifyModelError(original)).toBe(original);
    const wrapper = Object.assign(new Error('Failed after 3 attempts'), { name: 'AI_RetryError', lastError: apiError(413, 'too big') });
    expect(classifyModelError(wrapper).kind).toBe('rate_cap');
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1, 9, 0, 0);
  it('reads seconds and HTTP dates, ignores garbage', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter(new Date(now + 30_000).toUTCString(), now)).toBe(30_000);
    expect(parseRetryAfter(new Date(now - 30_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
