/**
 * The metering middleware: wraps the provider's model so that EVERY call through it — one
 * `text()`, or each step of an AI SDK tool loop, generated or streamed — gets its timeout,
 * its 429 retries on the injected clock, a classified error, and exactly one ledger row per
 * attempt, written `pending` before the request goes out and finished after it. `text()` and `object()` go through the same wrapper, so there is one code path.
 */
import { wrapLanguageModel, type LanguageModelMiddleware } from 'ai';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { classifyModelError, type ErrorContext, type ModelError } from './errors.js';
import type { CallRecord, Ledger } from './ledger.js';
import { withRateLimitRetry } from './retry.js';
import type { CallContext, ModelEndpointConfig, Usage } from './types.js';

type WrapOptions = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0];
/** The AI SDK's provider-level model (LanguageModelV3), named without depending on @ai-sdk/provider. */
export type ProviderModel = WrapOptions['model'];
type CallOptions = WrapOptions['params'];
type GenerateResult = Awaited<ReturnType<ProviderModel['doGenerate']>>;
type StreamResult = Awaited<ReturnType<ProviderModel['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
type ProviderUsage = GenerateResult['usage'];

export interface MeterDeps {
  ledger: Ledger;
  clock: Clock;
  endpoint: ModelEndpointConfig;
  log?: Logger | undefined;
  retryDelaysMs?: readonly number[] | undefined;
}

export interface MeterHooks {
  /** Runs on a finished generate's text; a throw (ModelError `malformed`) becomes the row's outcome. */
  check?: ((text: string) => void) | undefined;
  /** Told the usage of every successful call. */
  onUsage?: (usage: Usage) => void;
}

export function meteredModel(base: ProviderModel, ctx: Omit<CallContext, 'signal'>, deps: MeterDeps, hooks: MeterHooks = {}): ProviderModel {
  const errorContext = (timer?: CallTimer, signal?: AbortSignal): ErrorContext => ({
    role: ctx.role,
    baseUrl: deps.endpoint.baseUrl,
    model: deps.endpoint.model,
    timeoutMs: deps.endpoint.timeoutMs,
    timedOut: timer?.timedOut,
    cancelled: signal?.aborted === true && timer?.timedOut !== true,
    now: deps.clock.now(),
  });

  /** The attempt's pending row, before its request goes out; null when it could not be written (finished by an insert then). */
  const begin = async (params: CallOptions, startedAt: number): Promise<string | null> => {
    try {
      return await deps.ledger.begin({
        at: startedAt,
        world: ctx.world,
        purpose: ctx.purpose,
        role: ctx.role,
        model: deps.endpoint.model,
        inputTokens: estimateTokensOfChars(promptChars(params)),
      });
    } catch (err) {
      deps.log?.error({ err, world: ctx.world, purpose: ctx.purpose }, 'could not write the pending model-call ledger row');
      return null;
    }
  };

  const record = async (
    pending: string | null,
    outcome: CallRecord['outcome'],
    usage: Usage | undefined,
    startedAt: number,
    started: number,
    error?: ModelError,
  ) => {
    const row: CallRecord = {
      at: startedAt,
      world: ctx.world,
      purpose: ctx.purpose,
      role: ctx.role,
      model: deps.endpoint.model,
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      estimated: usage?.estimated ?? false,
      latencyMs: performance.now() - started,
      outcome,
      error: error ? error.explain() : null,
    };
    try {
      let id = pending;
      if (id === null) id = await deps.ledger.record(row);
      else await deps.ledger.finish(id, row);
      // The caller sees the row as stored (the ledger rounds): its figures are the ledger's.
      ctx.onLedger?.({
        id,
        at: Math.round(row.at),
        purpose: row.purpose,
        model: row.model,
        inputTokens: Math.max(0, Math.round(row.inputTokens)),
        outputTokens: Math.max(0, Math.round(row.outputTokens)),
        latencyMs: Math.max(0, Math.round(row.latencyMs)),
        outcome: row.outcome,
      });
    } catch (err) {
      // A ledger write failure must not turn a model answer into a failure; it is logged loudly.
      deps.log?.error({ err, row }, 'could not write the model-call ledger row');
    }
    deps.log?.debug({ ...row }, 'model call');
  };

  const retry = <T>(signal: AbortSignal | undefined, attempt: () => Promise<T>) =>
    withRateLimitRetry(attempt, { clock: deps.clock, signal, delaysMs: deps.retryDelaysMs, log: deps.log });

  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    wrapGenerate: ({ params, model }) =>
      retry(params.abortSignal, async () => {
        const startedAt = deps.clock.now();
        const pending = await begin(params, startedAt);
        const started = performance.now();
        const timer = callTimer(deps.endpoint.timeoutMs, params.abortSignal);
        let result: GenerateResult;
        try {
          result = await model.doGenerate({ ...params, ...withCallId(params.headers, pending), abortSignal: timer.signal });
        } catch (err) {
          const error = classifyModelError(err, errorContext(timer, params.abortSignal));
          await record(pending, error.kind, undefined, startedAt, started, error);
          throw error;
        } finally {
          timer.clear();
        }
        const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
        const usage = usageOf(result.usage, params, outputChars(result.content));
        if (hooks.check) {
          try {
            hooks.check(text);
          } catch (err) {
            const error = classifyModelError(err, errorContext());
            await record(pending, error.kind, usage, startedAt, started, error);
            throw error;
          }
        }
        await record(pending, 'ok', usage, startedAt, started);
        hooks.onUsage?.(usage);
        return result;
      }),

    wrapStream: ({ params, model }) =>
      retry(params.abortSignal, async () => {
        const startedAt = deps.clock.now();
        const pending = await begin(params, startedAt);
        const started = performance.now();
        const timer = callTimer(deps.endpoint.timeoutMs, params.abortSignal);
        let result: StreamResult;
        try {
          result = await model.doStream({ ...params, ...withCallId(params.headers, pending), abortSignal: timer.signal });
        } catch (err) {
          timer.clear();
          const error = classifyModelError(err, errorContext(timer, params.abortSignal));
          await record(pending, error.kind, undefined, startedAt, started, error);
          throw error;
        }
        return { ...result, stream: meterStream(result.stream, timer, params) };

        function meterStream(source: ReadableStream<StreamPart>, timer: CallTimer, params: CallOptions): ReadableStream<StreamPart> {
          const reader = source.getReader();
          let chars = 0;
          let providerUsage: ProviderUsage | undefined;
          let failure: ModelError | undefined;
          let done = false;
          const finish = async (error?: ModelError) => {
            if (done) return;
            done = true;
            timer.clear();
            const failed = error ?? failure;
            const usage = failed && !providerUsage ? undefined : usageOf(providerUsage, params, chars);
            await record(pending, failed ? failed.kind : 'ok', usage, startedAt, started, failed);
            if (!failed && usage) hooks.onUsage?.(usage);
          };
          return new ReadableStream<StreamPart>({
            async pull(controller) {
              let next: Awaited<ReturnType<typeof reader.read>>;
              try {
                next = await reader.read();
              } catch (err) {
                const error = classifyModelError(err, errorContext(timer, params.abortSignal));
                await finish(error);
                controller.error(error);
                return;
              }
              if (next.done) {
                await finish();
                controller.close();
                return;
              }
              const part = next.value;
              if (part.type === 'text-delta' || part.type === 'reasoning-delta') chars += part.delta.length;
              else if (part.type === 'tool-input-delta') chars += part.delta.length;
              else if (part.type === 'finish') providerUsage = part.usage;
              else if (part.type === 'error') {
                failure ??= classifyModelError(part.error, errorContext(timer, params.abortSignal));
                controller.enqueue({ ...part, error: failure });
                return;
              }
              controller.enqueue(part);
            },
            async cancel(reason) {
              await finish(classifyModelError(reason, { ...errorContext(timer, params.abortSignal), cancelled: !timer.timedOut }));
              await reader.cancel(reason);
            },
          });
        }
      }),
  };

  return wrapLanguageModel({ model: base, middleware });
}

