/**
 * Keeps a tick's lease alive while the tick runs: renewed every third of its TTL. A lease lost to
 * another worker (it lapsed and was taken) stops the tick — that worker owns it now and may be
 * resuming it — unless the tick is committing (its effects are real; the commit re-checks the
 * lease itself before it starts). A store hiccup is not a lost lease: it is retried.
 */
import type { Clock, Logger } from '../core/index.js';
import { LEASE_TTL_MS, type TickLease } from './lease.js';

/** Another worker holds this world's lease now and may be resuming this very tick: hand off. */
export class LeaseLost extends Error {}

export function keepLease(opts: {
  lease: TickLease;
  clock: Clock;
  log: Logger;
  world: string;
  /** The tick's controller: aborted with `LeaseLost` when the lease is gone. */
  tick: AbortController;
  committing: () => boolean;
}): () => void {
  // The tick's own signal ends the loop (the runner aborts it whenever a tick ends, before it
  // stops the keeper); `stopped` covers a stop without it. No combined signal: one per tick is dear.
  let stopped = false;
  const both = opts.tick.signal;
  void (async () => {
    for (;;) {
      try {
        await opts.clock.sleep(LEASE_TTL_MS / 3, both);
      } catch {
        return;
      }
      if (stopped) return;
      const ok = await opts.lease.renew().catch((err) => {
        opts.log.warn({ err, world: opts.world }, 'could not renew the tick lease; trying again');
        return true;
      });
      if (ok || both.aborted || stopped) continue;
      opts.log.warn({ world: opts.world }, 'tick lease lost to another worker');
      if (!opts.committing()) opts.tick.abort(new LeaseLost('the tick lease was lost to another worker'));
    }
  })();
  return () => {
    stopped = true;
  };
}
