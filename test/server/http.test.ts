/**
 * The daemon's HTTP face in-process: token on /rpc and /events, JSON-RPC error codes (the server
 * keeps serving after each), batches, notifications, SSE, health and metrics.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApp, type App } from '../../src/app/app.js';
import { silentLogger } from '../../src/core/index.js';
import { createHttpApp, listen, type Listening } from '../../src/server/http.js';
import { defineMethod } from '../../src/server/rpc.js';
import { createMetrics } from '../../src/server/metrics.js';
import { ensureToken, tokenPath } from '../../src/server/token.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';

let workspace: string;
let app: App;
let http: Listening;
let token: string;
let models: ModelServer;

beforeAll(async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-http-'));
  models = await startModelServer();
  app = await createApp({
    workspace,
    log: silentLogger,
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
  });
  token = ensureToken(workspace);
  const metrics = createMetrics(app.llm.ledger, app.events);
  http = await listen(
    createHttpApp({
      rpc: app.rpc,
      events: app.feed,
      token,
      metrics: metrics.registry,
      webRoot: null,
      log: silentLogger,
      health: async () => ({ worlds: app.registry.names() }),
    }),
    { host: '127.0.0.1', port: 0 },
  );
});
afterAll(async () => {
  await http.close();
  await app.close();
  await models.close();
  rmSync(workspace, { recursive: true, force: true });
});

const post = (body: string, auth: string | null = `Bearer ${token}`) =>
  fetch(`${http.url}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) }, body });

describe('auth', () => {
  it('creates the token file with mode 0600 and reuses it', () => {
    expect(statSync(tokenPath(workspace)).mode & 0o777).toBe(0o600);
    expect(ensureToken(workspace)).toBe(token);
  });

  it('refuses /rpc and /events without the token (401) and says where to find it', async () => {
    const none = await post('{"jsonrpc":"2.0","method":"subconscious.status","id":1}', null);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { message: string }).message).toMatch(/\.subconscious\/token/);
    expect((await post('{"jsonrpc":"2.0","method":"subconscious.status","id":1}', 'Bearer wrong')).status).toBe(401);
    expect((await fetch(`${http.url}/events`)).status).toBe(401);
    expect((await fetch(`${http.url}/rpc?token=${token}`, { method: 'POST', body: '{}' })).status).toBe(401); // query token only for SSE
  });

  it('serves /healthz and /metrics without the token', async () => {
    expect(await (await fetch(`${http.url}/healthz`)).json()).toMatchObject({ ok: true });
    const metrics = await (await fetch(`${http.url}/metrics`)).text();
    expect(metrics).toContain('subconscious_ticks_total');
    expect(metrics).toContain('subconscious_model_calls');
  });
});

describe('JSON-RPC 2.0', () => {
  it('answers a call', async () => {
    const res = (await (await post('{"jsonrpc":"2.0","method":"subconscious.status","id":7}')).json()) as { id: number; result: { instances: unknown[] } };
    expect(res.id).toBe(7);
    expect(Array.isArray(res.result.instances)).toBe(true);
  });

  it('returns the spec error codes for bad requests and keeps serving', async () => {
    const parse = (await (await post('{not json')).json()) as { error: { code: number }; id: null };
    expect(parse).toMatchObject({ id: null, error: { code: -32700 } });
    const invalid = (await (await post('{"jsonrpc":"1.0","method":"x","id":1}')).json()) as { error: { code: number } };
    expect(invalid.error.code).toBe(-32600);
    const missing = (await (await post('{"jsonrpc":"2.0","method":"no.such","id":2}')).json()) as { error: { code: number; message: string } };
    expect(missing.error).toMatchObject({ code: -32601 });
    const params = (await (await post('{"jsonrpc":"2.0","method":"subconscious.trigger","params":{"kind":"Bad World!"},"id":3}')).json()) as {
      error: { code: number; message: string; data: { issues: { field: string }[] } };
    };
    expect(params.error.code).toBe(-32602);
    // `kind` is the old name of `world` (still accepted): the error names the param as it is now.
    expect(params.error.message).toMatch(/world/);
    expect(params.error.data.issues[0]!.field).toBe('world');
    const unknownWorld = (await (await post('{"jsonrpc":"2.0","method":"subconscious.trigger","params":{"kind":"nope"},"id":4}')).json()) as {
      error: { code: number; data: { code: string } };
    };
    expect(unknownWorld.error).toMatchObject({ code: -32000, data: { code: 'not_found' } });
    // Still serving.
    expect((await post('{"jsonrpc":"2.0","method":"subconscious.status","id":5}')).status).toBe(200);
  });

  it('handles batches, notifications and an empty batch', async () => {
    const batch = (await (
      await post(
        JSON.stringify([
          { jsonrpc: '2.0', method: 'rpc.methods', id: 1 },
          { jsonrpc: '2.0', method: 'no.such', id: 2 },
          { jsonrpc: '2.0', method: 'subconscious.status' },
          42,
        ]),
      )
    ).json()) as { id: number | null; result?: unknown; error?: { code: number } }[];
    expect(batch).toHaveLength(3); // the notification gets no answer
    expect(batch.find((r) => r.id === 1)?.result).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'subconscious.status' })]));
    expect(batch.find((r) => r.id === 2)?.error?.code).toBe(-32601);
    expect(batch.find((r) => r.id === null)?.error?.code).toBe(-32600);
    const onlyNotification = await post('{"jsonrpc":"2.0","method":"subconscious.status"}');
    expect(onlyNotification.status).toBe(204);
    expect((await post('[{"jsonrpc":"2.0","method":"subconscious.status"},{"jsonrpc":"2.0","method":"rpc.methods"}]')).status).toBe(204);
    const empty = (await (await post('[]')).json()) as { error: { code: number } };
    expect(empty.error.code).toBe(-32600);
  });

  it('writes a batch answer one member per turn of the event loop (a status call never waits for a whole batch)', async () => {
    // Each answer says, as it is serialised, how many turns of the event loop have passed.
    let turns = 0;
    let spinning = true;
    const spin = () => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    const seen: number[] = [];
    app.rpc.add(
      defineMethod('test.large_answer', z.object({}), 'a large answer that notes when it is serialised', () => ({
        toJSON: () => (seen.push(turns), { text: 'x'.repeat(50_000) }),
      })),
    );
    spin();
    try {
      const res = await post(JSON.stringify(Array.from({ length: 40 }, (_, id) => ({ jsonrpc: '2.0', method: 'test.large_answer', params: {}, id }))));
      const answers = (await res.json()) as { id: number; result: { text: string } }[];
      expect(answers.map((a) => a.id)).toEqual(Array.from({ length: 40 }, (_, id) => id));
      expect(answers.every((a) => a.result.text.length === 50_000)).toBe(true);
    } finally {
      spinning = false;
    }
    expect(seen).toHaveLength(40);
    // No two members were serialised in the same turn: the whole answer never ran as one stretch.
    for (let i = 1; i < seen.length; i++) expect(seen[i], `member ${i}`).toBeGreaterThan(seen[i - 1]!);
  });
  it('sends a large single answer whole, in slices, with its length (multibyte text split across slices included)', async () => {
    const text = 'é€𝄞 '.repeat(20_000); // 200,000 bytes of UTF-8: characters of 2, 3 and 4 bytes meet slice ends
    app.rpc.add(defineMethod('test.large_single', z.object({}), 'a large single answer', () => ({ text })));
    const res = await post('{"jsonrpc":"2.0","method":"test.large_single","params":{},"id":"big"}');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
    const answer = JSON.parse(bytes.toString('utf8')) as { id: string; result: { text: string } };
    expect(answer).toEqual({ jsonrpc: '2.0', id: 'big', result: { text } });
    // A small answer goes in one piece, with its length too.
    const small = await post('{"jsonrpc":"2.0","method":"subconscious.status","id":1}');
    expect(small.headers.get('content-length')).toBe(String(Buffer.from(await small.arrayBuffer()).length));
  });
});

describe('events', () => {
  it('streams a hello and engine events over SSE (token in the query)', async () => {
    const controller = new AbortController();
    const res = await fetch(`${http.url}/events?token=${token}`, { signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        text += decoder.decode(value);
      }
    };
    await readUntil('"hello"');
    app.events.emit('tasks.changed', { world: 'tasks', reason: 'test' });
    await readUntil('tasks.changed');
    controller.abort();
    expect(text).toMatch(/data: \{"type":"tasks.changed"/);
  });
});
