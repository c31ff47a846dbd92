/** Polling for a condition that real async work brings about (HTTP, MCP over stdio, a child process). */
import { vi } from 'vitest';

/** Waiting for a condition (real async: HTTP to the model server, MCP over stdio), not a timed assertion. */
export const UNTIL = { timeout: 20_000, interval: 10 };

/** Resolve when `check` holds (polled), failing with the last state after UNTIL's timeout. */
/** Wait for `check`; on a timeout the error says what `explain` sees then (the state a flake left). */
export function until(check: () => boolean | Promise<boolean>, explain?: () => unknown): Promise<void> {
  return vi.waitFor(async () => {
    if (!(await check())) throw new Error(explain ? `not yet: ${JSON.stringify(await explain())}` : 'not yet');
  }, UNTIL);
}
