/**
 * The daemon's self-description and its doors for programs: `/openapi.json` is valid OpenAPI 3.1
 * (checked by a real validator from the registry) and describes every method it serves, with
 * params, results and errors; a real result and a real event validate against their schemas;
 * `/readyz` says whether the store, migrations and models are there; every path the daemon does
 * not serve answers a JSON 404 instead of the page.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { scriptedModelEnv, startModelServer, unreachableBaseUrl, type ModelServer } from '../support/model-server.js';

let models: ModelServer;
let daemon: TestDaemon;

beforeAll(async () => {
  models = await startModelServer();
  daemon = await startDaemon({ env: scriptedModelEnv(models) });
});
afterAll(async () => {
  await daemon?.dispose();
  await models?.close();
});

type Doc = { paths: Record<string, { post?: { responses: Record<string, unknown> } }>; components: { schemas: Record<string, unknown> } };

describe('/openapi.json', () => {
  it('is valid OpenAPI 3.1 and lists every method the daemon serves, with params, result and typed errors', async () => {
    const res = await fetch(`${daemon.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as Doc & { openapi: string };
    const validator = new Validator();
    const verdict = await validator.validate(doc);
    expect(verdict.errors ?? []).toEqual([]);
    expect(verdict.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');

    const served = await daemon.rpc<{ name: string }[]>('rpc.methods');
    const described = Object.keys(doc.paths).filter((p) => p.startsWith('/rpc#'));
    expect(described.sort()).toEqual(served.map((m) => `/rpc#${m.name}`).sort());
    const add = JSON.stringify(doc.paths['/rpc#subconscious.tasks_add']);
    expect(add).toContain('#/components/schemas/Params_subconscious_tasks_add');
    expect(add).toContain('#/components/schemas/Task');
    expect(add).toContain('#/components/schemas/RpcError');
    expect(JSON.stringify(doc.components.schemas.RpcError)).toContain('invalid_params');
    // No result is left undescribed: the build wrote the schemas.
    expect(JSON.stringify(doc.paths)).not.toContain('Not described');
    expect(doc.components.schemas.Params_subconscious_tasks_add).toMatchObject({ properties: { title: { type: 'string' } }, required: ['title'] });
    // Your own agent runtime's side (issue 18 §6): its methods, and the webhook the daemon posts to it.
    for (const m of ['register', 'report', 'poll', 'ack', 'dispatches', 'list', 'unregister']) expect(described).toContain(`/rpc#runtime.${m}`);
    expect(JSON.stringify(doc.paths['/rpc#runtime.ack'])).toContain('#/components/schemas/AckResult');
    const webhook = (doc as unknown as { webhooks: Record<string, { post: { parameters: { name: string }[]; requestBody: unknown } }> }).webhooks[
      'runtime.dispatch'
    ]!;
    expect(webhook.post.parameters.map((p) => p.name)).toEqual([
      'x-subconscious-signature',
      'idempotency-key',
      'x-subconscious-delivery-attempt',
      'x-subconscious-event',
    ]);
    expect(JSON.stringify(webhook.post.requestBody)).toContain('#/components/schemas/RuntimeWebhook');
    expect(doc.components.schemas.RuntimeWebhook).toMatchObject({ required: expect.arrayContaining(['type', 'delivery', 'sent_at', 'dispatch']) });
  });

  it('a real result and a real event validate against their schemas; a wrong one does not', async () => {
    const doc = (await (await fetch(`${daemon.url}/openapi.json`)).json()) as Doc;
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const check = (name: string) => ajv.compile({ $ref: `doc#/components/schemas/${name}` });
    const events = new AbortController();
    const seen: unknown[] = [];
    const stream = await fetch(`${daemon.url}/events`, { headers: { authorization: `Bearer ${daemon.token}` }, signal: events.signal });
    const reading = (async () => {
      const reader = stream.body!.getReader();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        text += new TextDecoder().decode(value);
        for (const m of text.matchAll(/^data: (.*)$/gm)) {
          const e = JSON.parse(m[1]!) as { type: string };
          if (e.type === 'tasks.changed' && !seen.includes(m[1])) seen.push(m[1]);
        }
        if (seen.length) return;
      }
    })();
    const task = await daemon.rpc('subconscious.tasks_add', { title: 'Check urgent emails' });
    await reading;
    events.abort();
    const validTask = check('Task');
    expect(validTask(task), JSON.stringify(validTask.errors)).toBe(true);
    expect(validTask({ ...(task as object), enabled: 'yes' })).toBe(false);
    const validEvent = check('Event_tasks_changed');
    const event = JSON.parse(seen[0] as string) as unknown;
    expect(validEvent(event), JSON.stringify(validEvent.errors)).toBe(true);
    expect(validEvent({ type: 'tasks.changed', at: 1, data: {} })).toBe(false); // `world` is required
  });
});

describe('doors for programs', () => {
  it('answers a JSON 404 for every path it does not serve, and the page only at its own routes', async () => {
    for (const [method, p] of [
      ['GET', '/api/x'],
      ['GET', '/nope'],
      ['GET', '/assets/missing.js'],
      ['POST', '/api/x'],
      ['GET', '/mcpx'],
    ] as const) {
      const res = await fetch(`${daemon.url}${p}`, { method });
      expect(res.status, `${method} ${p}`).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(await res.json()).toMatchObject({ error: 'not_found', message: expect.stringContaining(p) });
    }
    const page = await fetch(`${daemon.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html|page is not built/i);
  });

  it('/readyz: 200 with every check when the store and the models answer', async () => {
    const res = await fetch(`${daemon.url}/readyz`);
    const body = (await res.json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.ready).toBe(true);
    expect(Object.keys(body.checks).sort()).toEqual(['migrations', 'model_agent', 'model_local', 'store']);
    expect((await fetch(`${daemon.url}/healthz`)).status).toBe(200);
  });

  it('/readyz: 503 naming the model that does not answer, while /healthz still says up', async () => {
    const nowhere = await unreachableBaseUrl();
    const down = await startDaemon({
      env: { SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl, SUBCONSCIOUS_AGENT_MODEL: 'scripted-model' },
    });
    try {
      const res = await fetch(`${down.url}/readyz`);
      const body = (await res.json()) as { ready: boolean; checks: Record<string, { ok: boolean; detail: string | null }> };
      expect(res.status).toBe(503);
      expect(body.ready).toBe(false);
      expect(body.checks.model_local).toMatchObject({ ok: false, detail: expect.stringContaining(nowhere) });
      expect(body.checks.store?.ok).toBe(true);
      expect(body.checks.migrations).toEqual({ ok: true, detail: null });
      const health = await fetch(`${down.url}/healthz`);
      expect(health.status).toBe(200);
      // Up, and it says which model does not answer (and which does).
      expect(await health.json()).toMatchObject({
        ok: true,
        models: { local: { ok: false, detail: expect.stringContaining(nowhere) }, agent: { ok: true } },
      });
    } finally {
      await down.dispose();
    }
  });
});
