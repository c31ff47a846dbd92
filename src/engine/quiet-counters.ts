/**
 * What a quiet tick would write: `last_tick_at` and `total_ticks` move on every tick, and the
 * scheduler's `next_tick_at` after it, and nothing else. A crash does not need them (a lost
 * `last_tick_at` only makes the next tick look at a longer window, which is safe: state advances
 * only on success; a lost `next_tick_at` only brings the next tick forward), so this process keeps
 * them in memory and writes them with the next write it makes anyway, or at most every
 * `QUIET_FLUSH_MS` (10 min), or at stop. This process's status and scheduler see them at once
 * (`overlay`); another process reading the store sees them at most `QUIET_FLUSH_MS` late (a
 * worker that finds `next_tick_at` passed runs its own probe: reads only).
 */
import type { WorldKeys } from './state.js';
import type { EngineKeys } from './status.js';

export const QUIET_FLUSH_MS = 10 * 60_000;
/** Alone on the store, nobody else reads them: they are written hourly (and at stop, and with any other write). */
export const QUIET_FLUSH_ALONE_MS = 60 * 60_000;

type Counters = Pick<EngineKeys, 'last_tick_at' | 'total_ticks' | 'next_tick_at'>;

export class QuietCounters {
  private pending: Partial<Counters> | null = null;
  private flushedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly keys: WorldKeys<EngineKeys>,
    private readonly now: () => number,
    /** No other worker or face is alive on the store (see `EngineDeps.alone`). */
    private readonly alone: () => boolean = () => false,
  ) {}

  /** Keys read from the store, with the counters this process has not written yet over them. */
  overlay<K extends Partial<Counters>>(keys: K): K {
    const p = this.pending;
    if (!p) return keys;
    const out = { ...keys };
    if (p.total_ticks !== undefined) {
      out.last_tick_at = Math.max(p.last_tick_at ?? 0, keys.last_tick_at ?? 0) || null;
      out.total_ticks = Math.max(p.total_ticks, keys.total_ticks ?? 0);
    }
    // Another worker that ticked since wrote a later one: the later wins.
    if (p.next_tick_at != null) out.next_tick_at = Math.max(p.next_tick_at, keys.next_tick_at ?? 0);
    return out;
  }

  /** Write a successful tick's updates; only counters (a quiet tick) wait in memory for a while. */
  async record(updates: Partial<EngineKeys>): Promise<void> {
    const countersOnly = Object.keys(updates).every((k) => k === 'last_tick_at' || k === 'total_ticks');
    if (countersOnly && !this.flushDue()) {
      this.pending = { ...this.pending, last_tick_at: updates.last_tick_at ?? null, total_ticks: updates.total_ticks ?? 0 };
      return;
    }
    await this.write({ ...this.pending, ...updates });
  }

  /** The scheduler's next time after a quiet tick: it waits with the counters. */
  async nextTickAfterQuiet(at: number): Promise<void> {
    if (!this.flushDue()) {
      this.pending = { ...this.pending, next_tick_at: at };
      return;
    }
    await this.write({ ...this.pending, next_tick_at: at });
  }

  /** A next time written at once (a failure's backoff, a new cadence) replaces the one waiting. */
  forgetNextTick(): void {
    if (this.pending) delete this.pending.next_tick_at;
  }

  /** Write what waits (at stop). */
  async flush(): Promise<void> {
    if (this.pending) await this.write(this.pending);
  }

  private flushDue(): boolean {
    return this.now() - this.flushedAt >= (this.alone() ? QUIET_FLUSH_ALONE_MS : QUIET_FLUSH_MS);
  }

  private async write(updates: Partial<EngineKeys>): Promise<void> {
    const at = this.now();
    this.pending = null;
    await this.keys.setMany(updates);
    this.flushedAt = at;
  }
}
