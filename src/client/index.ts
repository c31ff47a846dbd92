/**
 * The typed client for a running daemon (`subconscious-engine/client`): JSON-RPC over `POST /rpc`
 * and events over `GET /events` (SSE), both with the bearer token. Browser-safe: `fetch`,
 * streams and `TextDecoder` only, so the same file runs in Node 20+ and in a page.
 *
 *   const client = createClient({ url: 'http://127.0.0.1:7777', token });
 *   const task = await client.call('subconscious.tasks_add', { title: 'Check urgent emails' });
 *   const stop = client.subscribe((event) => { if (event.type === 'tasks.changed') … });
 *
 * Methods and events are typed from the protocol's contracts (`ProductMethods`, `ProductEvents`);
 * a daemon with extra modules is typed by passing their maps (`createClient<MyMethods, MyEvents>`).
 * The event stream reconnects by itself and sends `Last-Event-ID`, so a daemon that keeps a
 * backlog replays what was missed.
 */
import {
  WEBHOOK_TOLERANCE_SECONDS,
  createRpcClient,
  type EventMap,
  type MethodMap,
  type ProductEvents,
  type ProductMethods,
  type RpcCall,
  type WireEvent,
} from '../protocol/index.js';

export interface ClientOptions {
  /** The daemon's origin, e.g. `http://127.0.0.1:7777` (what `subconscious start` prints, without `/?token=…`). */
  url: string;
  /** `<workspace>/.subconscious/token`. */
  token: string;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
}

/** A daemon's answer that is not a result: a JSON-RPC error (`rpc`) or an HTTP refusal (`http`). */
export class SubconsciousClientError extends Error {
  override readonly name = 'SubconsciousClientError';
  constructor(
    message: string,
    /**
     * The daemon's error code (errors.ts's list, e.g. `invalid_params`, `not_found`, `conflict`),
     * or for an HTTP refusal its `error` field (`unauthorized`, `forbidden_host`), or `network`.
     */
    readonly code: string,
    readonly details: {
      /** JSON-RPC error code (-32602 invalid params, -32601 unknown method, -32000 app error, -32603 internal). */
      rpcCode?: number;
      /** HTTP status, when the refusal came before JSON-RPC. */
      status?: number;
      /** What to do about it, when the daemon said. */
      hint?: string;
      /** The id of a daemon-side internal error, to find it in the daemon's log. */
      errorId?: string;
      method?: string;
    } = {},
  ) {
    super(message);
  }
}

export interface SubscribeOptions<E extends EventMap> {
  /** Only these event types (default: all). */
  types?: readonly (keyof E & string)[];
  /** Resume after this event id (a daemon with a backlog replays what came after it). */
  lastEventId?: string;
  /** Called when the stream drops and when it is back (`connected`), e.g. to refresh a view. */
  onStatus?: (status: 'connected' | 'reconnecting', error?: unknown) => void;
  /** Stops the stream, like the function `subscribe` returns. */
  signal?: AbortSignal;
}

