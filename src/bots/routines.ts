/**
 * The routine timer (issue 11 §3): every `routine_tick_seconds` on the injected clock (a sleep
 * loop, never a wall-clock interval), due routines dispatch new work to their bot's direct
 * thread. A slot is taken with compare-and-set (two daemons on one database fire it once); a
 * routine whose previous run is still queued or working skips the slot; after a sleep the
 * missed slots collapse into one run, because the next slot is computed from now.
 */
import { describeError, type Clock, type Logger } from '../core/index.js';
import type { Routine } from '../protocol/bots.js';
import type { BotStore } from './bot-store.js';
import type { BotsEmit } from './events.js';
import type { RoutineStore } from './routine-store.js';
import type { BotRuntime } from './runtime.js';
import { OPEN_STATUSES, type TaskStore } from './task-store.js';
import type { ThreadStore } from './thread-store.js';

export interface RoutineFiring {
  routineId: string;
  taskId: string | null;
  skipped: string | null;
}

export interface RoutineSchedulerDeps {
  routines: RoutineStore;
  bots: BotStore;
  threads: ThreadStore;
  tasks: TaskStore;
  runtime: Pick<BotRuntime, 'dispatchToBot'>;
  clock: Clock;
  log: Logger;
  emit: BotsEmit;
  tickMs: number;
  /** Also run on every tick of the timer, before the routines (the owner lease's renewal). */
  onTick?: (() => Promise<unknown>) | undefined;
}

export class RoutineScheduler {
  private loop: { abort: AbortController; done: Promise<void> } | null = null;
  private asleep = false;
  private sleepWaiters: (() => void)[] = [];

  constructor(private readonly d: RoutineSchedulerDeps) {}

  get running(): boolean {
    return this.loop !== null;
  }

  /** Tick now, then every `tickMs`. */
  start(): void {
    if (this.loop) return;
    const abort = new AbortController();
    this.loop = { abort, done: this.run(abort.signal) };
  }

  /**
   * Resolves once the timer waits for its next tick (at once when it is not running). A fake
   * clock moved while a tick is still at work would not wake it: tests wait for this first.
   */
  whenAsleep(): Promise<void> {
    if (!this.loop || this.asleep) return Promise.resolve();
    return new Promise((resolve) => this.sleepWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    const loop = this.loop;
    if (!loop) return;
    this.loop = null;
    loop.abort.abort();
    await loop.done;
    for (const wake of this.sleepWaiters.splice(0)) wake();
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.d.onTick?.();
      } catch (err) {
        this.d.log.warn({ err: describeError(err) }, 'bots: the host tick’s housekeeping failed; the next one retries');
      }
      try {
        await this.tick();
      } catch (err) {
        this.d.log.warn({ err: describeError(err) }, 'bots: the routine tick failed; the next one retries');
      }
      const sleep = this.d.clock.sleep(this.d.tickMs, signal);
      this.asleep = true;
      for (const wake of this.sleepWaiters.splice(0)) wake();
      try {
        await sleep;
      } catch {
        return;
      } finally {
        this.asleep = false;
      }
    }
  }

  /** One pass over the due routines. */
  async tick(): Promise<RoutineFiring[]> {
    const now = this.d.clock.now();
    const fired: RoutineFiring[] = [];
    for (const r of await this.d.routines.due(now)) {
      try {
        const f = await this.fire(r, now);
        if (f) fired.push(f);
      } catch (err) {
        this.d.log.warn({ err: describeError(err), routine: r.id }, 'bots: a routine could not be dispatched');
        await this.record(r, { taskId: null, skipped: `failed: ${describeError(err)}` }, now);
      }
    }
    return fired;
  }

  private async fire(r: Routine, now: number): Promise<RoutineFiring | null> {
    const last = await this.d.tasks.lastOfRoutine(r.id);
    const busy = last && OPEN_STATUSES.includes(last.status);
    // Another process may own this slot already: only the one that moved next_run_at acts.
    if (!(await this.d.routines.takeSlot(r, now))) return null;
    if (busy) return this.record(r, { taskId: null, skipped: `skipped: the previous run (task ${last.id}) is still ${last.status}` }, now);
    const bot = await this.d.bots.get(r.bot_id);
    if (!bot) return this.record(r, { taskId: null, skipped: 'skipped: the bot no longer exists' }, now);
    const thread = await this.d.threads.direct(bot);
    const request = `Routine (${r.schedule}, ${r.timezone}) — do this now:\n${r.prompt}`;
    const dispatched = await this.d.runtime.dispatchToBot(bot.id, thread.id, request, { source: 'routine', routineId: r.id, note: `Routine: ${r.prompt}` });
    return this.record(r, { taskId: dispatched.taskId, skipped: null }, now);
  }

  private async record(r: Routine, f: { taskId: string | null; skipped: string | null }, at: number): Promise<RoutineFiring> {
    const routine = await this.d.routines.recordOutcome(r.id, { taskId: f.taskId, text: f.skipped ?? 'dispatched' });
    if (routine) this.d.emit('bots.routine_changed', { routine_id: r.id, id: r.id, routine });
    this.d.emit('bots.routine_fired', { routine_id: r.id, bot_id: r.bot_id, at, task_id: f.taskId, skipped: f.skipped });
    return { routineId: r.id, ...f };
  }
}
