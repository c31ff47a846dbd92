/**
 * The daemon's HTTP face: `POST /rpc` (JSON-RPC 2.0, batches), `GET /events` (SSE),
 * `GET /healthz`, `GET /metrics` (Prometheus text), `GET /auth/proof` and the page at `/`.
 *
 * Doors, in the order a request meets them:
 * 1. `Host` must name this daemon (host.ts): every route, so DNS rebinding reads nothing.
 * 2. Every response carries CSP, frame, nosniff and referrer headers (headers.ts).
 * 3. `/rpc` and `/events` need the bearer token (`Authorization: Bearer …`; `/events` also takes
 *    `?token=` because EventSource cannot send headers). Bound to a non-loopback address,
 *    `/metrics` needs it too and `/healthz` says only `ok` without it.
 * 4. `/rpc` bodies are counted as they stream in: past `maxBodyBytes` the answer is 413 and the
 *    connection is closed (after a short lingering read, so the client sees the 413), whether or
 *    not a Content-Length was sent. Batch length, order and the
 *    per-request budget are the dispatcher's (core/rpc.ts).
 * 5. `/events` sends every worker's events with the store's ids and replays what a client missed
 *    (`Last-Event-ID`), see sse.ts.
 * 6. A handler that throws answers 500 "internal error" with an id; the log line has the same id
 *    and the real message, which never goes out.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { serve, type HttpBindings, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Registry as MetricsRegistry } from 'prom-client';
import type { EventHistory } from '../core/events.js';
import type { Presence } from '../core/presence.js';
import type { Logger } from '../core/logger.js';
import { addApiRoutes, type ApiRoutes } from './api-routes.js';
import { readNodeBody, readWebBody } from './body.js';
import { setSecurityHeaders } from './headers.js';
import { hostChecker, isLoopback } from './host.js';
import { RPC_INVALID_REQUEST, type RpcDispatcher } from './rpc.js';
import { lastEventId, relayEvents } from './sse.js';
import { serveStatic } from './static.js';
import { NONCE_PATTERN, PROOF_PATH, daemonProof, tokenMatches } from './token.js';

export const MAX_RPC_BODY_BYTES = 1_000_000;

export interface HttpDeps {
  rpc: RpcDispatcher;
  /** Every worker's events with their ids (the store's event log). */
  events: EventHistory;
  token: string;
  metrics: MetricsRegistry;
  /** Folder of the built page, or null. */
  webRoot: string | null;
  log: Logger;
  health: () => Promise<Record<string, unknown>>;
  /** The address the server is bound to (`-H`); default 127.0.0.1. Decides the allowed `Host` names. */
  bindHost?: string;
  /** Default {@link MAX_RPC_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Counts the clients following `/events` (someone is there to answer approvals). */
  presence?: Presence;
  /** `/openapi.json`, `/readyz`, `/mcp` (api-routes.ts). */
  routes?: ApiRoutes;
  /** The app's clock (default the system's): the time of `/events`' own `hello` and `events.gap`. */
  now?: () => number;
}

type Env = { Bindings: Partial<HttpBindings> };

