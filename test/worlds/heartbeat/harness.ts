/**
 * The heartbeat over a real bots host (test/bots/harness.ts: real store, scripted model server,
 * real filesystem MCP server, one FakeClock), with its own scripted model server for pulses (the
 * `local` role) so a test scripts pulses and bot runs apart. Ticks go through a real engine
 * Instance (lease, generation, checkpoints); RPC through the harness's dispatcher.
 */
import { createCoordinator } from '../../../src/coordination/index.js';
import type { Kysely } from 'kysely';
import { implement } from '../../../src/protocol/contract.js';
import { heartbeatContract, type BotHeartbeat, type HeartbeatEvents, type HeartbeatLogEntry } from '../../../src/protocol/heartbeat.js';
import type { SendResult, Task } from '../../../src/protocol/bots.js';
import { EventBus, silentLogger, uuid, type RpcMethod } from '../../../src/core/index.js';
import { Instance, type EngineDeps, type TickOutcome } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createLlm, type LlmService } from '../../../src/llm/index.js';
import { applyMigrations, tablesView, type DialectName } from '../../../src/store/index.js';
import { createBotsHost, parseBotsConfig, type BotsConfig, type BotsHost, type BotsTables } from '../../../src/bots/index.js';
import {
  createHeartbeat,
  heartbeatConfig,
  heartbeatMigrations,
  type Heartbeat,
  type HeartbeatConfig,
  type HeartbeatTables,
} from '../../../src/worlds/heartbeat/index.js';
import { createBotsHarness, until, type BotsHarness } from '../../bots/harness.js';
import { AgentRunner, ApprovalStore, type McpManager } from '../../../src/agent/index.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import type { AnyStore } from '../../support/stores.js';

export { until, gate, sharedMcp, sharedMcpForFile, UNTIL } from '../../bots/harness.js';

export type HbEvent = { [K in keyof HeartbeatEvents]: { type: K; data: HeartbeatEvents[K] } }[keyof HeartbeatEvents];

/** A small seeded generator (mulberry32): jitter and staggering repeat run to run. */
export function seeded(seed = 42): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface HeartbeatHarness extends BotsHarness {
  pulse: ModelServer;
  llm: LlmService;
  hb: Heartbeat;
  hdb: Kysely<HeartbeatTables>;
  instance: Instance;
  hbEvents: HbEvent[];
  triggered: { count: number };
  /** One engine tick of the heartbeat world. */
  tick(): Promise<TickOutcome>;
  /** Let the clock pass (in steps, so sleepers wake in order). */
  advance(ms: number): Promise<void>;
  /** Model calls in the ledger, by purpose. */
  ledger(): Promise<{ world: string; purpose: string }[]>;
  /** The bot's heartbeat as the page reads it. */
  beat(botId: string): Promise<BotHeartbeat>;
  logOf(botId: string): Promise<HeartbeatLogEntry[]>;
  /** Make the bot's next check due now (as a marker would). */
  due(botId: string): Promise<void>;
  /** A task of `botId` failed with `kind` (a real run against the scripted model). */
  failedTask(botId: string, text?: string, reply?: Parameters<ModelServer['enqueue']>[0]): Promise<Task>;
  task(id: string): Promise<Task>;
  /** Script the next pulse's verdict. */
  verdict(
    v: Partial<{ verdict: string; taskId: string | null; reason: string; instruction: string; etaMinutes: number; urgency: string; confidence: number }>,
  ): void;
}

