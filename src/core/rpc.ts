/**
 * JSON-RPC 2.0 dispatch (single calls and batches). Methods are registered with a zod schema
 * for their params; bad params get -32602 naming the field (a string holding U+0000 anywhere in
 * the params is bad params for every method: Postgres text cannot store it). Application errors
 * (`SubconsciousError`) get -32000 with `data: { code, hint }`. Anything else a handler throws is
 * a bug: the caller gets -32603 "internal error" with an `error_id`, the log line carries the same
 * id and the real message, and the server keeps serving. The internal message never goes out.
 *
 * Bounded work per request (better-sqlite3 is synchronous: a run of queries with no yield blocks
 * every other request, `subconscious.status` included — 3,000 calls in one `Promise.all` batch
 * once held status up for 57 s):
 * - a batch holds at most `maxBatch` (100) calls; a longer one is refused whole (-32600);
 * - batch members run one after another, in order, yielding to the event loop between them, and
 *   the members of all requests take turns in one lane, so neither one batch nor several at once
 *   hold up other requests by more than about one member;
 * - single calls of a method that has proved heavy (its calls average `heavyMs`, 10 ms, or more)
 *   take turns in the same lane: a hundred `usage.summary` sent at once as separate requests are
 *   a batch in all but name. Light calls (`subconscious.status`, about 1 ms) never wait there;
 * - a request has a budget of `requestBudgetMs` (10 s) of its members' own running time: members
 *   after it is spent are answered -32000 `over_budget` without running, to be sent again.
 */
import { randomBytes } from 'node:crypto';
import { z, type ZodType } from 'zod';
import type { BoundMethod } from '../protocol/contract.js';
import { SubconsciousError } from './errors.js';
import type { Logger } from './logger.js';

export const RPC_PARSE_ERROR = -32700;
export const RPC_INVALID_REQUEST = -32600;
export const RPC_METHOD_NOT_FOUND = -32601;
export const RPC_INVALID_PARAMS = -32602;
export const RPC_INTERNAL_ERROR = -32603;
export const RPC_APP_ERROR = -32000;

/** The most calls one batch may hold. */
export const MAX_BATCH_LENGTH = 100;
/** A method whose calls average this long is heavy (see the header). */
export const HEAVY_CALL_MS = 10;
/** Wall-clock time one request (a batch) may use before its remaining members are refused. */
export const REQUEST_BUDGET_MS = 10_000;

/** A method as the dispatcher serves it: bound to its contract with `implement` (protocol/). */
export type RpcMethod = BoundMethod;

/** One method without a contract (tests of the dispatcher itself). */
export function defineMethod<S extends ZodType>(name: string, params: S, description: string, handler: (params: z.output<S>) => unknown): RpcMethod {
  return { name, params, description, handler };
}

type Id = string | number | null;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export type RpcResponse = { jsonrpc: '2.0'; id: Id; result: unknown } | { jsonrpc: '2.0'; id: Id; error: RpcError };

export interface RpcDispatcherOptions {
  /** Where internal errors are written (with their `error_id`). A request may name its own. */
  log?: Logger;
  /** Default {@link MAX_BATCH_LENGTH}. */
  maxBatch?: number;
  /** Default {@link REQUEST_BUDGET_MS}. */
  requestBudgetMs?: number;
  /** A method whose calls take this long on average is heavy: its single calls take turns in the lane too (default {@link HEAVY_CALL_MS}). */
  heavyMs?: number;
  /**
   * Methods whose single calls never take the lane, whatever their calls have cost: the lane is
   * there so heavy work cannot hold these up. The app names `subconscious.status`: on a loaded
   * machine its calls averaged over 10 ms (the process descheduled mid-call), it counted as heavy,
   * and a status call then queued behind 100 `usage.summary` for 18 s.
   */
  neverQueued?: readonly string[];
  /** How long one batch member holds the lane before the next may start (default 250 ms). */
  laneHoldMs?: number;
  /** Monotonic milliseconds, for the budget (default `performance.now`). */
  now?: () => number;
  /** Ids for internal errors (default 12 random hex characters). */
  errorId?: () => string;
}

