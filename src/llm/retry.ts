/**
 * Transient rate limits (429) are retried here, not by the AI SDK (`maxRetries: 0` everywhere),
 * so the waits run on the injected clock and every attempt is its own ledger row.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { ModelError } from './errors.js';

/** Waits before retries 1, 2 and 3 when the provider sends no Retry-After. */
export const RATE_LIMIT_DELAYS_MS: readonly number[] = [2000, 4000, 8000];
/** A Retry-After longer than this is not waited for: the call fails at once as `rate_limit`. */
export const MAX_RETRY_AFTER_MS = 60_000;

export interface RetryOptions {
  clock: Clock;
  signal?: AbortSignal | undefined;
  delaysMs?: readonly number[] | undefined;
  maxRetryAfterMs?: number | undefined;
  log?: Logger | undefined;
}

export async function withRateLimitRetry<T>(attempt: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const delays = opts.delaysMs ?? RATE_LIMIT_DELAYS_MS;
  const maxRetryAfter = opts.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS;
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof ModelError) || err.kind !== 'rate_limit') throw err;
      const fallback = delays[retry];
      if (fallback === undefined) throw gaveUp(err, retry + 1);
      const wait = err.retryAfterMs ?? fallback;
      if (wait > maxRetryAfter) throw err;
      opts.log?.warn({ retry: retry + 1, waitMs: wait }, 'model rate limited; retrying');
      try {
        await opts.clock.sleep(wait, opts.signal);
      } catch (sleepErr) {
        throw new ModelError('cancelled', 'The model call was cancelled while waiting out a rate limit.', { cause: sleepErr });
      }
    }
  }
}

function gaveUp(err: ModelError, attempts: number): ModelError {
  return new ModelError('rate_limit', `${err.message} (gave up after ${attempts} attempts)`, {
    status: err.status,
    retryAfterMs: err.retryAfterMs,
    cause: err,
    hint: err.hint,
  });
}
