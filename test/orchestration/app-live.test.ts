/**
 * Live mode end to end inside the app, through the daemon's doors (`createApp` + the HTTP face:
 * `/rpc` with the token, `/events` over SSE), on SQLite and Postgres:
 *
 * - the quick tier on the `local` model and the reasoning tier on the app's own agent runner, both
 *   against the scripted OpenAI-compatible server on loopback;
 * - retrieval and eviction on the real memory store, from the memory module (`MemoryStoreKey`),
 *   which comes before the harness in the module list as in the product; its own review is off
 *   (`[worlds.memory] enabled = false`), so only the harness and the steering world call models;
 * - the steering world woken by the gate through the module trigger: its directive appears in the
 *   reasoning tier's system prompt of the next cycles, then expires.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { silentLogger } from '../../src/core/index.js';
import { orchestrationModule } from '../../src/orchestration/index.js';
import type { MemoryDocument, MemoryNamespace } from '../../src/protocol/memory.js';
import type { CycleRow, SendResult } from '../../src/protocol/orchestration.js';
import { DEFAULT_STEERING_LINE, type SteeringCurrent } from '../../src/protocol/steering.js';
import { createHttpApp, listen, type Listening } from '../../src/server/http.js';
import { createMetrics } from '../../src/server/metrics.js';
import type { DialectName } from '../../src/store/index.js';
import { memoryModule } from '../../src/worlds/memory/index.js';
import { steeringModule } from '../../src/worlds/steering/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();
const LOCAL = 'local-model';
const AGENT = 'agent-model';
const TOKEN = 'live-test-token';

const message = (r: RecordedRequest, role: 'system' | 'user') => String((r.body?.messages ?? []).find((m) => m.role === role)?.content ?? '');
const isReasoning = (r: RecordedRequest) => r.body?.model === AGENT;
const fenced = (prompt: string, label: string) => {
  const m = new RegExp(`<untrusted-data label="${label}">\\n(".*")\\n</untrusted-data>`).exec(prompt);
  return m ? (JSON.parse(m[1]!) as string) : '';
};

interface Event {
  type: string;
  data: Record<string, unknown>;
}

interface Rig {
  app: App;
  store: TestStore;
  http: Listening;
  server: ModelServer;
  events: Event[];
  rpc<T>(method: string, params?: unknown): Promise<T>;
  dispose(): Promise<void>;
}

async function openRig(dialect: DialectName, config: string, script: (req: RecordedRequest) => string | undefined): Promise<Rig> {
  const store: TestStore = await openTestStore(dialect);
  const server = await startModelServer({ models: [LOCAL, AGENT] });
  server.handle((req) => {
    const text = script(req);
    return text === undefined ? { status: 500, message: `unexpected request: ${message(req, 'system').slice(0, 80)}` } : { text };
  });
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-live-'));
  writeFileSync(path.join(workspace, 'subconscious.toml'), `[worlds.memory]\nenabled = false\n\n${config}`);
  const app = await createApp({
    workspace,
    modules: [memoryModule, orchestrationModule, steeringModule],
    log: silentLogger,
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: LOCAL,
      SUBCONSCIOUS_AGENT_MODEL: AGENT,
    },
    store: { ...store, close: async () => undefined },
  });
  await app.start(); // as the daemon does: module starts (cycle recovery), then the scheduler
  const metrics = createMetrics(app.llm.ledger, app.events);
  const http = await listen(
    createHttpApp({ rpc: app.rpc, events: app.feed, token: TOKEN, metrics: metrics.registry, webRoot: null, log: silentLogger, health: async () => ({}) }),
    { host: '127.0.0.1', port: 0 },
  );
  const events: Event[] = [];
  const controller = new AbortController();
  const stream = await fetch(`${http.url}/events`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: controller.signal });
  expect(stream.status).toBe(200);
  void readSse(stream, (e) => events.push(e));
  const rpc = async <T>(method: string, params: unknown = {}): Promise<T> => {
    const res = await fetch(`${http.url}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  // A note pushed into memory the way a host would, over the memory module's RPC.
  await rpc('memory.store_document', {
    namespace: 'notes',
    external_id: 'acme-billing',
    title: 'Acme billing notes',
    body: 'Acme was double-charged on invoice 1042 in March; refunds over 500 EUR go through finance.',
  });
  return {
    app,
    store,
    http,
    server,
    events,
    rpc,
    async dispose() {
      controller.abort();
      await http.close();
      metrics.dispose();
      await app.close();
      await server.close();
      await store.dispose();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

async function readSse(res: Response, onEvent: (e: Event) => void): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const data = buffer
          .slice(0, end)
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        buffer = buffer.slice(end + 2);
        if (data) onEvent(JSON.parse(data) as Event);
      }
    }
  } catch {
    // aborted at the end of the test
  }
}

/** The quick tier, the compression and the steering review, answered by the request's own content (so a repeated call gets the same answer). */
function scripted(reasoning: (user: string) => string, steering: (prompt: string) => string) {
  return (req: RecordedRequest): string | undefined => {
    const sys = message(req, 'system');
    const user = message(req, 'user');
    if (isReasoning(req)) return reasoning(user);
    if (sys.includes('Turn the channel message into ONE macro instruction')) return `Resolve: ${fenced(user, 'channel_message')}`;
    if (sys.includes('The reasoning layer has finished')) return 'Done: the request is handled.';
    if (sys.startsWith("You compress an orchestration cycle's execution record")) return 'acme billing: request handled';
    if (sys.includes('deep reflection layer')) return steering(user);
    return undefined;
  };
}

