/**
 * Model errors, classified. Whatever the AI SDK, fetch or the provider throws becomes one
 * `ModelError` with a `kind` callers switch on (the engine's rate-cap breaker, the provider gate,
 * the heartbeat's settle precedence) and a message that says what to do.
 */
import { APICallError } from 'ai';
import { SubconsciousError } from '../core/errors.js';
import type { ModelErrorKind, ModelRole } from './types.js';

const CODES: Record<ModelErrorKind, string> = {
  rate_limit: 'model_rate_limit',
  rate_cap: 'model_rate_cap',
  no_tools: 'model_no_tools',
  unreachable: 'model_unreachable',
  timeout: 'model_timeout',
  malformed: 'model_malformed',
  truncated: 'model_truncated',
  cancelled: 'cancelled',
  provider: 'model_error',
};

export interface ModelErrorOptions {
  status?: number | undefined;
  retryAfterMs?: number | undefined;
  hint?: string | undefined;
  cause?: unknown;
}

export class ModelError extends SubconsciousError {
  readonly kind: ModelErrorKind;
  readonly status: number | undefined;
  /** From the provider's `Retry-After` (rate limits only). */
  readonly retryAfterMs: number | undefined;

  constructor(kind: ModelErrorKind, message: string, opts: ModelErrorOptions = {}) {
    super(CODES[kind], message, {
      hint: opts.hint,
      cause: opts.cause,
      details: { kind, ...(opts.status !== undefined ? { status: opts.status } : {}) },
    });
    this.name = 'ModelError';
    this.kind = kind;
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
  }

  /** Worth retrying as-is after a wait (only transient rate limits are). */
  get transient(): boolean {
    return this.kind === 'rate_limit';
  }
}

export function isModelError(err: unknown, kind?: ModelErrorKind): err is ModelError {
  return err instanceof ModelError && (kind === undefined || err.kind === kind);
}

/** Where the failing call went, so messages can name it. All optional. */
export interface ErrorContext {
  role?: ModelRole | undefined;
  baseUrl?: string | undefined;
  model?: string | undefined;
  timeoutMs?: number | undefined;
  /** Our own per-call timer fired (distinguishes a timeout from the caller's abort). */
  timedOut?: boolean | undefined;
  /** The caller's signal fired. */
  cancelled?: boolean | undefined;
  /** For HTTP-date `Retry-After` values. */
  now?: number | undefined;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const NO_TOOLS =
  /does not support tools|no endpoints found that support tool use|tools? (?:use |calling |calls )?(?:is |are )?not supported|does not support (?:function|tool) calling/i;
const LIMIT_REQUESTED = /limit\W+(\d[\d,]*)\W+requested\W+(\d[\d,]*)/i;

/**
 * Turn anything thrown around a model call into a `ModelError`. A `ModelError` passes through;
 * AI SDK wrappers (RetryError, NoOutputGeneratedError, …) are unwrapped to their cause.
 */
export function classifyModelError(err: unknown, ctx: ErrorContext = {}): ModelError {
  if (err instanceof ModelError) return err;
  if (ctx.cancelled) return new ModelError('cancelled', 'The model call was cancelled by the caller.', { cause: err });
  if (ctx.timedOut) return timeoutError(ctx, err);

  const inner = unwrap(err);
  if (inner instanceof ModelError) return inner;
  const name = inner instanceof Error ? inner.name : '';
  if (name === 'TimeoutError') return timeoutError(ctx, err);
  if (name === 'AbortError' || (inner instanceof SubconsciousError && inner.code === 'cancelled')) {
    return new ModelError('cancelled', 'The model call was cancelled by the caller.', { cause: err });
  }

  if (APICallError.isInstance(inner)) {
    const status = inner.statusCode;
    const message = providerMessage(inner);
    if (status === undefined) {
      if (isNetworkFailure(inner)) return unreachableError(ctx, err);
      return new ModelError('provider', `The model provider failed: ${message}`, { cause: err });
    }
    return classifyStatus(status, message, inner.responseHeaders ?? {}, ctx, err);
  }
  if (isNetworkFailure(inner)) return unreachableError(ctx, err);
  if (name === 'AI_JSONParseError' || name === 'AI_TypeValidationError' || name === 'AI_InvalidResponseDataError') {
    return new ModelError('malformed', `The model's response could not be parsed: ${truncate(errorText(inner), 300)}`, {
      cause: err,
      hint: 'The endpoint may not be OpenAI-compatible, or the model produced broken output; try again or pick another model.',
    });
  }
  return new ModelError('provider', `The model call failed: ${truncate(errorText(inner), 500)}`, { cause: err });
}

/** Classify an HTTP failure from its status and the provider's message. */
export function classifyStatus(status: number, message: string, headers: Record<string, string>, ctx: ErrorContext, cause?: unknown): ModelError {
  const where = describeEndpoint(ctx);
  if (status >= 200 && status < 300) {
    // A 2xx whose body did not parse: the endpoint answered, but not in the expected format.
    return new ModelError('malformed', `${capitalise(where)} sent a response that could not be parsed: ${truncate(message, 300)}`, {
      status,
      cause,
      hint: 'Check that the base URL points at an OpenAI-compatible API, or try again.',
    });
  }
  const cap = LIMIT_REQUESTED.exec(message);
  const requestedOverLimit = cap ? toInt(cap[2]) > toInt(cap[1]) : false;
  if (status === 413 || requestedOverLimit) {
    return new ModelError('rate_cap', `The request is larger than ${where} will ever accept (${status}): ${truncate(message, 300)}`, {
      status,
      cause,
      hint: 'Pick a model or plan with a higher limit, or make the requests smaller; retrying will not help as it is.',
    });
  }
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(headerValue(headers, 'retry-after'), ctx.now ?? Date.now());
    return new ModelError('rate_limit', `${capitalise(where)} is rate limiting requests (429): ${truncate(message, 300)}`, {
      status,
      retryAfterMs,
      cause,
      hint: 'Transient: the call is retried after a pause; lower the cadence if it keeps happening.',
    });
  }
  if (NO_TOOLS.test(message)) {
    return new ModelError('no_tools', `${ctx.model ? `The model "${ctx.model}"` : 'This model'} does not support tool calls — pick a tool-capable model.`, {
      status,
      cause,
      hint: `Set a tool-capable model for the ${ctx.role ?? 'agent'} role (SUBCONSCIOUS_${(ctx.role ?? 'agent').toUpperCase()}_MODEL).`,
    });
  }
  if (status === 408 || status === 504) return timeoutError(ctx, cause, status);
  const what = status >= 500 ? 'had an internal error' : 'rejected the request';
  return new ModelError('provider', `${capitalise(where)} ${what} (${status}): ${truncate(message, 500)}`, {
    status,
    cause,
    hint:
      status === 401 || status === 403 ? `Check the API key (${apiKeyVar(ctx.role)}).` : status === 404 ? 'Check the base URL and the model name.' : undefined,
  });
}

