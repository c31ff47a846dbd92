/**
 * One loop that sleeps between passes (never a fixed interval, so ticks never stack) and starts
 * every instance whose cadence is due; worlds tick concurrently and independently. A tick still
 * running when it is due again has overrun: it is superseded, unless it is committing — then it
 * is left to finish, and its end wakes the loop.
 */
import type { Clock, Logger } from '../core/index.js';
import type { Instance } from './instance.js';
import type { TickOutcome } from './types.js';

export interface SchedulerOptions {
  /** Upper bound on one sleep, so enable/disable and config changes are noticed. */
  maxSleepMs?: number;
  onOutcome?: (outcome: TickOutcome) => void;
}

export class Scheduler {
  private readonly nextDue = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<TickOutcome>>();
  private loop: Promise<void> | null = null;
  private stopping = new AbortController();
  private waking = new AbortController();
  /** Completed passes (for the overhead benchmark and tests). */
  passes = 0;

  constructor(
    private readonly instances: () => Instance[],
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: SchedulerOptions = {},
  ) {}

  start(): void {
    if (this.loop) return;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  /** Stop looping and wait for ticks in flight (callers stop the instances first at shutdown). */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.waking.abort();
    await this.loop;
    this.loop = null;
    await Promise.allSettled([...this.inflight.values()]);
  }

  /** Recompute now (after a trigger, an enable, a config change). */
  wake(): void {
    this.waking.abort();
  }

  /** Make an instance due at once. */
  dueNow(name: string): void {
    this.nextDue.set(name, this.clock.now());
    this.wake();
  }

  /** Start a tick outside the cadence (Run now); it supersedes a running one. */
  fire(instance: Instance, supersede: boolean): Promise<TickOutcome> {
    const previous = this.inflight.get(instance.name);
    // Provisional: not due again while this tick runs (it moves to end + interval when it ends).
    this.nextDue.set(instance.name, this.clock.now() + instance.world.intervalMinutes() * 60_000);
    const p = instance.tick({ supersede }).then(async (outcome) => {
      const next = this.clock.now() + instance.world.intervalMinutes() * 60_000;
      this.nextDue.set(instance.name, next);
      await instance.setNextTickAt(next).catch(() => undefined);
      this.opts.onOutcome?.(outcome);
      return outcome;
    });
    this.inflight.set(instance.name, p);
    void p
      .then(
        (outcome) => outcome.kind,
        () => 'failed' as const,
      )
      .then((kind) => {
        if (this.inflight.get(instance.name) === p) {
          if (previous && previous !== p) this.inflight.set(instance.name, previous);
          else this.inflight.delete(instance.name);
        }
        // A tick that ran may change what is due; one that was only skipped changed nothing, and
        // waking for it could make the loop spin against a tick that cannot be superseded.
        if (kind !== 'skipped') this.wake();
      });
    return p;
  }

  private async run(): Promise<void> {
    const stop = this.stopping.signal;
    while (!stop.aborted) {
      let sleepUntil = this.clock.now() + (this.opts.maxSleepMs ?? 60_000);
      try {
        for (const instance of this.instances()) {
          const due = await this.dueAt(instance);
          const now = this.clock.now();
          const intervalMs = instance.world.intervalMinutes() * 60_000;
          if (instance.running) {
            const since = instance.runningSince ?? now;
            if (now - since < intervalMs) sleepUntil = Math.min(sleepUntil, since + intervalMs);
            else if (!instance.committing) this.fire(instance, true); // overran its cadence
            continue;
          }
          if (due <= now) {
            // Another worker on the same store may have ticked it: its next_tick_at wins.
            const keys = await instance.keys();
            const shared = keys.open_tick ? now : (keys.next_tick_at ?? now);
            if (shared > now) {
              this.nextDue.set(instance.name, shared);
              sleepUntil = Math.min(sleepUntil, shared);
            } else if (instance.enabledFrom(keys)) this.fire(instance, false);
            else this.nextDue.set(instance.name, now + intervalMs);
          } else {
            sleepUntil = Math.min(sleepUntil, due);
          }
        }
      } catch (err) {
        this.log.error({ err }, 'scheduler pass failed');
      }
      this.passes++;
      if (stop.aborted) break;
      this.waking = new AbortController();
      const wait = Math.max(1, sleepUntil - this.clock.now());
      await this.clock.sleep(wait, AbortSignal.any([stop, this.waking.signal])).catch(() => undefined);
    }
  }

  private async dueAt(instance: Instance): Promise<number> {
    const known = this.nextDue.get(instance.name);
    if (known !== undefined) return known;
    const keys = await instance.keys();
    const intervalMs = instance.world.intervalMinutes() * 60_000;
    // A tick left open by a crash resumes at once; otherwise the cadence continues from the last
    // tick; a world that never ticked waits its initial delay (seed 3: 60 s for sources to start).
    const due = keys.open_tick
      ? this.clock.now()
      : keys.last_tick_at
        ? Math.min(keys.next_tick_at ?? Infinity, keys.last_tick_at + intervalMs)
        : this.clock.now() + (instance.world.initialDelayMs?.() ?? 0);
    this.nextDue.set(instance.name, due);
    return due;
  }
}
