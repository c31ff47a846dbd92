/**
 * A fake clock for measuring CPU per tick through the scheduler. The tests' `FakeClock` lets five
 * macrotask turns run after every sleeper it wakes (so a test sees every continuation settle):
 * 0.04 ms CPU per advance on a 2-core machine, as much as the quiet tick it would be measuring.
 * Here `advance` only wakes the sleepers that are due, in time order, and the bench awaits what it
 * measures itself (the scheduler's `onOutcome`), as a daemon's timers would.
 */
import { SubconsciousError, type Clock } from '../src/core/index.js';

interface Sleeper {
  at: number;
  seq: number;
  wake: () => void;
}

const CANCELLED = new SubconsciousError('cancelled', 'Cancelled while waiting.');

export class StepClock implements Clock {
  private sleepers: Sleeper[] = [];
  private seq = 0;

  constructor(private current: number) {}

  now(): number {
    return this.current;
  }

  set(epochMs: number): void {
    this.current = epochMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(CANCELLED);
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(CANCELLED);
      };
      const sleeper: Sleeper = {
        at: this.current + Math.max(0, ms),
        seq: this.seq++,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Move time to `now + ms`, waking every sleeper due by then (earliest first). */
  advance(ms: number): void {
    const target = this.current + ms;
    const due = this.sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq);
    if (due.length) this.sleepers = this.sleepers.filter((s) => s.at > target);
    this.current = target;
    for (const s of due) s.wake();
  }
}