/** `Retry-After` as seconds or an HTTP date → milliseconds from now (undefined when absent/unparsable). */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function timeoutError(ctx: ErrorContext, cause: unknown, status?: number): ModelError {
  const limit = ctx.timeoutMs !== undefined ? ` after ${ctx.timeoutMs} ms` : '';
  return new ModelError('timeout', `${capitalise(describeEndpoint(ctx))} did not answer${limit}.`, {
    status,
    cause,
    hint: `The model may be overloaded or still loading; raise the ${ctx.role ?? 'model'} timeout or use a smaller model.`,
  });
}

function unreachableError(ctx: ErrorContext, cause: unknown): ModelError {
  const base = ctx.baseUrl ?? 'the configured base URL';
  const envVar = `SUBCONSCIOUS_${(ctx.role ?? 'local').toUpperCase()}_BASE_URL`;
  const ollama = ctx.baseUrl !== undefined && /:11434(\/|$)/.test(ctx.baseUrl);
  const who = ollama ? 'Ollama' : `The ${ctx.role ?? 'model'} endpoint`;
  // The advice lives in the hint only: `explain()` (status, logs, the CLI) joins it to the message once.
  // A server on this machine or network is to be started; a cloud API's URL (and key) is to be checked.
  const hint = ollama
    ? `Start it with \`ollama serve\` or set ${envVar}.`
    : isLocalEndpoint(ctx.baseUrl)
      ? `Start the model server or set ${envVar}.`
      : `Check ${envVar} (the provider's URL, usually ending in /v1), your network, and the key in ${apiKeyVar(ctx.role)}.`;
  return new ModelError('unreachable', `${who} is not answering at ${base}.`, { cause, hint });
}

/** The variable that holds a role's API key. */
export function apiKeyVar(role: ModelRole | undefined): string {
  return `SUBCONSCIOUS_${(role ?? 'agent').toUpperCase()}_API_KEY`;
}

/** A server one runs oneself (loopback, a private network, a .local/.lan name), not a cloud API. */
export function isLocalEndpoint(baseUrl: string | undefined): boolean {
  if (!baseUrl) return true;
  let host: string;
  try {
    host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return true;
  }
  return (
    host === 'localhost' ||
    host === '::1' ||
    !host.includes('.') ||
    /\.(local|lan|internal|home)$/i.test(host) ||
    /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|0\.0\.0\.0$)/.test(host) ||
    /^f[cd][0-9a-f]{2}:/i.test(host)
  );
}

function describeEndpoint(ctx: ErrorContext): string {
  if (ctx.baseUrl && ctx.model) return `the model endpoint at ${ctx.baseUrl} (${ctx.model})`;
  if (ctx.baseUrl) return `the model endpoint at ${ctx.baseUrl}`;
  return 'the model provider';
}

function providerMessage(err: APICallError): string {
  const data = err.data as { error?: { message?: unknown } } | undefined;
  if (data && typeof data.error?.message === 'string') return data.error.message;
  if (err.responseBody) {
    try {
      const parsed = JSON.parse(err.responseBody) as { error?: { message?: unknown } | string; message?: unknown };
      if (typeof parsed.error === 'string') return parsed.error;
      if (typeof parsed.error?.message === 'string') return parsed.error.message;
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      return err.responseBody;
    }
  }
  return err.message;
}

/** Peel AI SDK wrappers to the error that says what happened. */
function unwrap(err: unknown): unknown {
  let current = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const candidate = current as Error & { lastError?: unknown; name: string };
    if (candidate.name === 'AI_RetryError' && candidate.lastError !== undefined) current = candidate.lastError;
    else if (candidate.name === 'AI_NoOutputGeneratedError' && candidate.cause !== undefined) current = candidate.cause;
    else break;
  }
  return current;
}

function isNetworkFailure(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && current; depth++) {
    if (typeof current === 'object' && current !== null) {
      const code = (current as { code?: unknown }).code;
      if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
      const message = (current as { message?: unknown }).message;
      if (typeof message === 'string' && /^(fetch failed|cannot connect to api|socket hang up)/i.test(message)) return true;
      current = (current as { cause?: unknown }).cause;
    } else break;
  }
  return false;
}

function headerValue(headers: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}

function toInt(text: string | undefined): number {
  return Number((text ?? '0').replace(/,/g, ''));
}

function capitalise(text: string): string {
  return text.length > 0 ? `${text[0]!.toUpperCase()}${text.slice(1)}` : text;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
