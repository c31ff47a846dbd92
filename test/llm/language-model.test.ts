/**
 * `llm.languageModel()` in the AI SDK's own tool loop (generateText / streamText with tools):
 * every step is one ledger row, usage comes from the server (or is estimated), errors arrive
 * classified, 429s inside a loop are retried on the clock.
 */
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isModelError, type ModelError } from '../../src/llm/index.js';
import { ledgerRows, openRig, settle, untilSleeping, type Rig } from './setup.js';

const ctx = { world: 'heartbeat', purpose: 'resume', role: 'agent' as const };

let rig: Rig;
let calls: string[];
beforeEach(async () => {
  rig = await openRig();
  calls = [];
});
afterEach(async () => {
  await rig.dispose();
});

function tools() {
  return {
    read_file: tool({
      description: 'Read a file from the workspace',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => {
        calls.push(path);
        return { path, content: `contents of ${path}` };
      },
    }),
  };
}

async function run(mode: 'generate' | 'stream', prompt = 'Summarise notes.md and todo.md') {
  const args = { model: rig.llm.languageModel(ctx), tools: tools(), stopWhen: stepCountIs(5), prompt, maxRetries: 0 };
  if (mode === 'generate') return (await generateText(args)).text;
  let streamError: unknown;
  const result = streamText({ ...args, onError: ({ error }) => void (streamError = error) });
  // streamText reports the model's error through onError; `text` then rejects with a generic
  // NoOutputGeneratedError, so the error that says what happened is the one onError saw.
  const text = await Promise.resolve(result.text).catch((err: unknown) => {
    throw streamError ?? err;
  });
  if (streamError) throw streamError;
  return text;
}

describe.each(['generate', 'stream'] as const)('languageModel() with %sText', (mode) => {
  it('writes one ledger row per step of a multi-step tool loop, with the server usage', async () => {
    rig.server.enqueue(
      { toolCalls: [{ name: 'read_file', arguments: { path: 'notes.md' } }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
      { toolCalls: [{ name: 'read_file', arguments: { path: 'todo.md' } }], usage: { prompt_tokens: 150, completion_tokens: 12 } },
      { text: 'Both files are short.', usage: { prompt_tokens: 200, completion_tokens: 6 } },
    );
    expect(await run(mode)).toBe('Both files are short.');
    expect(calls).toEqual(['notes.md', 'todo.md']);

    const rows = await ledgerRows(rig);
    expect(rows.map((r) => [r.world, r.purpose, r.role, r.model, r.outcome, r.input_tokens, r.output_tokens, r.estimated])).toEqual([
      ['heartbeat', 'resume', 'agent', 'agent-model', 'ok', 100, 10, 0],
      ['heartbeat', 'resume', 'agent', 'agent-model', 'ok', 150, 12, 0],
      ['heartbeat', 'resume', 'agent', 'agent-model', 'ok', 200, 6, 0],
    ]);
    const sent = rig.server.chatRequests.map((r) => r.body!);
    expect(sent.every((b) => Boolean(b.stream) === (mode === 'stream'))).toBe(true);
    expect(sent[0]!.tools!.map((t) => t.function.name)).toEqual(['read_file']);
    expect(sent[2]!.messages!.filter((m) => m.role === 'tool')).toHaveLength(2);
  });

  it('estimates and flags a step whose server sent no usage', async () => {
    rig.server.enqueue({ toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }], usage: null }, { text: 'done', usage: null });
    expect(await run(mode)).toBe('done');
    const rows = await ledgerRows(rig);
    expect(rows.map((r) => r.estimated)).toEqual([1, 1]);
    expect(rows.every((r) => Number(r.input_tokens) > 0)).toBe(true);
    expect(Number(rows[1]!.input_tokens)).toBeGreaterThan(Number(rows[0]!.input_tokens)); // the second step read more
    expect(Number(rows[1]!.output_tokens)).toBe(1); // "done" = 4 chars
  });

  it('classifies a model without tool support: no_tools, "pick a tool-capable model"', async () => {
    rig.server.enqueue({ status: 400, message: 'registry.ollama.ai/library/gemma2:2b does not support tools' });
    const result = await settle(run(mode));
    expect(result.ok).toBe(false);
    const error = (result as { error: unknown }).error;
    expect(isModelError(error, 'no_tools')).toBe(true);
    expect((error as ModelError).message).toContain('pick a tool-capable model');
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['no_tools']);
  });

  it('a failing step ends the loop with a classified error and its own row', async () => {
    rig.server.enqueue({ toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] }, { status: 503, message: 'overloaded' });
    const result = await settle(run(mode));
    expect(isModelError((result as { error: unknown }).error, 'provider')).toBe(true);
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['ok', 'provider']);
  });

  it('a 429 inside the loop is retried on the clock; each attempt is a row', async () => {
    rig.server.enqueue({ status: 429, retryAfter: 1 }, { text: 'after the wait' });
    const call = settle(run(mode));
    await untilSleeping(rig.clock);
    await rig.clock.advance(1000);
    expect(await call).toEqual({ ok: true, value: 'after the wait' });
    expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['rate_limit', 'ok']);
  });
});

it('a stream that never answers times out as timeout with a row', async () => {
  await rig.dispose();
  rig = await openRig({ timeoutMs: 300 });
  rig.server.enqueue({ hang: true });
  const result = await settle(run('stream'));
  expect(isModelError((result as { error: unknown }).error, 'timeout')).toBe(true);
  expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['timeout']);
});

it('a stream that stalls after its first text times out with a timeout row', async () => {
  await rig.dispose();
  rig = await openRig({ timeoutMs: 300 });
  rig.server.enqueue({ text: 'I started answering and then', stall: true });
  const result = await settle(run('stream'));
  expect(isModelError((result as { error: unknown }).error, 'timeout')).toBe(true);
  const rows = await ledgerRows(rig);
  expect(rows.map((r) => r.outcome)).toEqual(['timeout']);
  await expect.poll(() => rig.server.chatRequests[0]!.aborted).toBe(true); // the connection was dropped
});

it('a malformed stream chunk is recorded as malformed', async () => {
  rig.server.enqueue({ malformed: true });
  const result = await settle(run('stream'));
  expect(result.ok).toBe(false);
  expect((await ledgerRows(rig)).map((r) => r.outcome)).toEqual(['malformed']);
});
