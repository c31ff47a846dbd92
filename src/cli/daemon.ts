/**
 * `subconscious start`: the daemon — scheduler, HTTP (RPC, SSE, metrics, page) and a clean stop
 * on SIGTERM/SIGINT (every tick stopped at a checkpoint, nothing half-written).
 */
import { createApp, WEB_ROOT, type App } from '../app/app.js';
import { describeError } from '../core/errors.js';
import { createHttpApp, listen, type Listening } from '../server/http.js';
import { createMetrics } from '../server/metrics.js';
import { ensureToken } from '../server/token.js';
import { announceDaemon } from './remote.js';

export interface DaemonOptions {
  workspace: string;
  port?: number;
  host?: string;
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
  const app = await createApp({ workspace: opts.workspace, overrides });
  let http: Listening;
  const metrics = createMetrics(app.llm.ledger, app.events);
  const token = ensureToken(app.workspace);
  try {
    const server = createHttpApp({
      rpc: app.rpc,
      events: app.events,
      token,
      metrics: metrics.registry,
      webRoot: WEB_ROOT,
      log: app.log,
      health: async () => ({ worlds: app.registry.names(), store: app.store.dialect }),
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
  await app.start();
  const unannounce = announceDaemon(app.workspace, http.url);
  let stopping: Promise<void> | null = null;
  return {
    app,
    http,
    token,
    pageUrl: `${http.url}/?token=${token}`,
    stop: () =>
      (stopping ??= (async () => {
        unannounce();
        metrics.dispose();
        await http.close();
        await app.close();
      })()),
  };
}

/** Print what a person needs: the page URL, where data lives, and whether the models answer. */
export async function announce(daemon: Daemon, print: (line: string) => void): Promise<void> {
  const { app } = daemon;
  print(`subconscious is running — open ${daemon.pageUrl}`);
  print(`  workspace: ${app.workspace}`);
  print(`  store:     ${app.store.location}`);
  print(`  worlds:    ${app.registry.names().join(', ') || '(none)'}`);
  for (const warning of app.config.warnings) print(`  note: ${warning}`);
  for (const role of ['local', 'agent'] as const) {
    const ep = app.llm.endpoint(role);
    const probe = await app.llm.probe(role).catch((err) => ({ available: false, reason: describeError(err) }));
    print(
      `  ${role} model: ${ep.model} at ${ep.baseUrl} — ${probe.available ? 'reachable' : `UNAVAILABLE (${probe.reason}); ticks that need it are skipped until it answers`}`,
    );
  }
}
