/**
 * `createLlm`: the one implementation of the `Llm` contract, over `@ai-sdk/openai-compatible`
 * and `ai`. Every call — `text`, `object`, each step of a tool loop on `languageModel()` — goes
 * through the metering middleware (timeout, 429 retries, classified errors, a ledger row).
 */
import { randomBytes } from 'node:crypto';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, type Output as OutputSpec } from 'ai';
import type { Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import { SubconsciousError } from '../core/errors.js';
import type { IdGen } from '../core/ids.js';
import { processOwner } from '../core/process-identity.js';
import type { Logger } from '../core/logger.js';
import type { LedgerTables } from './tables.js';
import { classifyModelError } from './errors.js';
import { Ledger } from './ledger.js';
import { meteredModel, type MeterHooks, type ProviderModel } from './meter.js';
import { findingTable } from './findings.js';
import { StructuredOutputs, guardedModel } from './output-guard.js';
import { Prober } from './probe.js';
import { capReply } from './reply-cap.js';
import { parseStructured, schemaInstruction, strictCompatible, toJsonSchema } from './structured.js';
import type { CallContext, Llm, ModelEndpointConfig, ModelRole, ModelsConfig, ObjectRequest, TextRequest, Usage } from './types.js';
import { isModelError } from './errors.js';

const ROLES: readonly ModelRole[] = ['local', 'agent'];

export interface CreateLlmOptions {
  models: ModelsConfig;
  db: Kysely<LedgerTables>;
  clock: Clock;
  ids: IdGen;
  log?: Logger | undefined;
  /** Waits before the 3 rate-limit retries (default 2, 4, 8 s) when there is no Retry-After. */
  retryDelaysMs?: readonly number[] | undefined;
  /** `probe()`: HTTP timeout (default 2 s) and cache lifetime on the clock (default 5 s). */
  probeTimeoutMs?: number | undefined;
  probeCacheMs?: number | undefined;
  /**
   * The model behind each role, in this process, instead of its HTTP endpoint (`simulate`'s
   * dry-run model). Calls are metered and recorded as usual; `probe()` answers available without
   * contacting anything, since there is no server to ask.
   */
  inProcessModel?: ((role: ModelRole, endpoint: ModelEndpointConfig) => ProviderModel) | undefined;
  /**
   * The process that owns this instance's pending ledger rows (default `processOwner('llm-<random>')`):
   * a row whose owner is gone is closed as interrupted at the next start (`ledger.closeInterrupted`).
   */
  owner?: string | undefined;
}

export interface LlmService extends Llm {
  /** The ledger this instance writes (read helpers for usage pages and metrics). */
  readonly ledger: Ledger;
}

export function createLlm(opts: CreateLlmOptions): LlmService {
  const endpoints = Object.fromEntries(ROLES.map((role) => [role, validateEndpoint(role, opts.models[role])])) as ModelsConfig;
  const ledger = new Ledger(opts.db, opts.ids, opts.owner ?? processOwner(`llm-${randomBytes(4).toString('hex')}`));
  const prober = new Prober({ clock: opts.clock, timeoutMs: opts.probeTimeoutMs, cacheMs: opts.probeCacheMs });
  const providers = new Map<string, ProviderModel>();
  // What `auto` learned is kept in the store (not for the in-process dry-run model: nothing is asked there).
  const structured = new StructuredOutputs(() => opts.clock.now(), opts.log, opts.inProcessModel ? undefined : findingTable(opts.db));

  /** The role's endpoint, with the call's own model when it names one. */
  const endpointFor = (ctx: Omit<CallContext, 'signal'>): ModelEndpointConfig =>
    ctx.model ? { ...endpoints[ctx.role], model: ctx.model } : endpoints[ctx.role];

  const baseModel = (role: ModelRole, endpoint: ModelEndpointConfig): ProviderModel => {
    const key = `${role}|${endpoint.model}`;
    let model = providers.get(key);
    if (!model) {
      model = opts.inProcessModel
        ? opts.inProcessModel(role, endpoint)
        : createOpenAICompatible({
            name: `subconscious-${role}`,
            baseURL: endpoint.baseUrl,
            ...(endpoint.apiKey ? { apiKey: endpoint.apiKey } : {}),
            includeUsage: true, // ask for the usage chunk on streams, so the ledger has real figures
            // A schema goes out as `json_schema`; the output guard narrows it to what the endpoint takes.
            supportsStructuredOutputs: true,
          }).chatModel(endpoint.model);
      providers.set(key, model);
    }
    return model;
  };

  const metered = (ctx: Omit<CallContext, 'signal'>, hooks?: MeterHooks, maxTokensKey?: string) => {
    const endpoint = endpointFor(ctx);
    const retryDelaysMs = ctx.retry === false ? [] : opts.retryDelaysMs;
    const guarded = guardedModel(baseModel(ctx.role, endpoint), { role: ctx.role, endpoint, structured, maxTokensKey });
    return meteredModel(guarded, ctx, { ledger, clock: opts.clock, endpoint, log: opts.log, retryDelaysMs }, hooks);
  };

  async function complete(ctx: CallContext, req: TextRequest, check?: (text: string) => void): Promise<{ text: string; usage: Usage }> {
    validateContext(ctx);
    validateRequest(req);
    let usage: Usage | undefined;
    const model = metered(ctx, { check, onUsage: (u) => void (usage = u) }, req.maxTokensKey);
    const schema = req.jsonSchema ? toJsonSchema(req.jsonSchema) : undefined;
    try {
      const result = await generateText({
        model,
        prompt: req.prompt,
        ...(req.system !== undefined ? { system: req.system } : {}),
        ...(req.maxOutputTokens !== undefined ? { maxOutputTokens: req.maxOutputTokens } : {}),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
        ...(schema
          ? {
              output: jsonReply(schema),
              providerOptions: { [`subconscious-${ctx.role}`]: { strictJsonSchema: strictCompatible(schema) } },
            }
          : {}),
        maxRetries: 0,
        ...(ctx.signal ? { abortSignal: ctx.signal } : {}),
      });
      return { text: result.text, usage: usage ?? { inputTokens: 0, outputTokens: 0, estimated: true } };
    } catch (err) {
      const endpoint = endpointFor(ctx);
      throw classifyModelError(err, { role: ctx.role, baseUrl: endpoint.baseUrl, model: endpoint.model, cancelled: ctx.signal?.aborted });
    }
  }

  return {
    ledger,
    async text(ctx, req) {
      const { text, usage } = await complete(ctx, req);
      return { text: capReply(text), usage };
    },
    async object<T>(ctx: CallContext, req: ObjectRequest<T>) {
      let value: T | undefined;
      const { schema, repair, ...rest } = req;
      const system = [req.system, schemaInstruction(schema)].filter(Boolean).join('\n\n');
      // Parsed inside the call so a malformed reply is recorded as `malformed` in the ledger.
      const check = (raw: string) => void (value = parseStructured(raw, schema));
      try {
        const { text, usage } = await complete(ctx, { ...rest, system, jsonSchema: schema }, check);
        return { value: value as T, text, usage };
      } catch (err) {
        // One repair call for a reply that is not valid; a cut one (`truncated`) needs a bigger budget, not a retry.
        if (repair === false || !isModelError(err, 'malformed')) throw err;
        const prompt = `${req.prompt}\n\n${repairNote(err.message)}`;
        const { text, usage } = await complete({ ...ctx, purpose: `${ctx.purpose}_repair` }, { ...rest, prompt, system, jsonSchema: schema }, check);
        return { value: value as T, text, usage };
      }
    },
    languageModel(ctx) {
      validateContext(ctx);
      return metered({ world: ctx.world, purpose: ctx.purpose, role: ctx.role, model: ctx.model, retry: ctx.retry, onLedger: ctx.onLedger });
    },
    probe: (role) => {
      const endpoint = endpointOf(role);
      return opts.inProcessModel ? Promise.resolve({ available: true }) : prober.probe(role, endpoint);
    },
    signature: (role) => {
      const endpoint = endpointOf(role);
      return `${endpoint.baseUrl}|${endpoint.model}`;
    },
    endpoint: (role) => ({ ...endpointOf(role) }),
    structuredOutput: (role) => structured.finding(endpointOf(role)),
  };

  function endpointOf(role: ModelRole): ModelEndpointConfig {
    if (!ROLES.includes(role)) throw invalid('role', `must be one of ${ROLES.join(', ')} (got ${JSON.stringify(role)})`);
    return endpoints[role];
  }
}

/**
 * The AI SDK's structured output with our own parser: the schema travels as `response_format`,
 * and the reply comes back as text for `parseStructured` (tolerant of fences, prose, `<think>`).
 */
function jsonReply(schema: Record<string, unknown>): OutputSpec.Output<string, string, never> {
  return {
    name: 'json',
    responseFormat: Promise.resolve({ type: 'json', schema: schema as never, name: 'reply' }),
    parseCompleteOutput: ({ text }) => Promise.resolve(text),
    parsePartialOutput: ({ text }) => Promise.resolve({ partial: text }),
    createElementStreamTransform: () => undefined,
  };
}

/** What the repair call adds to the prompt: the parser's reason, without the echoed reply. */
export function repairNote(problem: string): string {
  const reason = problem.split(' Raw output:')[0]!;
  return `Your previous reply was not valid JSON for this schema: ${reason} Reply again with only the JSON value.`;
}

function validateEndpoint(role: ModelRole, endpoint: ModelEndpointConfig | undefined): ModelEndpointConfig {
  const key = `models.${role}`;
  if (!endpoint) throw new SubconsciousError('config_invalid', `${key} is missing.`, { hint: `Add a [${key}] section with base_url and model.` });
  let url: URL;
  try {
    url = new URL(endpoint.baseUrl);
  } catch {
    throw new SubconsciousError('config_invalid', `${key}.base_url is not a URL: ${JSON.stringify(endpoint.baseUrl)}.`, {
      hint: 'Use an OpenAI-compatible base URL such as http://127.0.0.1:11434/v1.',
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SubconsciousError('config_invalid', `${key}.base_url must be http(s), got ${url.protocol}.`);
  }
  if (typeof endpoint.model !== 'string' || endpoint.model.trim() === '') {
    throw new SubconsciousError('config_invalid', `${key}.model is empty.`, { hint: `Name the model to use for the ${role} role.` });
  }
  if (endpoint.maxTokens !== undefined && (!Number.isInteger(endpoint.maxTokens) || endpoint.maxTokens <= 0)) {
    throw new SubconsciousError('config_invalid', `${key}.max_tokens must be a positive whole number (got ${endpoint.maxTokens}).`);
  }
  if (!Number.isFinite(endpoint.timeoutMs) || endpoint.timeoutMs <= 0) {
    throw new SubconsciousError('config_invalid', `${key}.timeout_ms must be a positive number (got ${endpoint.timeoutMs}).`);
  }
  return { ...endpoint, baseUrl: endpoint.baseUrl.replace(/\/+$/, '') };
}

function validateContext(ctx: Omit<CallContext, 'signal'>): void {
  if (typeof ctx.world !== 'string' || ctx.world.trim() === '') throw invalid('world', 'must be a non-empty string');
  if (typeof ctx.purpose !== 'string' || ctx.purpose.trim() === '') throw invalid('purpose', 'must be a non-empty string');
  if (!ROLES.includes(ctx.role)) throw invalid('role', `must be one of ${ROLES.join(', ')} (got ${JSON.stringify(ctx.role)})`);
  if (ctx.model !== undefined && (typeof ctx.model !== 'string' || ctx.model.trim() === ''))
    throw invalid('model', 'must be a non-empty model name when given');
}

function validateRequest(req: TextRequest): void {
  if (typeof req.prompt !== 'string' || req.prompt.length === 0) throw invalid('prompt', 'must be a non-empty string');
  if (req.maxOutputTokens !== undefined && (!Number.isInteger(req.maxOutputTokens) || req.maxOutputTokens <= 0)) {
    throw invalid('maxOutputTokens', 'must be a positive integer');
  }
  if (req.temperature !== undefined && (!Number.isFinite(req.temperature) || req.temperature < 0 || req.temperature > 2)) {
    throw invalid('temperature', 'must be between 0 and 2');
  }
}

function invalid(field: string, reason: string): SubconsciousError {
  return new SubconsciousError('invalid_params', `Model call: ${field} ${reason}.`, { details: { field } });
}