/** Per request: the HTTP face passes its logger so the error's log line lands in the daemon's log. */
export interface HandleOptions {
  log?: Logger;
}

const requestShape = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  params: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
});

/** One answered call, with the thrown value behind an internal error (kept in-process, never sent). */
interface Outcome {
  response: RpcResponse | null;
  internal?: unknown;
  /** The answer as JSON text (null: a notification's), when the caller asked for text and it was made in a lane turn. */
  text?: string | null;
}

/**
 * Two turns of the event loop: the first `setImmediate` ends the current check phase, the second
 * runs only after a whole poll phase, so requests that arrived meanwhile (a `subconscious.status`)
 * have been read and have started their queries before the next batch member starts its own.
 * One turn is not enough: measured, status then waits behind a member almost every time.
 */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

/**
 * Batch members of every request (and single calls of heavy methods) take turns here, one at a time, first come first served, with
 * a yield to the event loop before each: five
 * clients each sending a heavy batch hold other requests up no more than one does. Single calls
 * never wait here. A member still running after `holdMs` lets the next one go: its timer could
 * only fire because the event loop was free, so it is waiting on something else (a model, an
 * approval), not holding this process's CPU.
 */
/**
 * How long each method's calls take (a moving average). A method not yet measured counts as
 * heavy, so a flood of first calls is held to the lane too; one call later it is known.
 */
class MethodCost {
  private readonly average = new Map<string, number>();

  constructor(private readonly heavyMs: number) {}

  record(name: string, ms: number): void {
    const before = this.average.get(name);
    this.average.set(name, before === undefined ? ms : before * 0.7 + ms * 0.3);
  }

  heavy(name: string): boolean {
    return (this.average.get(name) ?? Infinity) >= this.heavyMs;
  }
}

class BatchLane {
  private busy = false;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly holdMs: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    // A gap before every member, whichever request it belongs to: what arrived meanwhile goes first.
    await yieldToEventLoop();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    };
    const timer = setTimeout(release, this.holdMs);
    timer.unref?.();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private acquire(): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}

export class RpcDispatcher {
  private readonly methods = new Map<string, RpcMethod>();
  /** `method:param` pairs whose deprecation was logged already (once per process). */
  private readonly deprecationsSaid = new Set<string>();
  private readonly log: Logger | undefined;
  private readonly maxBatch: number;
  private readonly budgetMs: number;
  private readonly lane: BatchLane;
  private readonly cost: MethodCost;
  private readonly neverQueued: ReadonlySet<string>;
  private readonly now: () => number;
  private readonly errorId: () => string;

  constructor(methods: RpcMethod[] = [], opts: RpcDispatcherOptions = {}) {
    this.log = opts.log;
    this.maxBatch = opts.maxBatch ?? MAX_BATCH_LENGTH;
    this.budgetMs = opts.requestBudgetMs ?? REQUEST_BUDGET_MS;
    this.lane = new BatchLane(opts.laneHoldMs ?? 250);
    this.cost = new MethodCost(opts.heavyMs ?? HEAVY_CALL_MS);
    this.neverQueued = new Set(opts.neverQueued ?? []);
    this.now = opts.now ?? (() => performance.now());
    this.errorId = opts.errorId ?? (() => randomBytes(6).toString('hex'));
    for (const m of methods) this.add(m);
  }

  add(method: RpcMethod): void {
    if (this.methods.has(method.name)) throw new Error(`RPC method ${method.name} registered twice`);
    this.methods.set(method.name, method);
  }