export interface SubconsciousClient<M extends MethodMap, E extends EventMap> {
  /** One typed call: params checked against the contract, resolves to the method's result. */
  call: RpcCall<M>;
  /** Every event as it happens, typed by name; returns "stop". Reconnects with `Last-Event-ID`. */
  subscribe(listener: (event: WireEvent<E>, id: string | null) => void, opts?: SubscribeOptions<E>): () => void;
  /** The next event of `type` whose payload passes `where`. */
  next<K extends keyof E & string>(type: K, where?: (data: E[K]) => boolean, opts?: { signal?: AbortSignal }): Promise<{ type: K; at: number; data: E[K] }>;
  /** `GET /healthz` (process up, worlds, models). */
  health(): Promise<Record<string, unknown>>;
  /** `GET /readyz`: `ready` false (HTTP 503) while the store or a model does not answer. */
  ready(): Promise<{ ready: boolean; checks: Record<string, { ok: boolean; detail: string | null }> }>;
  /** `GET /openapi.json`: the OpenAPI 3.1 description of every method and event. */
  openapi(): Promise<Record<string, unknown>>;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 15_000;

export function createClient<M extends MethodMap = ProductMethods, E extends EventMap = ProductEvents>(opts: ClientOptions): SubconsciousClient<M, E> {
  const base = opts.url.replace(/\/+$/, '');
  const doFetch = opts.fetch ?? ((input, init) => fetch(input, init));
  const auth = { authorization: `Bearer ${opts.token}` };
  let nextId = 1;

  const request = async (path: string, init: RequestInit, what: string): Promise<Response> => {
    try {
      return await doFetch(`${base}${path}`, init);
    } catch (err) {
      throw new SubconsciousClientError(
        `${what}: the daemon at ${base} did not answer (${(err as Error).message}). Is \`subconscious start\` running?`,
        'network',
      );
    }
  };

  const refused = async (res: Response, what: string): Promise<SubconsciousClientError> => {
    const body = (await res.json().catch(() => ({}))) as { error?: unknown; message?: string };
    const code = typeof body.error === 'string' ? body.error : `http_${res.status}`;
    return new SubconsciousClientError(`${what}: ${body.message ?? `HTTP ${res.status}`}`, code, { status: res.status });
  };

  const transport = async (method: string, params: Record<string, unknown>): Promise<unknown> => {
    const res = await request(
      '/rpc',
      { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }) },
      method,
    );
    if (res.status !== 200) throw await refused(res, method);
    const answer = (await res.json()) as {
      result?: unknown;
      error?: { code: number; message: string; data?: { code?: string; hint?: string; error_id?: string } };
    };
    if (!answer.error) return answer.result;
    const data = answer.error.data ?? {};
    throw new SubconsciousClientError(answer.error.message, data.code ?? rpcCodeName(answer.error.code), {
      rpcCode: answer.error.code,
      method,
      ...(data.hint ? { hint: data.hint } : {}),
      ...(data.error_id ? { errorId: data.error_id } : {}),
    });
  };

  const getJson = async (path: string, okStatuses: number[]) => {
    const res = await request(path, { headers: auth }, `GET ${path}`);
    if (!okStatuses.includes(res.status)) throw await refused(res, `GET ${path}`);
    return res.json() as Promise<never>;
  };

  const subscribe: SubconsciousClient<M, E>['subscribe'] = (listener, sub = {}) => {
    const stop = new AbortController();
    sub.signal?.addEventListener('abort', () => stop.abort(), { once: true });
    const wanted = sub.types ? new Set<string>(sub.types) : null;
    let lastId = sub.lastEventId ?? null;
    void (async () => {
      let delay = RECONNECT_MIN_MS;
      while (!stop.signal.aborted) {
        try {
          const headers: Record<string, string> = { ...auth, accept: 'text/event-stream' };
          if (lastId !== null) headers['last-event-id'] = lastId;
          const res = await doFetch(`${base}/events`, { headers, signal: stop.signal });
          if (res.status !== 200 || !res.body) throw await refused(res, 'GET /events');
          sub.onStatus?.('connected');
          delay = RECONNECT_MIN_MS;
          for await (const message of sseMessages(res.body)) {
            if (message.id !== null) lastId = message.id;
            const event = JSON.parse(message.data) as WireEvent<E> | { type: 'hello' };
            if (event.type === 'hello' || (wanted && !wanted.has(event.type))) continue;
            listener(event as WireEvent<E>, message.id);
          }
        } catch (err) {
          if (stop.signal.aborted) break;
          // A wrong token never heals by retrying: stop and say so.
          if (err instanceof SubconsciousClientError && (err.code === 'unauthorized' || err.code === 'forbidden_host')) {
            sub.onStatus?.('reconnecting', err);
            break;
          }
          sub.onStatus?.('reconnecting', err);
        }
        if (stop.signal.aborted) break;
        await pause(delay, stop.signal);
        delay = Math.min(delay * 2, RECONNECT_MAX_MS);
      }
    })();
    return () => stop.abort();
  };

  return {
    call: createRpcClient<M>(transport),
    subscribe,
    next: (type, where = () => true, nextOpts = {}) =>
      new Promise((resolve, reject) => {
        const controller = new AbortController();
        nextOpts.signal?.addEventListener('abort', () => {
          controller.abort();
          reject(new SubconsciousClientError(`stopped waiting for ${type}`, 'cancelled'));
        });
        subscribe(
          (event) => {
            if (event.type !== type || !where(event.data as E[typeof type])) return;
            controller.abort();
            resolve(event as { type: typeof type; at: number; data: E[typeof type] });
          },
          { types: [type], signal: controller.signal },
        );
      }),
    health: () => getJson('/healthz', [200]),
    ready: () => getJson('/readyz', [200, 503]),
    openapi: () => getJson('/openapi.json', [200]),
  };
}

function rpcCodeName(code: number): string {
  if (code === -32602) return 'invalid_params';
  if (code === -32601) return 'method_not_found';
  if (code === -32600) return 'invalid_request';
  return code === -32603 ? 'internal' : 'rpc_error';
}

/** The messages of an SSE stream (the WHATWG event-stream format: `id:`, `data:` lines, blank line ends one). */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id: string | null; event: string; data: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | null = null;
  let event = 'message';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        if (newline === buffer.length - 1 && buffer.endsWith('\r')) break; // its \n may come in the next chunk
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length) yield { id, event, data: data.join('\n') };
          event = 'message';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(text);
        else if (field === 'id' && !text.includes('\0')) id = text;
        else if (field === 'event') event = text;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Check a webhook from the daemon (the heartbeat's dispatches to your own agent runtime): the
 * `x-subconscious-signature` header (`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`)
 * against your secret, over the raw body exactly as received, and its timestamp within
 * `toleranceSeconds` of `now` (a replay is refused). WebCrypto only: Node 20+ and browsers.
 *
 *   if (!(await verifyWebhookSignature({ secret, body: rawBody, header: req.headers['x-subconscious-signature'] }))) return res.writeHead(401).end();
 */
export async function verifyWebhookSignature(opts: {
  secret: string;
  /** The request body as received (a string, or its bytes), before any JSON parsing. */
  body: string | Uint8Array;
  header: string | null | undefined;
  /** Epoch ms (default `Date.now()`). */
  now?: number;
  toleranceSeconds?: number;
}): Promise<boolean> {
  if (!opts.header) return false;
  const parts = new Map(opts.header.split(',').map((p) => p.trim().split('=', 2) as [string, string | undefined]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1');
  const now = opts.now ?? Date.now();
  if (!Number.isInteger(t) || !given || Math.abs(now / 1000 - t) > (opts.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) return false;
  const encoder = new TextEncoder();
  const body = typeof opts.body === 'string' ? opts.body : new TextDecoder().decode(opts.body);
  const key = await crypto.subtle.importKey('raw', encoder.encode(opts.secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`${t}.${body}`)));
  const expected = Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('');
  // Constant time over the whole length.
  if (given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ given.charCodeAt(i);
  return diff === 0;
}

export type { ProductMethods, ProductEvents, WireEvent, RpcCall, RuntimeWebhook, RuntimeDispatch } from '../protocol/index.js';
export { WEBHOOK_SIGNATURE_HEADER, WEBHOOK_IDEMPOTENCY_HEADER, WEBHOOK_ATTEMPT_HEADER, WEBHOOK_EVENT_HEADER } from '../protocol/index.js';