/** The server's usage figures; whatever is missing is estimated at 4 chars/token and flagged. */
/**
 * The request carries its ledger row's id as `X-Client-Request-Id` (the header OpenAI's API logs
 * for a client's own id; other OpenAI-compatible servers pass it by): a server's request log joins
 * the ledger row for row, and a row closed as interrupted whose id no server saw was never sent.
 */
const CALL_ID_HEADER = 'x-client-request-id';

function withCallId(headers: CallOptions['headers'], ledgerId: string | null): Pick<CallOptions, 'headers'> {
  if (ledgerId === null) return headers ? { headers } : {};
  return { headers: { ...headers, [CALL_ID_HEADER]: ledgerId } };
}

function usageOf(usage: ProviderUsage | undefined, params: CallOptions, outChars: number): Usage {
  const input = usage?.inputTokens.total;
  const output = usage?.outputTokens.total;
  return {
    inputTokens: input ?? estimateTokensOfChars(promptChars(params)),
    outputTokens: output ?? estimateTokensOfChars(outChars),
    estimated: input === undefined || output === undefined,
  };
}

/** Same rule as `estimateTokens`: 4 characters per token. */
function estimateTokensOfChars(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Characters the model read: message text, tool calls and results, and tool definitions. */
function promptChars(params: CallOptions): number {
  let chars = params.tools ? JSON.stringify(params.tools).length : 0;
  for (const message of params.prompt) {
    if (typeof message.content === 'string') {
      chars += message.content.length;
      continue;
    }
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning') chars += part.text.length;
      else if (part.type === 'tool-call') chars += JSON.stringify(part.input ?? null).length;
      else if (part.type === 'tool-result') chars += JSON.stringify(part.output ?? null).length;
    }
  }
  return chars;
}

function outputChars(content: GenerateResult['content']): number {
  let chars = 0;
  for (const part of content) {
    if (part.type === 'text' || part.type === 'reasoning') chars += part.text.length;
    else if (part.type === 'tool-call') chars += part.input.length;
  }
  return chars;
}

interface CallTimer {
  signal: AbortSignal;
  readonly timedOut: boolean;
  clear(): void;
}

/**
 * The per-call timeout, combined with the caller's signal. Real time on purpose: it bounds a
 * real HTTP call (the injected clock drives waits we choose, like retry back-off).
 */
function callTimer(timeoutMs: number, callerSignal: AbortSignal | undefined): CallTimer {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`The model call timed out after ${timeoutMs} ms.`, 'TimeoutError'));
  }, timeoutMs);
  timer.unref?.();
  const onAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onAbort();
  else callerSignal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    clear() {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onAbort);
    },
  };
}
