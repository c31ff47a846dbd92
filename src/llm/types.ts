/**
 * The model layer's contract. Everything above `llm/` talks to models only through `Llm`,
 * so every call lands in the ledger (DESIGN.md invariant 7).
 */
import type { LanguageModel } from 'ai';
import type { ZodType } from 'zod';

export type ModelRole = 'local' | 'agent';

export interface ModelEndpointConfig {
  /** OpenAI-compatible base URL, e.g. `http://127.0.0.1:11434/v1` (Ollama). */
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
  /** Per-call timeout in ms. */
  timeoutMs: number;
  /** `max_tokens` of a call that sets none (default 2048): no call is unbounded. */
  maxTokens?: number | undefined;
  /** How a JSON schema is sent as `response_format` (default `auto`: learned once per endpoint). */
  structuredOutput?: StructuredOutputMode | undefined;
}

/**
 * `json_schema`: the schema in `response_format` (strict where the schema allows); `json_object`:
 * JSON mode without the schema; `off`: the prompt alone; `auto`: `json_schema`, falling back when
 * the server refuses it (the finding is kept for the endpoint and shown in status).
 */
export type StructuredOutputMode = 'auto' | 'json_schema' | 'json_object' | 'off';

/** What `auto` found out about an endpoint. */
export interface StructuredFinding {
  mode: Exclude<StructuredOutputMode, 'auto'>;
  learned_at: number;
  reason: string;
}

export type ModelsConfig = Record<ModelRole, ModelEndpointConfig>;

/** Who is calling and why: written to the ledger with every call. */
export interface CallContext {
  world: string;
  purpose: string;
  role: ModelRole;
  /** A model served by the role's endpoint, instead of the role's own model (a bot's model). */
  model?: string | undefined;
  /** false: one attempt, no 429 retries (seed 2's pulse). Default true. */
  retry?: boolean | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Told each ledger row this call wrote (one per attempt, as stored), so a caller can show the
   * ledger's own figures for its calls instead of a count of its own.
   */
  onLedger?: ((row: LedgerRow) => void) | undefined;
}

/** A ledger row as stored (`model_calls`), told to `CallContext.onLedger`. */
export interface LedgerRow {
  id: string;
  at: number;
  purpose: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  outcome: string;
}

export type ModelErrorKind =
  | 'rate_limit' // transient 429 (retried 3× after 2, 4, 8 s, honouring Retry-After)
  | 'rate_cap' // permanent: 413, or a tokens-per-minute limit smaller than the request
  | 'no_tools' // the model does not support tool calls
  | 'unreachable' // connection refused / DNS / reset
  | 'timeout' // the call ran past its timeout
  | 'malformed' // output did not parse against the schema
  | 'truncated' // finish_reason "length": the reply was cut at max_tokens and is not used
  | 'cancelled' // aborted by the caller
  | 'provider'; // anything else from the provider (5xx, 4xx)

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** True when the server sent no usage and tokens were estimated at 4 chars/token. */
  estimated: boolean;
}

export interface TextRequest {
  system?: string;
  prompt: string;
  /** `max_tokens`; default the endpoint's `max_tokens`. */
  maxOutputTokens?: number;
  /** The setting behind `maxOutputTokens`, named when a reply is cut (default `models.<role>.max_tokens`). */
  maxTokensKey?: string;
  temperature?: number;
  /**
   * The reply is expected to be JSON of this shape: sent as `response_format` (as the endpoint
   * takes it); `text()` leaves the parsing to the caller.
   */
  jsonSchema?: ZodType;
}

export interface ObjectRequest<T> extends TextRequest {
  schema: ZodType<T>;
  /** One repair call when the reply is not valid for the schema (default true; counted in the ledger). */
  repair?: boolean;
}

export interface ProbeResult {
  available: boolean;
  reason?: string;
}

export interface Llm {
  /** One plain completion. Retries transient 429s; throws `ModelError` otherwise. A reply over `MAX_REPLY_CHARS` (32,000) is cut with a note. */
  text(ctx: CallContext, req: TextRequest): Promise<{ text: string; usage: Usage }>;
  /** One completion parsed (fail-closed) against `schema`; invalid output throws kind `malformed`. */
  object<T>(ctx: CallContext, req: ObjectRequest<T>): Promise<{ value: T; text: string; usage: Usage }>;
  /** An AI SDK model whose every call (each step of a tool loop) is written to the ledger. */
  languageModel(ctx: Omit<CallContext, 'signal'>): LanguageModel;
  /** Is the role's endpoint answering? (`GET {baseUrl}/models`, cached for a few seconds.) */
  probe(role: ModelRole): Promise<ProbeResult>;
  /** `baseUrl|model` of a role: the rate-cap breaker's key changes when either changes. */
  signature(role: ModelRole): string;
  endpoint(role: ModelRole): ModelEndpointConfig;
  /** How the role's endpoint takes structured output: configured, in use, and what `auto` learned. */
  structuredOutput?(role: ModelRole): StructuredOutputStatus;
}

export interface StructuredOutputStatus {
  configured: StructuredOutputMode;
  in_use: Exclude<StructuredOutputMode, 'auto'>;
  learned: StructuredFinding | null;
}