export async function createHeartbeatHarness(opts: {
  dialect?: DialectName;
  mcp: { mcp: McpManager; dir: string };
  config?: Partial<HeartbeatConfig>;
  bots?: Partial<BotsConfig>;
  present?: boolean;
  timezone?: string;
}): Promise<HeartbeatHarness> {
  const h = await createBotsHarness({ dialect: opts.dialect ?? 'sqlite', mcp: opts.mcp, config: opts.bots ?? {}, present: opts.present ?? true, start: false });
  await applyMigrations(h.store.db, h.store.dialect, heartbeatMigrations);
  const pulse = await startModelServer();
  const agentEndpoint = { baseUrl: h.model.baseUrl, model: 'scripted-model', timeoutMs: 30_000 };
  const llm = createLlm({
    models: { local: { baseUrl: pulse.baseUrl, model: 'pulse-model', timeoutMs: 30_000 }, agent: agentEndpoint },
    db: h.store.db,
    clock: h.clock,
    ids: uuid,
  });
  const hbEvents: HbEvent[] = [];
  const triggered = { count: 0 };
  const hb = createHeartbeat({
    db: tablesView<HeartbeatTables>(h.store.db),
    host: h.host.heartbeat,
    llm,
    clock: h.clock,
    ids: uuid,
    log: silentLogger,
    emit: (type, data) => void hbEvents.push({ type, data } as HbEvent),
    config: heartbeatConfig.parse(opts.config ?? {}),
    timezone: opts.timezone ?? 'UTC',
    random: seeded(),
    trigger: () => void triggered.count++,
  });
  for (const m of implement(heartbeatContract, hb.handlers)) h.rpc.add(m as RpcMethod);
  await h.host.start();
  await hb.start();
  const deps: EngineDeps = {
    db: h.store.db,
    llm,
    clock: h.clock,
    ids: uuid,
    events: new EventBus(() => h.clock.now()),
    log: silentLogger,
    checkpointer: new StoreCheckpointer(h.store.db, h.clock),
  };
  const instance = new Instance(hb.world, deps, { holderTag: `hb-${Math.random()}` });
  const hdb = tablesView<HeartbeatTables>(h.store.db);

  const harness: HeartbeatHarness = {
    ...h,
    pulse,
    llm,
    hb,
    hdb,
    instance,
    hbEvents,
    triggered,
    tick: () => instance.tick(),
    async advance(ms) {
      const step = 1000;
      let left = ms;
      while (left > 0) {
        const n = Math.min(step, left);
        await h.clock.advance(n);
        left -= n;
      }
    },
    async ledger() {
      return h.store.db.selectFrom('model_calls').select(['world', 'purpose']).orderBy('at').execute();
    },
    beat: async (botId) => hb.service.botHeartbeat(botId),
    logOf: (botId) => hb.core.logs.list({ botId, limit: 200 }),
    async due(botId) {
      await hb.core.bots.ensure(botId);
      await hb.core.bots.update(botId, { next_heartbeat_at: h.clock.now() });
    },
    async failedTask(botId, text = 'Prepare the Q4 launch checklist', reply = { status: 500, message: 'upstream down' }) {
      h.model.enqueue(reply);
      const sent = await h.call<SendResult>('bots.send_message', { bot_id: botId, text });
      const taskId = sent.dispatched[0]!.task_id;
      await until(async () => {
        const t = await h.host.heartbeat.getTask(taskId);
        return t?.status === 'failed' && h.host.runtime.isIdle(botId);
      });
      return (await h.host.heartbeat.getTask(taskId))!;
    },
    task: async (id) => (await h.host.heartbeat.getTask(id))!,
    verdict(v) {
      pulse.enqueue({
        json: {
          verdict: 'resume',
          taskId: null,
          reason: 'work was cut off',
          instruction: 'Continue the checklist.',
          etaMinutes: 0,
          urgency: 'normal',
          confidence: 0.9,
          ...v,
        },
      });
    },
    async dispose() {
      await hb.close();
      await h.dispose();
      await pulse.close();
    },
  };
  return harness;
}

/**
 * A task as restart repair leaves it (seed 2 Appendix C step 2): the person's request, the bot's
 * reply cut off mid-stream (`error` + interrupted, partial text kept), the task `failed` +
 * interrupted, attempts as given. Written through the host's own stores.
 */
