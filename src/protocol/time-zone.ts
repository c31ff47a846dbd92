/**
 * Zones already found valid: building a formatter to check one costs about 0.5 ms, and every
 * `usage.summary` (the page asks with its zone, often a hundred in a batch) checks its param.
 * Bounded, so a client sending made-up names cannot grow it (a miss is only a slower check).
 */
const known = new Set<string>();
const KNOWN_MAX = 256;

/** An IANA zone this platform's Intl knows (checked the same way in the daemon and the page). */
export function isTimeZone(name: string): boolean {
  if (known.has(name)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
  } catch {
    return false;
  }
  if (known.size < KNOWN_MAX) known.add(name);
  return true;
}
