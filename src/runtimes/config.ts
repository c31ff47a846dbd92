/**
 * `[worlds.runtimes]`: how the daemon treats external agent runtimes (issue 18 §6) — how long a
 * resume holds its task without a report, how long a delivered dispatch waits for its ack before
 * it is delivered again, and the webhook's retries (exponential backoff on the daemon's clock).
 */
import { z } from 'zod';
import { SubconsciousError, configIssueReason } from '../core/index.js';

const seconds = (min: number, max: number, dflt: number) =>
  z.number().int('must be a whole number of seconds').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`).default(dflt);

export const runtimesConfig = z.strictObject({
  /**
   * A resume acknowledged holds its task this long with no report of it (or of its run); then it
   * is interrupted and left to the heartbeat's rules (cooldown, pulse, attempts) — never two at once.
   */
  lease_seconds: seconds(30, 86_400, 300),
  /** A dispatch delivered (a webhook's 2xx, a poll) and not acknowledged in this long is delivered again. */
  ack_seconds: seconds(5, 3600, 60),
  /** The first retry of a failed webhook comes after this long, each next one twice as late… */
  retry_base_seconds: seconds(1, 600, 2),
  /** …up to this long between two tries. */
  retry_max_seconds: seconds(5, 3600, 300),
  /** One webhook request may take this long before it counts as failed. */
  delivery_timeout_seconds: seconds(1, 120, 10),
  /** A dispatch nobody acknowledged within this long is given up (a resume's claim is taken over long before, when the heartbeat goes again). */
  dispatch_ttl_seconds: seconds(60, 7 * 86_400, 86_400),
});

export type RuntimesConfig = z.output<typeof runtimesConfig>;

export function parseRuntimesConfig(raw: unknown = {}): RuntimesConfig {
  const result = runtimesConfig.safeParse(raw ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const key = ['worlds', 'runtimes', ...issue.path.map(String)].join('.');
  const reason = configIssueReason(issue);
  throw new SubconsciousError('config_invalid', `${key}: ${reason}`, { hint: 'Fix [worlds.runtimes] in subconscious.toml (or remove the key).' });
}
