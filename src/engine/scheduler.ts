/**
 * One loop that sleeps between passes (never a fixed interval, so ticks never stack) and starts
 * every instance whose cadence is due; worlds tick concurrently and independently. A tick still
 * running when it is due again has overrun: it is superseded, unless it is committing — then it
 * is left to finish, and its end wakes the loop.
 *
 * Run now (`runNow`) never supersedes: pressed while a tick runs, it asks for one more tick right
 * after that one, and further presses join that request — at most one tick ever waits (issue 9:
 * 50 presses in a row had superseded each other into hundreds of cancelled rows).
 *
 * A world whose ticks keep failing backs off (see backoff.ts); its next try is kept as
 * `next_tick_at`, so status can say when, and a restart or another worker keeps the wait.
 */
import type { Clock, Logger } from '../core/index.js';
import { retryDelayMs } from './backoff.js';
import type { Instance } from './instance.js';
import type { EngineKeys } from './status.js';
import type { TickOutcome } from './types.js';

const WAKE = 'wake';

export interface SchedulerOptions {
  /** Upper bound on one sleep, so enable/disable and config changes are noticed. */
  maxSleepMs?: number;
  onOutcome?: (outcome: TickOutcome) => void;
  /**
   * No other worker or face reads this store now: a quiet tick's `next_tick_at` then waits in
   * memory with its quiet counters (written within 10 min, or at stop) instead of being written
   * after every tick. Absent or false: written at once, so other workers share the cadence.
   */
  alone?: () => boolean;
}

