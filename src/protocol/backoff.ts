/** A failing world's wait, as status carries it and people read it (no zod: the page bundles this). */

export type Backoff = {
  failures: number;
  /** The last failure's message (what went wrong and what to do). */
  reason: string;
  /** When the next try is due (epoch ms), or null while none is scheduled (no daemon runs). */
  next_try_at: number | null;
};

/**
 * One line for people, the same on the page and in the CLI:
 * "failed 3 times in a row: <reason>; next try at 14:05". `time` formats an epoch-ms instant.
 */
export function describeBackoff(b: Backoff, time: (at: number) => string): string {
  const times = b.failures === 1 ? 'failed once' : `failed ${b.failures} times in a row`;
  const reason = b.reason.replace(/[.\s]+$/, '');
  return `${times}: ${reason}; ${b.next_try_at === null ? 'no next try is scheduled (is the daemon running?)' : `next try at ${time(b.next_try_at)}`}`;
}
