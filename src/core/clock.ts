/**
 * Time is injected everywhere so tests drive it with a fake clock instead of sleeping.
 * `sleep` must reject with an AbortError-like SubconsciousError('cancelled') when the signal fires.
 */
import { SubconsciousError } from './errors.js';

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Every cancelled sleep makes one (each tick cancels two): no stack, which would only say "a timer". */
function abortError(): SubconsciousError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new SubconsciousError('cancelled', 'Cancelled while waiting.');
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError());
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

interface Sleeper {
  at: number;
  seq: number;
  resolve: () => void;
}

/**
 * A clock that only moves when told. `advance(ms)` wakes sleepers in time order and lets
 * their continuations run (microtasks and a macrotask turn) before moving on.
 */
export class FakeClock implements Clock {
  private current: number;
  private sleepers: Sleeper[] = [];
  private seq = 0;

  constructor(start = Date.UTC(2026, 0, 1, 9, 0, 0)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  /** How many sleepers are waiting (tests use it to know a loop reached its sleep). */
  get pending(): number {
    return this.sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError());
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(abortError());
      };
      // A woken sleeper drops its listener, so a long-lived signal never collects them.
      const sleeper: Sleeper = {
        at: this.current + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Move time forward, waking every sleeper due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      this.sleepers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.sleepers[0];
      if (!next || next.at > target) break;
      this.sleepers.shift();
      this.current = Math.max(this.current, next.at);
      next.resolve();
      await flush();
    }
    this.current = target;
    await flush();
  }

  /**
   * Move time forward and wake every sleeper due on the way (earliest first) without letting their
   * continuations run: for benchmarks, which await what they measure themselves — `advance`'s
   * macrotask turns cost 0.04 ms of CPU each, as much as the quiet tick being measured.
   */
  step(ms: number): void {
    const target = this.current + ms;
    const due = this.sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq);
    if (due.length) this.sleepers = this.sleepers.filter((s) => s.at > target);
    this.current = target;
    for (const s of due) s.resolve();
  }

  /** Jump without waking anyone (a clock jump or a machine that slept). */
  set(epochMs: number): void {
    this.current = epochMs;
  }
}

/** Let pending promise continuations and one macrotask turn run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}
