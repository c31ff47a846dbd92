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
  const stop = new AbortController();
  const both = AbortSignal.any([opts.tick.signal, stop.signal]);
  void (async () => {
    for (;;) {
      try {
        await opts.clock.sleep(LEASE_TTL_MS / 3, both);
      } catch {
        return;
      }
      const ok = await opts.lease.renew().catch((err) => {
        opts.log.warn({ err, world: opts.world }, 'could not renew the tick lease; trying again');
        return true;
      });
      if (ok || both.aborted) continue;
      opts.log.warn({ world: opts.world }, 'tick lease lost to another worker');
      if (!opts.committing()) opts.tick.abort(new LeaseLost('the tick lease was lost to another worker'));
    }
  })();
  return () => stop.abort();
}
