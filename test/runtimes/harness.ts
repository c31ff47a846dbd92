/**
 * The heartbeat for an external agent runtime, for tests: a real store (SQLite or Postgres), the
 * built-in bots host and the runtimes host side by side behind one routed API (as the heartbeat
 * module wires them), the heartbeat world on a real engine Instance, the scripted model server
 * for its pulses, one FakeClock — and the daemon's real HTTP face on loopback, which the test's
 * runtime calls with the typed client (`subconscious-engine/client`'s `createClient`).
 *
 * `FakeRuntime` is the other side: a webhook receiver on loopback that checks each delivery's
 * signature, answers as told (200, 500, no answer, a closed port), and records what it got.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Kysely } from 'kysely';
import { Registry as MetricsRegistry } from 'prom-client';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { createBotsHost, parseBotsConfig, routeHeartbeatHosts, type BotsHost } from '../../src/bots/index.js';
import { createClient, verifyWebhookSignature, type SubconsciousClient } from '../../src/client/index.js';
import { createCoordinator, type Coordinator } from '../../src/coordination/index.js';
import { EventBus, FakeClock, RpcDispatcher, silentLogger, uuid, type RpcMethod } from '../../src/core/index.js';
import { Instance, type TickOutcome } from '../../src/engine/index.js';
import { StoreCheckpointer } from '../../src/graph/index.js';
import { createLlm } from '../../src/llm/index.js';
import {
  botsContract,
  heartbeatContract,
  runtimesContract,
  type HeartbeatLogEntry,
  type ProductEvents,
  type ProductMethods,
  type RuntimeDispatch,
  type RuntimeWebhook,
  type RuntimesEvents,
} from '../../src/protocol/index.js';
import { implement } from '../../src/protocol/contract.js';
import { createRuntimesHost, parseRuntimesConfig, type RuntimesConfig, type RuntimesHost, type RuntimesTables } from '../../src/runtimes/index.js';
import { createHttpApp, listen, type Listening } from '../../src/server/http.js';
import type { DialectName } from '../../src/store/index.js';
import { createHeartbeat, heartbeatConfig, type Heartbeat, type HeartbeatConfig } from '../../src/worlds/heartbeat/index.js';
import { until } from '../bots/harness.js';
import { seeded } from '../worlds/heartbeat/harness.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, type TestStore } from '../support/stores.js';

export { until };

export const TOKEN = 'runtime-test-token-0123456789abcdefghij';
export const SECRET = 'whsec-0123456789abcdef-the-shared-secret';
/** The environment variable of the daemon that holds the webhook secret. */
export const SECRET_ENV = 'TEST_RUNTIME_WEBHOOK_SECRET';

export type RtEvent = { [K in keyof RuntimesEvents]: { type: K; data: RuntimesEvents[K] } }[keyof RuntimesEvents];

export interface RuntimeHarness {
  store: TestStore;
  db: Kysely<RuntimesTables>;
  clock: FakeClock;
  pulse: ModelServer;
  bots: BotsHost;
  runtimes: RuntimesHost;
  hb: Heartbeat;
  instance: Instance;
  http: Listening;
  /** The typed client, as an external runtime uses it (over HTTP, with the token). */
  client: SubconsciousClient<ProductMethods, ProductEvents>;
  events: RtEvent[];
  tick(): Promise<TickOutcome>;
  /** Let the clock pass in 1 s steps (sleepers wake in order: the delivery loop, leases). */
  advance(ms: number): Promise<void>;
  /** Script the next pulse's verdict (`resume` unless told). */
  verdict(v?: Partial<{ verdict: string; reason: string; instruction: string; confidence: number }>): void;
  logOf(botId: string): Promise<HeartbeatLogEntry[]>;
  dispatches(runtimeId: string): Promise<RuntimeDispatch[]>;
  dispose(): Promise<void>;
}