export function createHttpApp(deps: HttpDeps): Hono<Env> {
  const app = new Hono<Env>();
  const bindHost = deps.bindHost ?? '127.0.0.1';
  const hostAllowed = hostChecker(bindHost);
  const exposed = !isLoopback(bindHost);
  const maxBody = deps.maxBodyBytes ?? MAX_RPC_BODY_BYTES;

  const authorized = (c: Context<Env>, allowQuery: boolean): boolean => {
    const header = c.req.header('authorization');
    const bearer = header?.startsWith('Bearer ') ? header.slice(7).trim() : null;
    return tokenMatches(deps.token, bearer) || (allowQuery && tokenMatches(deps.token, c.req.query('token')));
  };
  const unauthorized = (c: Context<Env>) =>
    c.json(
      {
        error: 'unauthorized',
        message: 'Missing or wrong token. The token is in <workspace>/.subconscious/token; `subconscious start` prints the page URL with it.',
      },
      401,
    );

  app.use('*', async (c, next) => {
    if (!hostAllowed(c.req.header('host'))) {
      deps.log.warn({ host: c.req.header('host') ?? null, path: c.req.path }, 'refused a request for a foreign Host');
      c.res = c.json(
        {
          error: 'forbidden_host',
          message: foreignHostMessage(bindHost, c.req.header('host')),
        },
        403,
      );
    } else {
      await next();
    }
    setSecurityHeaders(c.res.headers);
  });

  app.get('/healthz', async (c) => {
    // Bound beyond loopback, strangers learn only that something answers.
    if (exposed && !authorized(c, false)) return c.json({ ok: true });
    return c.json({ ok: true, ...(await deps.health()) });
  });

  app.get('/metrics', async (c) => {
    if (exposed && !authorized(c, false)) return unauthorized(c);
    const body = await deps.metrics.metrics();
    return c.body(body, 200, { 'content-type': deps.metrics.contentType });
  });

  // Unauthenticated on purpose: a client proves the daemon before it sends the token (token.ts).
  app.get(PROOF_PATH, (c) => {
    const nonce = c.req.query('nonce') ?? '';
    if (!NONCE_PATTERN.test(nonce)) return c.json({ error: 'invalid_params', message: 'nonce: give 16 to 128 URL-safe characters (A-Z a-z 0-9 _ -).' }, 400);
    const socket = c.env?.incoming?.socket;
    if (!socket?.localAddress || !socket.localPort) return c.json({ error: 'unavailable', message: 'The proof needs a TCP connection.' }, 400);
    c.header('cache-control', 'no-store');
    return c.json({ proof: daemonProof(deps.token, { address: socket.localAddress, port: socket.localPort }, nonce) });
  });

  app.post('/rpc', async (c) => {
    if (!authorized(c, false)) return unauthorized(c);
    const tooLarge = () => {
      if (c.env?.incoming) discardThenClose(c.env.incoming);
      else c.header('connection', 'close');
      return c.json(
        {
          jsonrpc: '2.0',
          id: null,
          error: {
            code: RPC_INVALID_REQUEST,
            message: `Request body over ${maxBody.toLocaleString('en-US')} bytes. Send smaller requests (split a batch into several).`,
          },
        },
        413,
      );
    };
    const declared = Number(c.req.header('content-length') ?? 0);
    if (declared > maxBody) return tooLarge();
    const incoming = c.env?.incoming;
    const body = incoming ? await readNodeBody(incoming, maxBody) : await readWebBody(c.req.raw.body, maxBody);
    if (!body.ok) {
      if (body.reason === 'too_large') return tooLarge();
      return c.body(null, 400); // the client went away mid-body: nobody reads this
    }
    const response = await deps.rpc.handleTextAsJson(body.bytes.toString('utf8'), { log: deps.log });
    if (response === null) return c.body(null, 204);
    const headers = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
    if (typeof response !== 'string') {
      // A batch: its answers are written as they come; one of only notifications has none.
      const answers = response[Symbol.asyncIterator]();
      const first = await answers.next();
      if (first.done) return c.body(null, 204);
      return c.body(slicedBody(batchParts(first.value, answers)), 200, headers);
    }
    // As bytes, once (a string was measured, flattened into a copy, then converted again to be
    // written); a large answer in slices, like a batch's.
    const bytes = Buffer.from(response);
    if (bytes.length <= SLICE_BYTES) return c.body(bytes, 200, headers);
    return c.body(slicedBody([bytes]), 200, { ...headers, 'content-length': String(bytes.length) });
  });

  app.get('/events', (c) => {
    if (!authorized(c, true)) return unauthorized(c);
    const resume = lastEventId(c.req.header('last-event-id') ?? c.req.query('last_event_id'));
    if (resume === 'invalid') {
      return c.json(
        { error: 'invalid_params', message: 'Last-Event-ID (or ?last_event_id=) must be the id of an event this daemon sent: a whole number.' },
        400,
      );
    }
    return streamSSE(c, (stream) => relayEvents(stream, deps.events, resume, deps.presence, deps.now));
  });

  addApiRoutes(app, deps.routes ?? {}, { authorized: (c) => authorized(c, false), unauthorized, exposed });
  app.get('*', (c) => serveStatic(deps.webRoot, new URL(c.req.url).pathname));

  app.onError((err, c) => {
    const errorId = randomBytes(6).toString('hex');
    deps.log.error({ err, error_id: errorId, path: c.req.path }, 'http handler failed');
    return c.json(
      {
        error: 'internal',
        error_id: errorId,
        message: `Internal error (error id ${errorId}). The daemon's log has the details under error_id=${errorId}; please report it with that id.`,
      },
      500,
    );
  });

  return app;
}

