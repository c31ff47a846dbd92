/**
 * A scripted OpenAI-compatible model server on loopback, for tests. It speaks the real wire
 * protocol (`POST /v1/chat/completions` as JSON or SSE, `GET /v1/models`) so the AI SDK's
 * openai-compatible provider talks to it exactly as it would to Ollama or OpenAI.
 *
 * Tests script replies with `enqueue(...)` (FIFO, consumed first) and/or `handle(fn)` (the
 * default when the queue is empty). With neither, a chat request gets a 500 that says so, so a
 * test never passes on an answer it did not script. Every request is recorded in `requests`.
 *
 *   const server = await startModelServer();
 *   server.enqueue({ text: 'hello' }, { status: 429, retryAfter: 3 });
 *   createLlm({ models: { local: { baseUrl: server.baseUrl, model: 'm', timeoutMs: 500 }, … } })
 *   expect(server.chatRequests[0]!.body.messages).toEqual(…)
 *   await server.close();
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface UsageFigures {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  id?: string;
}

/** Options every reply may carry. */
interface ReplyOptions {
  /** Wait this long (real ms) before answering. */
  delayMs?: number;
  /** Usage figures to send; `null` omits usage; absent: estimated by the server (4 chars/token). */
  usage?: UsageFigures | null;
  /**
   * Send the headers and the first part of the answer, then go silent until the client aborts
   * (a model that stalls mid-stream; without `stream`, a body that never completes).
   */
  stall?: boolean;
  /** The `finish_reason` to send instead of `stop` / `tool_calls` (e.g. `length`: cut at max_tokens). */
  finishReason?: string;
}

export type ScriptedReply =
  | (ReplyOptions & { text: string })
  | (ReplyOptions & { json: unknown })
  | (ReplyOptions & { toolCalls: ScriptedToolCall[]; text?: string })
  | (ReplyOptions & { status: number; retryAfter?: number | string; message?: string })
  | { hang: true }
  | (ReplyOptions & { malformed: true })
  /** HTTP 200 whose body is an error object, not a completion (some proxies do this). */
  | (ReplyOptions & { errorBody: string })
  /** Only a delay: answers an empty assistant message after `delayMs`. */
  | { delayMs: number };

export interface RecordedRequest {
  method: string;
  /** Path including the `/v1` prefix, e.g. `/v1/chat/completions`. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (`null` for GET or an unparsable body). */
  body: ChatBody | null;
  /** True when the client went away before the answer was complete (abort, timeout). */
  aborted: boolean;
}

/** The fields of an OpenAI chat request the tests look at; everything else is kept too. */
export interface ChatBody {
  model?: string;
  messages?: ChatMessage[];
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  tool_choice?: unknown;
  max_tokens?: number;
  temperature?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: unknown;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

export type ReplyHandler = (request: RecordedRequest) => ScriptedReply | Promise<ScriptedReply>;

export interface ModelServer {
  /** `http://127.0.0.1:PORT/v1` — the base URL an OpenAI-compatible client is configured with. */
  readonly baseUrl: string;
  readonly port: number;
  /** Every request received, in order (chat and models). */
  readonly requests: RecordedRequest[];
  /** Only the `POST /v1/chat/completions` requests. */
  readonly chatRequests: RecordedRequest[];
  /** Scripted replies not consumed yet. */
  readonly pending: number;
  /** Model ids listed by `GET /v1/models`. */
  models: string[];
  /** When set, `GET /v1/models` answers this fault instead of the list. */
  modelsFault: { status: number; message?: string } | undefined;
  /**
   * `response_format` types this server refuses with a 400, as an older vLLM or llama.cpp server
   * does (e.g. `['json_schema']`); the request is recorded, no scripted reply is used.
   */
  refuseResponseFormat: string[];
  /** Queue replies (FIFO) for the next chat requests. */
  enqueue(...replies: ScriptedReply[]): void;
  /** The reply for chat requests when the queue is empty (replaces any previous handler). */
  handle(handler: ReplyHandler | undefined): void;
  /** Forget recorded requests and queued replies. */
  reset(): void;
  /** Stop listening and drop open connections (hung requests included). Idempotent. */
  close(): Promise<void>;
  readonly closed: boolean;
}

export interface ModelServerOptions {
  models?: string[];
}

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let handler: ReplyHandler | undefined;
  let closed = false;
  let seq = 0;