export class Scheduler {
  private readonly nextDue = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<TickOutcome>>();
  /** Ticks that ended (so a finished one is never put back as the one in flight). */
  private readonly settled = new WeakSet<Promise<TickOutcome>>();
  /** Run-now presses waiting for the running tick to end: one follow-up tick per instance. */
  private readonly again = new Map<string, { instance: Instance; done: Promise<TickOutcome>; resolve: (outcome: TickOutcome) => void }>();
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
    this.waking.abort(WAKE);
    await this.loop;
    this.loop = null;
    await Promise.allSettled([...this.inflight.values()]);
    for (const [name, waiting] of this.again) {
      this.again.delete(name);
      waiting.resolve({ world: name, kind: 'skipped', message: 'stopped before the requested tick ran', generation: 0, durationMs: 0, resumed: false });
    }
  }

  /**
   * Ticks this scheduler started that have not finished their bookkeeping (a tick ends, then its
   * next time is written), plus Run-now presses waiting for one: zero means nothing of its own
   * will still write.
   */
  inFlight(): number {
    return this.inflight.size + this.again.size;
  }

  /**
   * Run now: a tick at once; while one runs, one more right after it (pressing again while that
   * one waits joins it). The running tick is left alone. Resolves with the outcome of the tick
   * that serves the press.
   */
  runNow(instance: Instance): Promise<TickOutcome> {
    if (!this.inflight.has(instance.name)) return this.fire(instance, false);
    const waiting = this.again.get(instance.name);
    if (waiting) return waiting.done;
    let resolve!: (outcome: TickOutcome) => void;
    const done = new Promise<TickOutcome>((r) => (resolve = r));
    this.again.set(instance.name, { instance, done, resolve });
    return done;
  }

  /** Recompute now (after a trigger, an enable, a config change). */
  wake(): void {
    this.waking.abort(WAKE); // a reason given: abort() without one builds a DOMException each time
  }

  /** Make an instance due at once. */
  dueNow(name: string): void {
    this.nextDue.set(name, this.clock.now());
    this.wake();
  }

  /**
   * The world's cadence changed (a live setting): its next tick moves to its last tick plus the new
   * interval (never before now), is kept as `next_tick_at` and the loop recomputes. A tick running
   * now, or a world that never ticked (its initial delay), or one backing off after failures, is
   * left alone: each already ends on the new cadence. Returns the next tick time, or null when
   * nothing moved.
   */
  async reschedule(instance: Instance): Promise<number | null> {
    if (instance.running || this.inflight.has(instance.name)) return null;
    const keys = await instance.keys();
    if (keys.open_tick || !keys.last_tick_at || (keys.consecutive_failures ?? 0) > 1) return null;
    const next = Math.max(this.clock.now(), keys.last_tick_at + instance.world.intervalMinutes() * 60_000);
    this.nextDue.set(instance.name, next);
    await instance.setNextTickAt(next);
    this.wake();
    return next;
  }

  /** Start a tick outside the cadence; with `supersede` it discards a running one (an overrun). */
  fire(instance: Instance, supersede: boolean, keys?: Partial<EngineKeys>): Promise<TickOutcome> {
    const previous = this.inflight.get(instance.name);
    // Provisional: not due again while this tick runs (it moves to end + interval when it ends).
    this.nextDue.set(instance.name, this.clock.now() + instance.world.intervalMinutes() * 60_000);
    const p = instance.tick(keys ? { supersede, keys } : { supersede }).then(async (outcome) => {
      const next = this.clock.now() + (await this.delayAfter(instance, outcome));
      this.nextDue.set(instance.name, next);
      await instance.setNextTickAt(next, outcome.kind === 'quiet' && this.opts.alone?.() === true).catch(() => undefined);
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
        this.settled.add(p);
        if (this.inflight.get(instance.name) === p) {
          // A tick this one could not supersede (it was committing) may still run: it is the one in flight again.
          if (previous && previous !== p && !this.settled.has(previous)) this.inflight.set(instance.name, previous);
          else this.inflight.delete(instance.name);
        }
        // A Run-now press came while this tick ran: its one follow-up tick starts now.
        const waiting = this.again.get(instance.name);
        if (waiting && !this.inflight.has(instance.name) && !this.stopping.signal.aborted) {
          this.again.delete(instance.name);
          void this.fire(waiting.instance, false).then(waiting.resolve);
          return;
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
            } else if (instance.enabledFrom(keys))
              this.fire(instance, false, keys); // its probe uses the keys just read
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
      // stop() aborts the waking signal too, so the sleep needs no combined signal; a new one only
      // after a wake (a timer that ran out leaves it unused: one controller per tick, not per pass).
      if (this.waking.signal.aborted) this.waking = new AbortController();
      const wait = Math.max(1, sleepUntil - this.clock.now());
      await this.clock.sleep(wait, this.waking.signal).catch(() => undefined);
    }
  }

  /** The cadence, or after failures in a row the backed-off wait (a success or a quiet tick reads nothing more). */
  private async delayAfter(instance: Instance, outcome: TickOutcome): Promise<number> {
    const intervalMs = instance.world.intervalMinutes() * 60_000;
    if (outcome.kind !== 'failed' && outcome.kind !== 'skipped') return intervalMs;
    // The lock another worker holds: look again before its lease could have lapsed (a dead holder's open tick).
    if (outcome.retryAfterMs !== undefined) return Math.min(intervalMs, outcome.retryAfterMs);
    // A halted world only checks, at its cadence, whether its model changed: that is no retry to back off.
    const failures = await instance.keys().then(
      (keys) => (keys.halt ? 0 : (keys.consecutive_failures ?? 0)),
      () => 0,
    );
    return retryDelayMs(intervalMs, failures);
  }

  private async dueAt(instance: Instance): Promise<number> {
    const known = this.nextDue.get(instance.name);
    if (known !== undefined) return known;
    const keys = await instance.keys();
    const intervalMs = instance.world.intervalMinutes() * 60_000;
    // A tick left open by a crash resumes at once; otherwise the cadence continues from the last
    // tick; a world that never ticked waits its initial delay (seed 3: 60 s for sources to start).
    const initialDelay = keys.open_tick || keys.last_tick_at ? 0 : (instance.world.initialDelayMs?.() ?? 0);
    const due = keys.open_tick
      ? this.clock.now()
      : keys.last_tick_at
        ? Math.min(keys.next_tick_at ?? Infinity, keys.last_tick_at + intervalMs)
        : this.clock.now() + initialDelay;
    this.nextDue.set(instance.name, due);
    // Status says when the first tick comes ("in 1 min"), not "never" with no next time.
    if (initialDelay > 0) await instance.setNextTickAt(due);
    return due;
  }
}