describe.each(dialects)('live harness in the app, with the memory module, on %s', (dialect) => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.dispose();
    rig = undefined;
  });

  it('a directive made after one cycle is in the reasoning tier’s system prompt of the next ones, then expires; recall comes from the memory store', async () => {
    const directive = 'Treat every Acme billing request as part of one duplicate-charge investigation.';
    rig = await openRig(
      dialect,
      '[worlds.orchestration]\nmode = "live"\nservers = []\n',
      scripted(
        (user) =>
          user.includes('charged twice again')
            ? 'Refund approved for invoice 1042.\nENTITY: acme — refund approved for invoice 1042\nWORLD_DIFF: acme: refund approved | delta: 0.4\nESCALATE: third duplicate charge for Acme this quarter'
            : 'Done.\nENTITY: acme — follow-up handled\nWORLD_DIFF: acme: follow-up handled | delta: 0.1',
        // The first review (nothing reviewed before) steers; any later one finds nothing to add.
        (prompt) => (prompt.includes('Reviewed before: up to cycle 0.') ? `STEERING_DIRECTIVE: ${directive}\nexpires_after_cycles: 2` : 'NONE'),
      ),
    );
    const r = rig;

    const first = await r.rpc<SendResult>('orchestration.send', { channel: 'slack', text: 'Acme says invoice 1042 was charged twice again.', wait: true });
    expect(first.cycle).toMatchObject({
      status: 'done',
      mode: 'live',
      escalation: 'third duplicate charge for Acme this quarter',
      gate: { forwarded: true, reasons: ['escalation'] },
    });
    await vi.waitFor(() => expect(r.events.some((e) => e.type === 'steering.directive')).toBe(true), { timeout: 15_000 });
    expect(r.events.find((e) => e.type === 'steering.directive')!.data).toMatchObject({ text: directive, cycle: 1, expires_at_cycle: 3 });
    expect(await r.rpc<SteeringCurrent>('steering.current')).toMatchObject({ injected: directive, remaining_cycles: 2 });

    for (let i = 2; i <= 4; i++) await r.rpc('orchestration.send', { channel: 'slack', text: `Acme follow-up number ${i} about invoice 1042.`, wait: true });

    const systems = r.server.chatRequests.filter(isReasoning).map((q) => message(q, 'system'));
    expect(systems).toHaveLength(4);
    expect(systems[0]).toContain(DEFAULT_STEERING_LINE);
    for (const s of [systems[1]!, systems[2]!]) {
      expect(s).toContain(`<untrusted-data label="steering_directive">\n${JSON.stringify(directive)}\n</untrusted-data>`);
      expect(s).not.toContain(DEFAULT_STEERING_LINE);
    }
    expect(systems[3]).toContain(DEFAULT_STEERING_LINE);
    expect(systems[3]).not.toContain(directive);
    const cycles = (await r.rpc<CycleRow[]>('orchestration.cycles', { limit: 10 })).reverse();
    expect(cycles.map((c) => c.directive?.text ?? null)).toEqual([null, directive, directive, null]);
    expect(await r.rpc<SteeringCurrent>('steering.current')).toMatchObject({ directive: null, injected: DEFAULT_STEERING_LINE, current_cycle: 4 });

    // Retrieval: the memory store's full-text recall found the seeded note, fenced into the prompt.
    const firstPrompt = message(r.server.chatRequests.find(isReasoning)!, 'user');
    expect(firstPrompt).toContain('<untrusted-data label="memory">');
    expect(firstPrompt).toContain('Acme billing notes');
    expect(cycles[0]!.event_log.some((l) => l.includes('retrieved 1 memory trace (Acme billing notes)'))).toBe(true);

    // The page's feed: every cycle queued → running → done, the directive, the review.
    await vi.waitFor(() => expect(r.events.filter((e) => e.type === 'orchestration.cycle' && e.data.status === 'done')).toHaveLength(4));
    for (const c of cycles) {
      expect(r.events.filter((e) => e.type === 'orchestration.cycle' && e.data.cycle_id === c.id).map((e) => e.data.status)).toEqual([
        'queued',
        'running',
        'done',
      ]);
    }
    expect(r.events.some((e) => e.type === 'steering.reviewed' && e.data.outcome === 'directive')).toBe(true);

    // Every model call in the ledger, by tier; the reasoning tier ran on the agent model.
    const ledger = await r.store.db.selectFrom('model_calls').select(['world', 'purpose', 'outcome']).execute();
    expect(new Set(ledger.filter((c) => c.world === 'orchestration').map((c) => c.purpose))).toEqual(
      new Set(['quick_instruct', 'reasoning', 'quick_respond', 'compress']),
    );
    // A review of the last cycles may still be running (the steering world ticks on its own): its call settles ok.
    await vi.waitFor(
      async () => {
        const steering = await r.store.db.selectFrom('model_calls').select(['purpose', 'outcome']).where('world', '=', 'steering').execute();
        expect(steering.length).toBeGreaterThan(0);
        expect(steering.every((c) => c.purpose === 'steering' && c.outcome === 'ok')).toBe(true);
      },
      { timeout: 15_000 },
    );
  });

  it('context pressure evicts semantic history into memory documents, which a later cycle recalls', async () => {
    const vendors = ['Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark'];
    rig = await openRig(
      dialect,
      '[worlds.orchestration]\nmode = "live"\nservers = []\ncontext_window_tokens = 128\n',
      scripted(
        (user) => {
          const v = vendors.find((name) => fenced(user, 'channel_message').includes(name)) ?? 'Globex';
          return `Reviewed ${v}.\nENTITY: ${v.toLowerCase()} — ${v} renewal terms reviewed: net-60 payment, 3% uplift, auto-renew clause flagged\nWORLD_DIFF: ${v.toLowerCase()}: renewal reviewed | delta: 0.2`;
        },
        () => 'NONE',
      ),
    );
    const r = rig;
    let evicted: CycleRow['evictions'] = [];
    for (const v of vendors) {
      const { cycle } = await r.rpc<SendResult>('orchestration.send', { channel: 'slack', text: `Review the ${v} renewal.`, wait: true });
      expect(cycle!.status).toBe('done');
      if (cycle!.evictions.length) {
        evicted = cycle!.evictions;
        break;
      }
    }
    expect(evicted.length).toBeGreaterThan(0);
    for (const e of evicted) {
      const doc = await r.rpc<MemoryDocument>('memory.get_document', { namespace: 'orchestration', external_id: e.external_id });
      expect(doc).toMatchObject({ namespace: 'orchestration', source_kind: 'orchestration', title: e.title, deleted_at: null });
      expect(doc.metadata).toMatchObject({ kind: 'semantic_trace', source: 'orchestration' });
      expect(doc.body).toMatch(/renewal terms reviewed/);
    }
    expect((await r.rpc<MemoryNamespace[]>('memory.namespaces')).find((n) => n.namespace === 'orchestration')).toMatchObject({
      label: 'Orchestration harness: evicted traces',
      kind: 'orchestration',
      documents: evicted.length,
    });
    expect((await r.rpc<{ long_term_memory: number }>('orchestration.state')).long_term_memory).toBe(0); // in the store, not the state

    // A later cycle about the first vendor: the store's recall brings its evicted trace back.
    await r.rpc('orchestration.send', { channel: 'slack', text: 'What were the Globex renewal terms?', wait: true });
    const last = r.server.chatRequests.filter(isReasoning).at(-1)!;
    const recalled = fenced(message(last, 'user'), 'memory');
    // The store's snippet marks the matched words (`**Globex**`).
    expect(recalled).toMatch(/^1\. globex \(cycle 1\): \*\*Globex\*\* \*\*renewal\*\* \*\*terms\*\* reviewed: net-60 payment/);
  });
});