  const server = http.createServer((req, res) => {
    void serve(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `model server crashed: ${String(err)}`);
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const state: ModelServer = {
    baseUrl: '',
    port: 0,
    requests,
    get chatRequests() {
      return requests.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions'));
    },
    get pending() {
      return queue.length;
    },
    models: opts.models ?? ['scripted-model'],
    modelsFault: undefined,
    refuseResponseFormat: [],
    enqueue: (...replies) => void queue.push(...replies),
    handle: (fn) => {
      handler = fn;
    },
    reset: () => {
      requests.length = 0;
      queue.length = 0;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    get closed() {
      return closed;
    },
  };

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    let body: ChatBody | null = null;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw) as ChatBody;
      } catch {
        body = null;
      }
    }
    const record: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, aborted: false };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });

    if (req.method === 'GET' && path === '/v1/models') return serveModels(res);
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return sendError(res, 404, `model server: no route for ${req.method} ${path}`);
    }
    if (body === null || !Array.isArray(body.messages)) {
      return sendError(res, 400, 'model server: the body must be JSON with a `messages` array');
    }

    const format = (body.response_format as { type?: unknown } | undefined)?.type;
    if (typeof format === 'string' && state.refuseResponseFormat.includes(format)) {
      return sendError(res, 400, `response_format type "${format}" is not supported by this server`);
    }
    const reply = queue.shift() ?? (handler ? await handler(record) : undefined);
    if (!reply) {
      return sendError(res, 500, 'model server: no scripted reply (enqueue one or set a handler)');
    }
    await answer(reply, body, res);
  }

  function serveModels(res: http.ServerResponse): void {
    const fault = state.modelsFault;
    if (fault) return sendError(res, fault.status, fault.message ?? `models endpoint fault ${fault.status}`);
    sendJson(res, 200, {
      object: 'list',
      data: state.models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })),
    });
  }

  async function answer(reply: ScriptedReply, body: ChatBody, res: http.ServerResponse): Promise<void> {
    if ('hang' in reply) return; // the socket stays open until the client aborts or close()
    if (reply.delayMs) {
      await new Promise((r) => setTimeout(r, reply.delayMs));
      if (res.destroyed) return;
    }
    if ('status' in reply) {
      const headers: Record<string, string> = {};
      if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
      return sendError(res, reply.status, reply.message ?? defaultFaultMessage(reply.status), headers);
    }
    if ('errorBody' in reply) return sendJson(res, 200, { error: { message: reply.errorBody, type: 'server_error', code: null } });
    if ('malformed' in reply) {
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.end('data: {"id":"chatcmpl-broken","choices":[{"delta":{"content":\n\ndata: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"message":');
      }
      return;
    }

    const text = 'text' in reply && reply.text !== undefined ? reply.text : 'json' in reply ? JSON.stringify(reply.json) : '';
    const toolCalls = ('toolCalls' in reply ? reply.toolCalls : []).map((call, i) => ({
      id: call.id ?? `call_${++seq}_${i}`,
      type: 'function' as const,
      function: { name: call.name, arguments: JSON.stringify(call.arguments) },
    }));
    const usage = 'usage' in reply && reply.usage !== undefined ? reply.usage : estimateUsage(body, text, toolCalls);
    const id = `chatcmpl-${++seq}`;
    const model = body.model ?? state.models[0] ?? 'scripted-model';
    const finishReason = ('finishReason' in reply && reply.finishReason) || (toolCalls.length > 0 ? 'tool_calls' : 'stop');

    if (!body.stream && 'stall' in reply && reply.stall) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"' + id + '","object":"chat.completion","choices":[');
      return; // never ends: the client's timeout or abort closes it
    }
    if (!body.stream) {
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created: 0,
        model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text.length > 0 ? text : null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
            finish_reason: finishReason,
          },
        ],
        ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
      });
    }

    // Streamed: role, text in a few pieces, each tool call's arguments in two pieces, finish,
    // then (only when the client asked with stream_options.include_usage) a usage chunk.
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const base = { id, object: 'chat.completion.chunk', created: 0, model };
    const send = (choices: unknown[], extra: Record<string, unknown> = {}) => res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
    send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    for (const piece of splitText(text)) send([{ index: 0, delta: { content: piece }, finish_reason: null }]);
    if ('stall' in reply && reply.stall) return; // headers and text sent; the end never comes
    toolCalls.forEach((call, index) => {
      const args = call.function.arguments;
      const cut = Math.floor(args.length / 2);
      send([
        {
          index: 0,
          delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: args.slice(0, cut) } }] },
          finish_reason: null,
        },
      ]);
      send([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(cut) } }] }, finish_reason: null }]);
    });
    send([{ index: 0, delta: {}, finish_reason: finishReason }]);
    if (usage && body.stream_options?.include_usage) {
      send([], { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  Object.assign(state, { port, baseUrl: `http://127.0.0.1:${port}/v1` });
  return state;
}

/**
 * A base URL on which nothing listens (a port bound, then released): connection refused,
 * for "model down" tests that never had a server.
 */
export async function unreachableBaseUrl(): Promise<string> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

function defaultFaultMessage(status: number): string {
  if (status === 429) return 'Rate limit reached for requests. Please try again later.';
  if (status === 413) return 'Request too large.';
  if (status >= 500) return 'The server had an error while processing your request.';
  return `Request failed with status ${status}.`;
}

/** The server's own usage figures when a reply does not script them (4 chars/token). */
function estimateUsage(body: ChatBody, text: string, toolCalls: Array<{ function: { arguments: string } }>): UsageFigures {
  const prompt = JSON.stringify(body.messages ?? []).length;
  const completion = text.length + toolCalls.reduce((n, c) => n + c.function.arguments.length, 0);
  return { prompt_tokens: Math.ceil(prompt / 4), completion_tokens: Math.ceil(completion / 4) };
}

function splitText(text: string): string[] {
  if (text.length === 0) return [];
  const pieces = text.match(/[\s\S]{1,16}/g) ?? [text];
  return pieces;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers });
  res.end(payload);
}

function sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, param: null, code: status === 429 ? 'rate_limit_exceeded' : null } }, headers);
}
