/**
 * "Is the model there?" — `GET {baseUrl}/models` with a short timeout, cached for a few
 * seconds on the injected clock so a status page or a provider gate can ask freely.
 * A probe is not a model call: it is not written to the ledger.
 */
import type { Clock } from '../core/clock.js';
import { apiKeyVar, classifyModelError } from './errors.js';
import type { ModelEndpointConfig, ModelRole, ProbeResult } from './types.js';

export const PROBE_TIMEOUT_MS = 2000;
export const PROBE_CACHE_MS = 5000;

export interface ProbeOptions {
  clock: Clock;
  timeoutMs?: number | undefined;
  cacheMs?: number | undefined;
}

export class Prober {
  private readonly cache = new Map<string, { at: number; result: Promise<ProbeResult> }>();

  constructor(private readonly opts: ProbeOptions) {}

  probe(role: ModelRole, endpoint: ModelEndpointConfig): Promise<ProbeResult> {
    const key = `${role}|${endpoint.baseUrl}|${endpoint.model}`;
    const now = this.opts.clock.now();
    const cached = this.cache.get(key);
    if (cached && now - cached.at < (this.opts.cacheMs ?? PROBE_CACHE_MS)) return cached.result;
    // Concurrent callers share one request: the promise is cached, not just the answer.
    const result = probeEndpoint(role, endpoint, this.opts.timeoutMs ?? PROBE_TIMEOUT_MS);
    this.cache.set(key, { at: now, result });
    return result;
  }
}

export async function probeEndpoint(role: ModelRole, endpoint: ModelEndpointConfig, timeoutMs: number): Promise<ProbeResult> {
  const url = `${endpoint.baseUrl}/models`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    const error = classifyModelError(err, { role, baseUrl: endpoint.baseUrl, model: endpoint.model, timeoutMs, timedOut });
    return { available: false, reason: error.kind === 'provider' ? `${endpoint.baseUrl} could not be reached: ${error.explain()}` : error.explain() };
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    return { available: false, reason: statusReason(role, endpoint, response.status) };
  }
  let ids: string[];
  try {
    const body = (await response.json()) as { data?: Array<{ id?: unknown }> };
    ids = Array.isArray(body.data) ? body.data.map((m) => m.id).filter((id): id is string => typeof id === 'string') : [];
  } catch {
    // Answering but not listing models the OpenAI way: the endpoint is up; the call will tell.
    return { available: true };
  }
  if (ids.length > 0 && !ids.some((id) => sameModel(id, endpoint.model))) {
    const ollama = /:11434(\/|$)/.test(endpoint.baseUrl);
    return {
      available: false,
      reason: `The model "${endpoint.model}" is not available at ${endpoint.baseUrl}${ollama ? ` — pull it with \`ollama pull ${endpoint.model}\`` : ''} or set SUBCONSCIOUS_${role.toUpperCase()}_MODEL (available: ${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''}).`,
    };
  }
  return { available: true };
}

/** Ollama lists `llama3.2:latest` for a configured `llama3.2`. */
function sameModel(listed: string, configured: string): boolean {
  return listed === configured || listed === `${configured}:latest` || configured === `${listed}:latest`;
}

function statusReason(role: ModelRole, endpoint: ModelEndpointConfig, status: number): string {
  if (status === 401 || status === 403) return `${endpoint.baseUrl} refused the API key (${status}) — check ${apiKeyVar(role)}.`;
  if (status === 404)
    return `No OpenAI-compatible API at ${endpoint.baseUrl} (GET /models → 404) — check SUBCONSCIOUS_${role.toUpperCase()}_BASE_URL (it usually ends in /v1).`;
  return `${endpoint.baseUrl} answered GET /models with ${status}.`;
}
