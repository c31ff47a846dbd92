/**
 * The daemon's HTTP face: `POST /rpc` (JSON-RPC 2.0, batches), `GET /events` (SSE),
 * `GET /healthz`, `GET /metrics` (Prometheus text) and the page at `/`.
 * `/rpc` and `/events` need the bearer token (`Authorization: Bearer …`; `/events` also takes
 * `?token=` because EventSource cannot send headers).
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Registry as MetricsRegistry } from 'prom-client';
import type { Subscribable } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import { RPC_INVALID_REQUEST, type RpcDispatcher } from './rpc.js';
import { serveStatic } from './static.js';
import { tokenMatches } from './token.js';

export const MAX_RPC_BODY_BYTES = 1_000_000;
const SSE_KEEPALIVE_MS = 15_000;
const MAX_SSE_BACKLOG = 1_000;

export interface HttpDeps {
  rpc: RpcDispatcher;
  events: Subscribable;
  token: string;
  metrics: MetricsRegistry;
  /** Folder of the built page, or null. */
  webRoot: string | null;
  log: Logger;
  health: () => Promise<Record<string, unknown>>;
}

export function createHttpApp(deps: HttpDeps): Hono {
  const app = new Hono();

  const authorized = (c: Context, allowQuery: boolean): boolean => {
    const header = c.req.header('authorization');
    const bearer = header?.startsWith('Bearer ') ? header.slice(7).trim() : null;
    return tokenMatches(deps.token, bearer) || (allowQuery && tokenMatches(deps.token, c.req.query('token')));
  };
  const unauthorized = (c: Context) =>
    c.json(
      {
        error: 'unauthorized',
        message: 'Missing or wrong token. The token is in <workspace>/.subconscious/token; `subconscious start` prints the page URL with it.',
      },
      401,
    );

  app.get('/healthz', async (c) => c.json({ ok: true, ...(await deps.health()) }));

  app.get('/metrics', async (c) => {
    const body = await deps.metrics.metrics();
    return c.body(body, 200, { 'content-type': deps.metrics.contentType });
  });

  app.post('/rpc', async (c) => {
    if (!authorized(c, false)) return unauthorized(c);
    const length = Number(c.req.header('content-length') ?? 0);
    if (length > MAX_RPC_BODY_BYTES) {
      return c.json({ jsonrpc: '2.0', id: null, error: { code: RPC_INVALID_REQUEST, message: `Request body over ${MAX_RPC_BODY_BYTES} bytes.` } }, 413);
    }
    const text = await c.req.text();
    const response = await deps.rpc.handleText(text);
    if (response === null) return c.body(null, 204);
    return c.json(response);
  });

  app.get('/events', (c) => {
    if (!authorized(c, true)) return unauthorized(c);
    return streamSSE(c, async (stream) => {
      let id = 0;
      const queue: string[] = [];
      let wake: (() => void) | null = null;
      const unsubscribe = deps.events.subscribe((event) => {
        // A client that stops reading must not grow memory without bound: keep the newest events.
        if (queue.length >= MAX_SSE_BACKLOG) queue.splice(0, queue.length - MAX_SSE_BACKLOG + 1);
        queue.push(JSON.stringify(event));
        wake?.();
      });
      stream.onAbort(() => {
        unsubscribe();
        wake?.();
      });
      await stream.writeSSE({ event: 'message', id: String(++id), data: JSON.stringify({ type: 'hello', at: Date.now(), data: {} }) });
      while (!stream.aborted && !stream.closed) {
        while (queue.length) await stream.writeSSE({ event: 'message', id: String(++id), data: queue.shift()! });
        await new Promise<void>((resolve) => {
          wake = resolve;
          const t = setTimeout(resolve, SSE_KEEPALIVE_MS);
          t.unref?.();
        });
        wake = null;
        if (!queue.length && !stream.aborted) await stream.write(': keepalive\n\n');
      }
      unsubscribe();
    });
  });

  app.get('*', (c) => serveStatic(deps.webRoot, new URL(c.req.url).pathname));

  app.onError((err, c) => {
    deps.log.error({ err }, 'http handler failed');
    return c.json({ error: 'internal', message: err.message }, 500);
  });

  return app;
}

export interface Listening {
  url: string;
  port: number;
  host: string;
  close(): Promise<void>;
}

export function listen(app: Hono, opts: { host: string; port: number }): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    const server: ServerType = serve({ fetch: app.fetch, hostname: opts.host, port: opts.port }, (info) => {
      server.off('error', onError);
      const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        host: opts.host,
        close: () =>
          new Promise<void>((done) => {
            (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
            server.close(() => done());
          }),
      });
    });
    server.on('error', onError);
  });
}