export async function interruptedTask(
  h: HeartbeatHarness,
  botId: string,
  o: { title?: string; partial?: string; attempts?: number; checkpoint?: string | null; kind?: Task['error_kind']; ageMs?: number } = {},
): Promise<Task> {
  const { TaskStore } = await import('../../../src/bots/task-store.js');
  const { ThreadStore } = await import('../../../src/bots/thread-store.js');
  const tasks = new TaskStore({ db: h.db, clock: h.clock, ids: uuid });
  const threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
  const title = o.title ?? 'Prepare the Q4 launch checklist';
  const thread = await h.host.heartbeat.directThread(botId);
  const user = await threads.addMessage({ threadId: thread.id, role: 'user', text: title, status: 'done' });
  const t = await tasks.create({ botId, threadId: thread.id, title, prompt: title, source: 'user', requestMessageId: user.id, owner: null });
  const m = await threads.addMessage({
    threadId: thread.id,
    role: 'bot',
    botId,
    taskId: t.id,
    text: o.partial ?? 'Wrote launch-checklist.md; 3 of 7',
    status: 'streaming',
  });
  await threads.updateMessage(m.id, { status: 'error', interrupted: true, error: 'Interrupted when the daemon restarted (the run was cut off).' });
  const kind = o.kind ?? 'interrupted';
  await tasks.update(t.id, {
    status: 'failed',
    interrupted: kind === 'interrupted' || kind === 'preempted' ? 1 : 0,
    error_kind: kind,
    error: kind === 'interrupted' ? 'Interrupted when the daemon restarted (the run was cut off).' : `failed: ${kind}`,
    message_id: m.id,
    attempts: o.attempts ?? 0,
    started_at: h.clock.now() - (o.ageMs ?? 60_000),
    finished_at: h.clock.now(),
    checkpoint: o.checkpoint ? JSON.stringify({ summary: o.checkpoint, steps: [], at: h.clock.now() }) : null,
  });
  return (await h.host.heartbeat.getTask(t.id))!;
}

export interface OtherDaemon {
  host: BotsHost;
  hb: Heartbeat;
  instance: Instance;
  close(): Promise<void>;
}

/**
 * Another daemon on its own connection to the harness's database, with the same model servers
 * and clock: a second worker beside the first, or the daemon started again after a shutdown.
 */
export async function otherDaemon(
  h: HeartbeatHarness,
  mcp: McpManager,
  opts: {
    config: Record<string, unknown>;
    seed: number;
    holderTag: string;
    trigger?: () => void;
    /**
     * Share the harness's connection instead of opening another. For SQLite in one process: one
     * process owns a SQLite file (a second worker needs Postgres), and better-sqlite3 waits out
     * another connection's write lock synchronously, freezing this very process (both daemons)
     * for up to `busy_timeout` per write.
     */
    sharedConnection?: boolean;
  },
): Promise<OtherDaemon> {
  const store: AnyStore = opts.sharedConnection ? h.store : await h.store.reopen();
  const agent = { baseUrl: h.model.baseUrl, model: 'scripted-model', timeoutMs: 30_000 };
  const llm = createLlm({
    models: { local: { baseUrl: h.pulse.baseUrl, model: 'pulse-model', timeoutMs: 30_000 }, agent },
    db: store.db,
    clock: h.clock,
    ids: uuid,
  });
  const approvals = new ApprovalStore({ db: store.db, clock: h.clock, ids: uuid });
  const runner = new AgentRunner({ llm, mcp, approvals, clock: h.clock, ids: uuid });
  const coordinator = await createCoordinator({ store, clock: h.clock, ids: uuid });
  const host = createBotsHost({
    coordinator,
    db: tablesView<BotsTables>(store.db),
    clock: h.clock,
    ids: uuid,
    runner,
    approvals,
    emit: () => undefined,
    log: silentLogger,
    presence: () => true,
    config: parseBotsConfig({ next_job_delay_ms: 0 }),
  });
  const hb = createHeartbeat({
    db: tablesView<HeartbeatTables>(store.db),
    host: host.heartbeat,
    llm,
    clock: h.clock,
    ids: uuid,
    log: silentLogger,
    emit: () => undefined,
    config: heartbeatConfig.parse(opts.config),
    timezone: 'UTC',
    random: seeded(opts.seed),
    ...(opts.trigger ? { trigger: opts.trigger } : {}),
  });
  const instance = new Instance(
    hb.world,
    {
      db: store.db,
      llm,
      clock: h.clock,
      ids: uuid,
      events: new EventBus(() => h.clock.now()),
      log: silentLogger,
      checkpointer: new StoreCheckpointer(store.db, h.clock),
    },
    { holderTag: opts.holderTag },
  );
  return {
    host,
    hb,
    instance,
    close: async () => {
      await hb.close();
      await host.stop();
      await runner.cancelAll();
      if (!opts.sharedConnection) await store.close();
    },
  };
}
