/**
 * `subconscious start`: the daemon — scheduler, HTTP (RPC, SSE, metrics, page) and a clean stop
 * on SIGTERM/SIGINT (every tick stopped at a checkpoint, nothing half-written).
 *
 * Before anything opens the store, `.subconscious/` and its files are made private (0700/0600,
 * a log line for each one tightened). Bound beyond loopback (`-H 0.0.0.0`), it says so loudly.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createApp, WEB_ROOT, type App } from '../app/app.js';
import { openApiDocument } from '../app/openapi.js';
import { modelChecks, readiness } from '../app/readiness.js';
import { createMcpHttp, type McpHttp } from '../mcp/index.js';
import type { ApiRoutes } from '../server/api-routes.js';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { WorldModule } from '../engine/index.js';
import { createLogger, type Logger } from '../core/logger.js';
import { createHttpApp, listen, type Listening } from '../server/http.js';
import { isLoopback, isWildcard } from '../server/host.js';
import { createMetrics } from '../server/metrics.js';
import { securePrivateFolder } from '../server/private-files.js';
import { resolveToken } from '../server/token.js';
import { announceDaemon } from './remote.js';
import { worldsLine, worldsSummary } from './worlds-summary.js';

const { version: VERSION } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export interface DaemonOptions {
  workspace: string;
  port?: number;
  host?: string;
  /** Default: JSON lines on stderr (`SUBCONSCIOUS_LOG_LEVEL`). */
  log?: Logger;
  /** Default: the product's modules. */
  modules?: readonly WorldModule[];
  /** Default: `process.env` (config overrides, `SUBCONSCIOUS_TOKEN`). */
  env?: NodeJS.ProcessEnv;
  /** Default: the system clock (tests run the daemon on a fake one and move time themselves). */
  clock?: Clock;
}

export interface Daemon {
  app: App;
  http: Listening;
  token: string;
  pageUrl: string;
  stop(): Promise<void>;
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const overrides = { ...(opts.port !== undefined ? { port: opts.port } : {}), ...(opts.host !== undefined ? { host: opts.host } : {}) };
  const log = opts.log ?? createLogger();
  securePrivateFolder(path.resolve(opts.workspace), log);
  // `announce` prints the config's warnings once, as notes a person reads.
  const env = opts.env ?? process.env;
  const app = await createApp({
    workspace: opts.workspace,
    overrides,
    log,
    env,
    showsWarnings: true,
    ...(opts.modules ? { modules: opts.modules } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  let http: Listening;
  let token: string;
  try {
    // On Postgres every worker accepts the one token kept in the database (unless one is given).
    const shared = app.store.dialect === 'postgres' ? (initial: string) => app.sharedSecret('token', initial) : undefined;
    token = (await resolveToken(app.workspace, { env, shared })).token;
  } catch (err) {
    await app.close();
    throw err;
  }
  const metrics = createMetrics({ ledger: app.llm.ledger, events: app.events, jobs: app.coordinator, bots: app.botStatus });
  const mcp = createMcpHttp({
    call: (method, params) => app.rpc.call(method, params),
    subscribe: (listener) => app.events.subscribe(listener),
    allowAnswers: app.config.server.mcp_allow_answers,
    version: VERSION,
    log: app.log.child({ face: 'mcp' }),
  });
  try {
    const server = createHttpApp({
      rpc: app.rpc,
      events: app.feed,
      token,
      metrics: metrics.registry,
      webRoot: WEB_ROOT,
      log: app.log,
      health: async () => ({ ...(await worldsSummary(app)), store: app.store.dialect, models: await modelChecks(app) }),
      bindHost: app.config.server.host,
      presence: app.presence,
      routes: daemonRoutes(app, mcp),
      now: () => app.clock.now(),
    });
    http = await listen(server, { host: app.config.server.host, port: app.config.server.port });
  } catch (err) {
    metrics.dispose();
    await app.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new Error(
        `port ${app.config.server.port} on ${app.config.server.host} is in use — is another subconscious running? Use --port N or SUBCONSCIOUS_PORT.`,
        { cause: err },
      );
    }
    throw err;
  }
  // Connect the tool servers now, so the first situation report sees their real health.
  void app.services.mcp.check().catch((err) => app.log.warn({ err }, 'MCP servers could not be checked'));
  if (!isLoopback(app.config.server.host)) app.log.warn({ host: app.config.server.host }, exposedWarning(app.config.server.host));
  await app.start();
  // Bound to every interface, the daemon is reached here through loopback (a browser is refused `Host: 0.0.0.0`).
  const url = isWildcard(http.host) ? `http://${http.host.includes(':') ? '[::1]' : '127.0.0.1'}:${http.port}` : http.url;
  const unannounce = announceDaemon(app.workspace, url);
  let stopping: Promise<void> | null = null;
  return {
    app,
    http,
    token,
    pageUrl: `${url}/?token=${token}`,
    stop: () =>
      (stopping ??= (async () => {
        unannounce();
        metrics.dispose();
        await mcp.close();
        await http.close();
        await app.close();
      })()),
  };
}

/** `/openapi.json` (built on first use, then kept), `/readyz`, `/mcp`. */
function daemonRoutes(app: App, mcp: McpHttp): ApiRoutes {
  let openapi: Record<string, unknown> | null = null;
  return { openapi: () => (openapi ??= openApiDocument(app)), ready: () => readiness(app), mcp: (request) => mcp.handle(request) };
}

/** Print what a person needs: the page URL, where data lives, and whether the models answer. */
export async function announce(daemon: Daemon, print: (line: string) => void): Promise<void> {
  const { app } = daemon;
  if (!isLoopback(app.config.server.host)) print(`WARNING: ${exposedWarning(app.config.server.host)}`);
  print(`subconscious is running — open ${daemon.pageUrl}`);
  print(`  workspace: ${app.workspace}`);
  print(`  store:     ${app.store.location}`);
  const summary = await worldsSummary(app);
  print(`  worlds:    ${worldsLine(summary)}`);
  if (summary.hosts.length) print(`  hosts:     ${summary.hosts.join(', ')}`);
  for (const warning of app.config.warnings) print(`  note: ${warning}`);
  for (const role of ['local', 'agent'] as const) {
    const ep = app.llm.endpoint(role);
    const probe = await app.llm.probe(role).catch((err) => ({ available: false, reason: describeError(err) }));
    if (probe.available) {
      print(`  ${role} model: ${ep.model} at ${ep.baseUrl} — reachable`);
      continue;
    }
    print(`  ${role} model: ${ep.model} at ${ep.baseUrl} — NOT AVAILABLE: ${probe.reason ?? 'it did not answer'}`);
    print(`    The daemon keeps running: work that needs the ${role} model waits and is tried again at each tick; everything else goes on.`);
  }
}

function exposedWarning(host: string): string {
  return (
    `bound to ${host}, beyond this machine: anyone who can reach this address can try the daemon. ` +
    'The token guards /rpc, /events and now /metrics too, but it travels unencrypted over plain HTTP. ' +
    'Keep the default -H 127.0.0.1 and reach it through an SSH tunnel or a TLS proxy unless this network is yours alone.'
  );
}
