/**
 * The bots host and the heartbeat on one database, as the daemon wires them but without a daemon:
 * what the heartbeat bench, the engine bench's real-worlds part and the test of what a triage pass
 * reads each build. No model answers unless `baseUrl` names one (the default is a closed port).
 */
import type { Kysely } from 'kysely';
import { AgentRunner, ApprovalStore, McpManager } from '../src/agent/index.js';
import { createBotsHost, parseBotsConfig, type BotsHost, type BotsTables } from '../src/bots/index.js';
import type { Coordinator } from '../src/coordination/index.js';
import { silentLogger, uuid, type Clock } from '../src/core/index.js';
import { createLlm, type LlmService } from '../src/llm/index.js';
import { tablesView } from '../src/store/index.js';
import { createHeartbeat, heartbeatConfig, type Heartbeat, type HeartbeatConfig, type HeartbeatTables } from '../src/worlds/heartbeat/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the stack reads and writes every module's tables
type AnyDb = Kysely<any>;

export interface HeartbeatStack {
  host: BotsHost;
  hb: Heartbeat;
  llm: LlmService;
  runner: AgentRunner;
  close(): Promise<void>;
}

export interface HeartbeatStackOptions {
  db: AnyDb;
  /** The store's read thread (`store.reads`), as the daemon gives the bots host (a SQLite file). */
  reads?: AnyDb | undefined;
  clock: Clock;
  coordinator: Coordinator;
  /** The model server's `/v1` (default: a closed port, so no model is asked). */
  baseUrl?: string;
  /** Each model call's timeout (default 30 s). */
  timeoutMs?: number;
  /** The caller's own model layer (one it shares with an engine instance), instead of a new one. */
  llm?: LlmService;
  /** Heartbeat settings over the defaults. */
  config?: Partial<HeartbeatConfig>;
  /** The bots host's `[bots]` settings, as the configuration file gives them. */
  bots?: Record<string, unknown>;
  random?: () => number;
  /** Whether a person is there (default: the host's own default). */
  presence?: () => boolean;
  /** No other worker or face on the store (the daemon's `ModuleContext.alone`). */
  alone?: () => boolean;
}

export function heartbeatStack(o: HeartbeatStackOptions): HeartbeatStack {
  const { db, clock } = o;
  const endpoint = (model: string) => ({ baseUrl: o.baseUrl ?? 'http://127.0.0.1:9/v1', model, timeoutMs: o.timeoutMs ?? 30_000 });
  const llm = o.llm ?? createLlm({ models: { local: endpoint('pulse-model'), agent: endpoint('agent-model') }, db, clock, ids: uuid });
  const approvals = new ApprovalStore({ db, clock, ids: uuid });
  const runner = new AgentRunner({ llm, mcp: new McpManager({ servers: [], clock }), approvals, clock, ids: uuid });
  const host = createBotsHost({
    coordinator: o.coordinator,
    db: tablesView<BotsTables>(db),
    ...(o.reads ? { reads: tablesView<BotsTables>(o.reads) } : {}),
    clock,
    ids: uuid,
    runner,
    approvals,
    emit: () => undefined,
    log: silentLogger,
    ...(o.presence ? { presence: o.presence } : {}),
    config: parseBotsConfig(o.bots ?? {}),
  });
  const hb = createHeartbeat({
    db: tablesView<HeartbeatTables>(db),
    host: host.heartbeat,
    llm,
    clock,
    ids: uuid,
    log: silentLogger,
    emit: () => undefined,
    config: heartbeatConfig.parse(o.config ?? {}),
    timezone: 'UTC',
    ...(o.random ? { random: o.random } : {}),
    ...(o.alone ? { alone: o.alone } : {}),
  });
  return {
    host,
    hb,
    llm,
    runner,
    close: async () => {
      await hb.close();
      await host.stop();
      await runner.cancelAll();
    },
  };
}