/** How much of an over-limit body is read and dropped, and for how long, before the connection is cut. */
export const LINGER_BYTES = 64 * 1024 * 1024;
export const LINGER_MS = 2_000;

/**
 * The rest of a refused body: read and dropped (never held) for a moment so the client, still
 * sending, gets to read the 413 — closing at once makes its next write fail and the answer is
 * lost (a "lingering close", as web servers do). After `LINGER_BYTES` or `LINGER_MS` the socket
 * is destroyed, so a 700 MB body costs at most that much reading, and no memory.
 */
function discardThenClose(incoming: IncomingMessage): void {
  let dropped = 0;
  const cut = () => {
    clearTimeout(timer);
    incoming.socket?.destroy();
  };
  const timer = setTimeout(cut, LINGER_MS);
  timer.unref?.();
  incoming.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) cut();
  });
  incoming.once('end', () => clearTimeout(timer)); // the client stopped in time: the connection stays usable
  incoming.once('close', () => clearTimeout(timer));
  incoming.resume();
}

/**
 * The most bytes of an answer written at once. Writing to a socket is work this thread does in the
 * kernel (on loopback it also delivers the bytes to the reader): one 115 KB usage summary took
 * 1.7 ms of it, in one piece, during which a status call waited.
 */
const SLICE_BYTES = 16 * 1024;

/**
 * An answer's bytes streamed in slices of at most `SLICE_BYTES`, each after a turn of the event
 * loop (the server's writer reads the stream in a chain of promise callbacks while the socket
 * takes the writes; without the wait a whole answer went in one stretch: 80 ms for a batch of 100
 * usage summaries). Requests that arrived meanwhile — a status call — are served between slices.
 */
function slicedBody(parts: AsyncIterable<Buffer> | Iterable<Buffer>): ReadableStream<Uint8Array> {
  const next = Symbol.asyncIterator in parts ? parts[Symbol.asyncIterator]() : parts[Symbol.iterator]();
  let bytes: Buffer = Buffer.alloc(0);
  let at = 0;
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (started) await new Promise<void>((resolve) => setImmediate(resolve));
      started = true;
      while (at === bytes.length) {
        const part = await next.next();
        if (part.done) return controller.close();
        bytes = part.value;
        at = 0;
      }
      const end = Math.min(bytes.length, at + SLICE_BYTES);
      controller.enqueue(bytes.subarray(at, end));
      at = end;
    },
  });
}

const [OPEN, COMMA, CLOSE] = [Buffer.from('['), Buffer.from(','), Buffer.from(']')];

/** A batch's answer in parts: its members' texts, each as it comes, in one JSON array. */
async function* batchParts(first: Buffer, rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield Buffer.concat([OPEN, first]);
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield Buffer.concat([COMMA, next.value]);
  yield CLOSE;
}

export interface Listening {
  url: string;
  port: number;
  host: string;
  close(): Promise<void>;
}

export function listen(app: Hono<Env>, opts: { host: string; port: number }): Promise<Listening> {
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

/**
 * What a refused `Host` is told: why (other web sites must not reach the daemon) and what to do —
 * the address to open, with the port the request came to when its header names one.
 */
export function foreignHostMessage(bindHost: string, header: string | undefined): string {
  const port = /:(\d{1,5})$/.exec(header ?? '')?.[1] ?? '<port>';
  return (
    `This daemon answers only to its own address (127.0.0.1, localhost or ${bindHost}), not to Host ${JSON.stringify(header ?? '')}: ` +
    `that keeps other web sites from reaching it. Open it as http://127.0.0.1:${port}/ (the URL \`subconscious start\` prints); ` +
    'to reach it under another address on purpose, restart it bound to that address with -H.'
  );
}