export async function createRuntimeHarness(
  opts: { dialect?: DialectName; runtimes?: Partial<RuntimesConfig>; heartbeat?: Partial<HeartbeatConfig>; env?: Record<string, string> } = {},
): Promise<RuntimeHarness> {
  const store = await openTestStore(opts.dialect ?? 'sqlite');
  const clock = new FakeClock();
  const pulse = await startModelServer();
  const endpoint = { baseUrl: pulse.baseUrl, model: 'pulse-model', timeoutMs: 30_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid });
  const bus = new EventBus(() => clock.now());
  const mcp = new McpManager({ servers: [], clock });
  const approvals = new ApprovalStore({ db: store.db, clock, ids: uuid, events: bus });
  const runner = new AgentRunner({ llm, mcp, approvals, clock, ids: uuid, events: bus });
  const coordinator: Coordinator = await createCoordinator({ store, clock, ids: uuid });
  const bots = createBotsHost({
    coordinator,
    db: store.db,
    clock,
    ids: uuid,
    runner,
    approvals,
    emit: () => undefined,
    log: silentLogger,
    config: parseBotsConfig({ next_job_delay_ms: 0 }),
  });
  const events: RtEvent[] = [];
  const runtimes = createRuntimesHost({
    db: store.db,
    clock,
    ids: uuid,
    log: silentLogger,
    emit: (type, data) => void events.push({ type, data } as RtEvent),
    config: parseRuntimesConfig(opts.runtimes ?? {}),
    env: { [SECRET_ENV]: SECRET, ...opts.env },
  });
  const hb = createHeartbeat({
    db: store.db,
    // What the heartbeat module does: the built-in host and the external runtimes behind one API.
    host: routeHeartbeatHosts(bots.heartbeat, [runtimes.heartbeat]),
    llm,
    clock,
    ids: uuid,
    log: silentLogger,
    emit: () => undefined,
    config: heartbeatConfig.parse({ tick_seconds: 30, ...opts.heartbeat }),
    timezone: 'UTC',
    random: seeded(),
  });
  const rpc = new RpcDispatcher();
  for (const m of [...implement(botsContract, bots.rpc), ...implement(heartbeatContract, hb.handlers), ...implement(runtimesContract, runtimes.rpc)]) {
    rpc.add(m as RpcMethod);
  }
  await bots.start();
  await hb.start();
  runtimes.start();
  const instance = new Instance(
    hb.world,
    { db: store.db, llm, clock, ids: uuid, events: new EventBus(() => clock.now()), log: silentLogger, checkpointer: new StoreCheckpointer(store.db, clock) },
    { holderTag: `rt-${Math.random()}` },
  );
  const server = await listen(
    createHttpApp({
      rpc,
      events: { head: 0, subscribe: () => () => undefined, replay: async () => ({ events: [], oldest: null, newest: null }) },
      token: TOKEN,
      metrics: new MetricsRegistry(),
      webRoot: null,
      log: silentLogger,
      health: async () => ({}),
    }),
    { host: '127.0.0.1', port: 0 },
  );
  const client = createClient({ url: server.url, token: TOKEN });
  return {
    store,
    db: store.db,
    clock,
    pulse,
    bots,
    runtimes,
    hb,
    instance,
    http: server,
    client,
    events,
    tick: () => instance.tick(),
    async advance(ms) {
      for (let left = ms; left > 0; left -= 1000) await clock.advance(Math.min(1000, left));
    },
    verdict(v = {}) {
      pulse.enqueue({
        json: {
          verdict: 'resume',
          taskId: null,
          reason: 'the work was cut off',
          instruction: 'Continue the draft.',
          etaMinutes: 0,
          urgency: 'normal',
          confidence: 0.9,
          ...v,
        },
      });
    },
    logOf: (botId) => hb.core.logs.list({ botId, limit: 200 }),
    dispatches: (runtimeId) => client.call('runtime.dispatches', { runtime_id: runtimeId, limit: 200 }),
    async dispose() {
      await server.close();
      await runtimes.stop();
      await hb.close();
      await bots.stop();
      await coordinator.stop().catch(() => undefined);
      await runner.cancelAll();
      await pulse.close();
      await store.dispose();
    },
  };
}

export interface Delivery {
  body: string;
  webhook: RuntimeWebhook;
  headers: http.IncomingHttpHeaders;
  /** The signature checked with the runtime's secret (the client's `verifyWebhookSignature`). */
  valid: boolean;
}

export interface FakeRuntime {
  readonly url: string;
  readonly port: number;
  /** Every delivery that reached it (answered or not). */
  readonly received: Delivery[];
  /** How it answers: 200, an HTTP error status, or `hang` (never answers). A bad signature is answered 401. */
  answer: number | 'hang';
  /** The secret it verifies with (change it to rotate). */
  secret: string;
  /** Called with each delivery it answered 200 (its own work: ack, report). */
  onDispatch: ((d: Delivery) => void | Promise<void>) | null;
  /** What `onDispatch` threw. */
  readonly errors: unknown[];
  /** Until every `onDispatch` begun has ended. */
  idle(): Promise<void>;
  /** Stop listening (connections refused) and drop what is open: the runtime's process is gone. */
  close(): Promise<void>;
}

/** A webhook receiver as an external runtime runs one; `now` is the clock it checks timestamps with (the daemon's fake one). */
export async function startFakeRuntime(opts: { secret?: string; now: () => number; port?: number }): Promise<FakeRuntime> {
  const received: Delivery[] = [];
  const sockets = new Set<Socket>();
  const running = new Set<Promise<void>>();
  const errors: unknown[] = [];
  const self: FakeRuntime = {
    url: '',
    port: 0,
    received,
    answer: 200,
    secret: opts.secret ?? SECRET,
    onDispatch: null,
    errors,
    idle: async () => {
      while (running.size > 0) await Promise.all([...running]);
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
      await self.idle();
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const valid = await verifyWebhookSignature({
          secret: self.secret,
          body,
          header: req.headers['x-subconscious-signature'] as string | undefined,
          now: opts.now(),
        });
        const d: Delivery = { body, webhook: JSON.parse(body) as RuntimeWebhook, headers: req.headers, valid };
        received.push(d);
        if (self.answer === 'hang') return;
        if (!valid) return res.writeHead(401).end('bad signature');
        if (self.answer !== 200) return res.writeHead(self.answer).end('not now');
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        const work = Promise.resolve(self.onDispatch?.(d)).catch((err: unknown) => void errors.push(err));
        running.add(work);
        await work;
        running.delete(work);
      })();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  Object.assign(self, { url: `http://127.0.0.1:${port}/hooks/subconscious`, port });
  return self;
}