  list(): { name: string; description: string }[] {
    return [...this.methods.values()].map((m) => ({ name: m.name, description: m.description })).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** A method's params schema (the fuzz suite and docs read it); undefined for an unknown name. */
  paramsOf(name: string): ZodType | undefined {
    return this.methods.get(name)?.params;
  }

  /** Handle a raw request body (text). Returns null when nothing is to be sent (notifications only). */
  async handleText(body: string, opts: HandleOptions = {}): Promise<RpcResponse | RpcResponse[] | null> {
    const parsed = parseBody(body);
    return parsed.ok ? this.handle(parsed.payload, opts) : parsed.failure;
  }

  /**
   * `handleText` with the answer as JSON text (what the HTTP door sends): a single call's as one
   * text; a batch's as one text per member, in UTF-8 bytes, each given out as soon as its member is
   * answered (none: the batch held only notifications). Neither is ever held as objects: 100 usage
   * summaries waiting as object graphs were copied by every young-generation garbage collection
   * meanwhile, whose pauses (5–13 ms) every other request waited out.
   */
  async handleTextAsJson(body: string, opts: HandleOptions = {}): Promise<string | AsyncIterable<Buffer> | null> {
    const parsed = parseBody(body);
    if (!parsed.ok) return JSON.stringify(parsed.failure);
    if (Array.isArray(parsed.payload) && parsed.payload.length > 0 && parsed.payload.length <= this.maxBatch) {
      const payload = parsed.payload;
      // As bytes (outside the JS heap), each as soon as its member is answered.
      return eagerStream<Buffer>((emit) => this.batch(payload, opts, (r) => Buffer.from(JSON.stringify(r)), emit));
    }
    if (Array.isArray(parsed.payload)) return JSON.stringify(await this.handle(parsed.payload, opts));
    const { response, text } = await this.one(parsed.payload, opts, true, true);
    return text !== undefined ? text : response === null ? null : JSON.stringify(response);
  }

  async handle(payload: unknown, opts: HandleOptions = {}): Promise<RpcResponse | RpcResponse[] | null> {
    if (!Array.isArray(payload)) return (await this.one(payload, opts, true)).response;
    if (payload.length === 0) return failure(null, RPC_INVALID_REQUEST, 'Invalid Request: empty batch. Send at least one call.');
    if (payload.length > this.maxBatch) {
      return failure(
        null,
        RPC_INVALID_REQUEST,
        `Invalid Request: a batch holds at most ${this.maxBatch} calls (got ${payload.length}). Send them in several batches of ${this.maxBatch} or fewer.`,
        { max_batch: this.maxBatch, got: payload.length },
      );
    }
    const sent: RpcResponse[] = [];
    await this.batch(
      payload,
      opts,
      (r) => r,
      (r) => sent.push(r),
    );
    return sent.length ? sent : null;
  }

  /**
   * A batch's members in order, one at a time, yielding between them, in the shared lane: never
   * Promise.all. Each answer is made what the caller keeps (`keep`) within its member's turn: a
   * batch waiting behind others' members is old by then, and an answer's objects held by it were
   * copied by every young collection until the next full one (see `one`).
   */
  private async batch<T>(payload: readonly unknown[], opts: HandleOptions, keep: (response: RpcResponse) => T, emit: (kept: T) => void): Promise<void> {
    let spent = 0;
    for (let i = 0; i < payload.length; i++) {
      const member: unknown = payload[i];
      const kept =
        spent > this.budgetMs
          ? keepOf(this.overBudget(member, spent, payload.length - i), keep)
          : await this.lane.run(async () => {
              const started = this.now();
              try {
                return keepOf((await this.one(member, opts)).response, keep);
              } finally {
                spent += this.now() - started;
              }
            });
      if (kept !== null) emit(kept);
    }
  }

  /**
   * Call a method directly (the CLI and tests use this; same validation as over HTTP). A bug in
   * the handler is thrown as `rpc_error` with the original error as its `cause` (this process may
   * see it; a remote caller never does).
   */
  async call(name: string, params: unknown = {}): Promise<unknown> {
    const { response: res, internal } = await this.one({ jsonrpc: '2.0', method: name, params, id: 0 }, {}, true);
    if (res && 'error' in res) {
      const data = (res.error.data ?? {}) as { code?: string; hint?: string; error_id?: string };
      throw new SubconsciousError(data.code ?? 'rpc_error', res.error.message, {
        ...(data.hint ? { hint: data.hint } : {}),
        ...(internal !== undefined ? { cause: internal, details: { error_id: data.error_id } } : {}),
      });
    }
    return res?.result;
  }

  /**
   * Old param names (a rename keeps them for a release): moved to their new name unless that is
   * given too, with one deprecation line per method and name in this process's log.
   */
  private renameParams(method: RpcMethod, params: unknown, opts: HandleOptions): unknown {
    if (!method.renamed || params === null || typeof params !== 'object' || Array.isArray(params)) return params;
    let out: Record<string, unknown> | null = null;
    for (const [from, to] of Object.entries(method.renamed)) {
      if (!Object.hasOwn(params, from)) continue;
      out ??= { ...(params as Record<string, unknown>) };
      if (!Object.hasOwn(out, to)) out[to] = out[from];
      delete out[from];
      const said = `${method.name}:${from}`;
      if (!this.deprecationsSaid.has(said)) {
        this.deprecationsSaid.add(said);
        (opts.log ?? this.log)?.warn(
          { method: method.name, param: from, now: to },
          `${method.name}: the param "${from}" is now "${to}"; the old name works for one more release`,
        );
      }
    }
    return out ?? params;
  }

  /**
   * `single`: a call of its own (not a batch member), which takes the lane only when its method has
   * proved heavy. `asText`: such a call's answer is made JSON text within its lane turn (`text`).
   */
  private async one(raw: unknown, opts: HandleOptions, single = false, asText = false): Promise<Outcome> {
    const req = requestShape.safeParse(raw);
    if (!req.success) {
      return {
        response: failure(
          idOf(raw),
          RPC_INVALID_REQUEST,
          'Invalid Request: expected {"jsonrpc":"2.0","method":string,"params"?:object|array,"id"?:string|number|null}.',
        ),
      };
    }
    const { method: name, params, id } = req.data;
    const isNotification = id === undefined;
    const answer = (response: RpcResponse): RpcResponse | null => (isNotification ? null : response);
    const method = this.methods.get(name);
    if (!method) {
      return { response: answer(failure(id ?? null, RPC_METHOD_NOT_FOUND, `Method not found: ${name}. Call rpc.methods for the list this daemon serves.`)) };
    }
    const nul = params === undefined ? null : findNul(params);
    if (nul !== null) {
      const issue = { field: nul || '(params)', message: 'must not contain the NUL character (U+0000); remove it and send again' };
      return { response: answer(failure(id ?? null, RPC_INVALID_PARAMS, `Invalid params for ${name}: ${issue.field}: ${issue.message}`, { issues: [issue] })) };
    }
    try {
      const checked = method.params.safeParse(this.renameParams(method, params === undefined ? {} : params, opts));
      if (!checked.success) {
        const issues = checked.error.issues.map((i) => ({ field: i.path.join('.') || '(params)', message: i.message }));
        const first = issues[0];
        return {
          response: answer(
            failure(id ?? null, RPC_INVALID_PARAMS, `Invalid params for ${name}: ${first ? `${first.field}: ${first.message}` : 'rejected'}`, { issues }),
          ),
        };
      }
      const run = async () => {
        const started = this.now();
        try {
          return await (method.handler as (params: unknown) => unknown)(checked.data);
        } finally {
          this.cost.record(name, this.now() - started);
        }
      };
      const respond = (result: unknown) => answer({ jsonrpc: '2.0', id: id ?? null, result: result ?? null });
      const queued = single && !this.neverQueued.has(name) && this.cost.heavy(name);
      if (!queued) return { response: respond(await run()) };
      if (!asText) return { response: respond(await this.lane.run(run)) };
      // Made text within its turn. A call waiting in the lane is old by its turn (it waited out
      // collections), and so are the promises its answer goes back through: an answer's objects
      // held by them were kept alive and copied by every young collection until the next full one
      // (100 usage summaries sent at once: 3–5 MB copied per collection, 5–10 ms pauses that a
      // status call waited out). One string is cheap to keep.
      return {
        response: null,
        text: await this.lane.run(async () => {
          const response = respond(await run());
          return response === null ? null : JSON.stringify(response);
        }),
      };
    } catch (err) {
      if (err instanceof SubconsciousError) {
        const code = err.code === 'invalid_params' ? RPC_INVALID_PARAMS : RPC_APP_ERROR;
        return { response: answer(failure(id ?? null, code, err.message, { code: err.code, hint: err.hint, ...(err.details ?? {}) })) };
      }
      // A bug. The log gets the real error; the caller an id to quote, never the internal message.
      const errorId = this.errorId();
      (opts.log ?? this.log)?.error({ err, error_id: errorId, method: name }, 'internal error in an RPC method');
      const message = `Internal error in ${name} (error id ${errorId}). Nothing is wrong with your request; the daemon's log has the details under error_id=${errorId} — please report it with that id.`;
      return { response: answer(failure(id ?? null, RPC_INTERNAL_ERROR, message, { error_id: errorId })), internal: err };
    }
  }

  private overBudget(member: unknown, spentMs: number, left: number): RpcResponse | null {
    const id = idOf(member);
    if (isObject(member) && member.id === undefined) return null; // a notification: nothing to answer
    return failure(
      id,
      RPC_APP_ERROR,
      `Not run: the calls before it in this batch already ran for ${Math.round(spentMs)} ms, over the ${this.budgetMs} ms one request may use (${left} call(s) not run). Send the calls that were not run in a new request.`,
      { code: 'over_budget', hint: 'Split long batches into several requests.' },
    );
  }
}

/**
 * The path of the first string (value or key) holding U+0000, '' for the params themselves, or
 * null. No method has a use for it and Postgres text cannot store it (the query fails): refused
 * here, for every method, as bad params. Iterative: params may be nested thousands deep.
 */
function findNul(params: unknown): string | null {
  const stack: [unknown, string][] = [[params, '']];
  while (stack.length) {
    const [value, at] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return at;
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push([v, at ? `${at}.${i}` : String(i)]));
    } else if (isObject(value)) {
      for (const [k, v] of Object.entries(value)) {
        const path = at ? `${at}.${k}` : k;
        if (k.includes('\u0000')) return path;
        stack.push([v, path]);
      }
    }
  }
  return null;
}

