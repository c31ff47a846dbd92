/**
 * Failure backoff: a world whose ticks keep failing waits cadence × 2^(failures-1) before the next
 * try, capped, so a dead model or a broken source is not hammered every few minutes all night.
 * One success resets it (the tick runner zeroes `consecutive_failures`).
 */

/** The longest wait a failing world backs off to, unless its own cadence is longer. */
export const BACKOFF_CAP_MS = 60 * 60_000;

/** How long to wait before the next tick after `failures` failures in a row (0: the cadence). */
export function retryDelayMs(intervalMs: number, failures: number): number {
  if (failures <= 1) return intervalMs;
  const cap = Math.max(intervalMs, BACKOFF_CAP_MS);
  // 2^(failures-1) overflows nothing here: the exponent is clamped once it is past any cap.
  return Math.min(cap, intervalMs * 2 ** Math.min(failures - 1, 30));
}
