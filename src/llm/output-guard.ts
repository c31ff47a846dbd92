/**
 * The output guard: a middleware on the provider's model, inside the metering, so that every call
 * (a `text()`, an `object()`, each step of a tool loop) gets
 *
 * - a `max_tokens` (the call's own, else the endpoint's `max_tokens`): no call is unbounded;
 * - its JSON schema as `response_format` in the form the endpoint takes (`structured_output`:
 *   `json_schema`, `json_object`, `off`, or `auto`, which tries the schema and, when the server
 *   refuses the field, falls back once and remembers what it found for the endpoint);
 * - `finish_reason: "length"` turned into a ModelError `truncated`: a cut reply is never parsed,
 *   executed, installed or stored.
 */
import { APICallError, wrapLanguageModel, type LanguageModelMiddleware } from 'ai';
import type { Logger } from '../core/logger.js';
import { ModelError } from './errors.js';
import type { ProviderModel } from './meter.js';
import type { ModelEndpointConfig, ModelRole, StructuredFinding, StructuredOutputMode } from './types.js';

type WrapOptions = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0];
type CallOptions = WrapOptions['params'];
type StreamResult = Awaited<ReturnType<ProviderModel['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
type Format = Exclude<StructuredOutputMode, 'auto'>;

/** The default `max_tokens` of an endpoint that sets none. */
export const DEFAULT_MAX_TOKENS = 2048;

/** Where what `auto` learned is kept (a table: a restart, or another worker, does not probe again). */
export interface FindingStore {
  load(): Promise<Array<{ endpoint: string; finding: StructuredFinding }>>;
  save(endpoint: string, finding: StructuredFinding): Promise<void>;
}

/** What `auto` learned per endpoint (`baseUrl|model`), loaded from and saved to `store`; shown in status. */
export class StructuredOutputs {
  private readonly found = new Map<string, StructuredFinding>();
  /** Settled once the stored findings are in (a call waits for it, so a restart never probes again). */
  readonly ready: Promise<void>;

  constructor(
    private readonly now: () => number,
    private readonly log?: Logger | undefined,
    private readonly store?: FindingStore | undefined,
  ) {
    this.ready = store
      ? store.load().then(
          (rows) => {
            // A finding made while loading is newer than the stored one.
            for (const { endpoint, finding } of rows) if (!this.found.has(endpoint)) this.found.set(endpoint, finding);
          },
          (err: unknown) => this.log?.warn({ err }, 'could not read what structured_output = "auto" learned earlier; it is found out again'),
        )
      : Promise.resolve();
  }

  /** The format a call sends now. */
  format(endpoint: ModelEndpointConfig): Format {
    const configured = endpoint.structuredOutput ?? 'auto';
    if (configured !== 'auto') return configured;
    return this.found.get(keyOf(endpoint))?.mode ?? 'json_schema';
  }

  /** The server refused `from`: the next format to try, remembered (undefined: nothing left). */
  refused(role: ModelRole, endpoint: ModelEndpointConfig, from: Format, reason: string): Format | undefined {
    const next: Format | undefined = from === 'json_schema' ? 'json_object' : from === 'json_object' ? 'off' : undefined;
    if (!next) return undefined;
    const finding: StructuredFinding = { mode: next, learned_at: this.now(), reason: `the server refused response_format ${from}: ${reason.slice(0, 300)}` };
    this.found.set(keyOf(endpoint), finding);
    this.store?.save(keyOf(endpoint), finding).catch((err: unknown) => this.log?.warn({ err }, 'could not keep what structured_output = "auto" learned'));
    this.log?.warn(
      { role, baseUrl: endpoint.baseUrl, model: endpoint.model, refused: from, now: next },
      `model endpoint refused response_format ${from}; using ${next === 'off' ? 'the prompt only' : next} from now on (set structured_output in [models.${role}] to pin it)`,
    );
    return next;
  }

  /** What status shows: the configured mode, the one in use, and what was learned. */
  finding(endpoint: ModelEndpointConfig): { configured: StructuredOutputMode; in_use: Format; learned: StructuredFinding | null } {
    return { configured: endpoint.structuredOutput ?? 'auto', in_use: this.format(endpoint), learned: this.found.get(keyOf(endpoint)) ?? null };
  }
}

export interface GuardOptions {
  role: ModelRole;
  endpoint: ModelEndpointConfig;
  structured: StructuredOutputs;
  /** The setting to name when a reply is cut (default `models.<role>.max_tokens`). */
  maxTokensKey?: string | undefined;
}

export function guardedModel(base: ProviderModel, opts: GuardOptions): ProviderModel {
  const key = opts.maxTokensKey ?? `models.${opts.role}.max_tokens`;
  const prepare = (params: CallOptions, format: Format): CallOptions => {
    const { responseFormat, ...rest } = params;
    const sent = withFormat(responseFormat, format);
    return { ...rest, maxOutputTokens: params.maxOutputTokens ?? opts.endpoint.maxTokens ?? DEFAULT_MAX_TOKENS, ...(sent ? { responseFormat: sent } : {}) };
  };

  /** Call, falling back once per refused format while `auto` has one left. */
  async function attempt<T>(params: CallOptions, call: (p: CallOptions) => PromiseLike<T>): Promise<T> {
    await opts.structured.ready;
    let format = opts.structured.format(opts.endpoint);
    for (;;) {
      try {
        return await call(prepare(params, format));
      } catch (err) {
        const wanted = params.responseFormat?.type === 'json' && format !== 'off' && (opts.endpoint.structuredOutput ?? 'auto') === 'auto';
        const reason = wanted ? refusal(err) : undefined;
        const next = reason !== undefined ? opts.structured.refused(opts.role, opts.endpoint, format, reason) : undefined;
        if (!next) throw err;
        format = next;
      }
    }
  }

  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    wrapGenerate: async ({ params, model }) => {
      const result = await attempt(params, (p) => model.doGenerate(p));
      if (result.finishReason.unified === 'length') throw outOfTokens(key, result.usage.outputTokens.total);
      return result;
    },
    wrapStream: async ({ params, model }) => {
      const result = await attempt(params, (p) => model.doStream(p));
      const cut = new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          if (part.type === 'finish' && part.finishReason.unified === 'length') {
            controller.enqueue({ type: 'error', error: outOfTokens(key, part.usage.outputTokens.total) });
          }
          controller.enqueue(part);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(cut) };
    },
  };
  return wrapLanguageModel({ model: base, middleware });
}