function parseBody(body: string): { ok: true; payload: unknown } | { ok: false; failure: RpcResponse } {
  try {
    return { ok: true, payload: JSON.parse(body) };
  } catch {
    return {
      ok: false,
      failure: failure(null, RPC_PARSE_ERROR, 'Parse error: the body is not valid JSON. Send one JSON-RPC request object, or an array of them.'),
    };
  }
}

/**
 * What `produce` emits, as an async iterable for one reader. `produce` starts at once and runs to
 * its end whether or not anyone reads: a batch's calls all run, as they always did, even when its
 * client goes away; a reader gets each answer as soon as it is made, not after the whole batch.
 */
function eagerStream<T>(produce: (emit: (item: T) => void) => Promise<void>): AsyncIterable<T> {
  const items: T[] = [];
  let ended = false;
  let failure: { err: unknown } | null = null;
  let wake: (() => void) | null = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  produce((item) => (items.push(item), poke())).then(
    () => ((ended = true), poke()),
    (err: unknown) => ((failure = { err }), (ended = true), poke()),
  );
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (items.length > 0) yield items.shift()!;
        else if (failure) throw failure.err;
        else if (ended) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

/** `keep` of an answer; null for none (a notification's). */
function keepOf<T>(response: RpcResponse | null, keep: (response: RpcResponse) => T): T | null {
  return response === null ? null : keep(response);
}

function failure(id: Id, code: number, message: string, data?: unknown): RpcResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

function idOf(raw: unknown): Id {
  return isObject(raw) && (typeof raw.id === 'string' || typeof raw.id === 'number') ? raw.id : null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