/** The ModelError a cut reply becomes. */
export function outOfTokens(key: string, outputTokens?: number | undefined): ModelError {
  const after = outputTokens !== undefined ? ` after ${outputTokens} tokens` : '';
  return new ModelError('truncated', `The model ran out of tokens${after}: raise \`${key}\`. The cut reply was not used.`, {
    hint: `Raise \`${key}\` (and the server's context size if the prompt is long); nothing was acted on.`,
  });
}

function withFormat(format: CallOptions['responseFormat'], to: Format): CallOptions['responseFormat'] {
  if (format?.type !== 'json') return format;
  if (to === 'off') return undefined;
  if (to === 'json_object') return { type: 'json' };
  return format;
}

const REFUSAL = /response_format|json_schema|json_object|structured output|grammar|guided/i;

/** The server's reason when an error is it refusing `response_format` (undefined otherwise). */
function refusal(err: unknown): string | undefined {
  if (!APICallError.isInstance(err)) return undefined;
  const status = err.statusCode ?? 0;
  if (status < 400 || status === 401 || status === 403 || status === 404 || status === 408 || status === 413 || status === 429) return undefined;
  const text = `${err.message} ${err.responseBody ?? ''}`;
  return REFUSAL.test(text) ? (err.responseBody ?? err.message) : undefined;
}

function keyOf(endpoint: ModelEndpointConfig): string {
  return `${endpoint.baseUrl}|${endpoint.model}`;
}
