/**
 * Seed 2 §5.1's single-flight, in one place: every registry that holds a bot's work, and the one
 * question asked of them all. A bot is idle only when none of these holds anything:
 *   dispatching  a dispatch is writing its task and message (before the job is queued)
 *   queues       jobs waiting
 *   starting     the job taken from the queue, in the gap before its run (`next_job_delay_ms`)
 *   runs         the job whose run is being prepared, running or settling
 *   externalRuns runs of the bot started by someone else
 *   pulses       a heartbeat pulse in flight
 * The runtime moves a job from one to the next in one synchronous step, so no instant exists in
 * which work is pending and the bot looks idle.
 */
import type { Job as CoordJob } from '../coordination/index.js';
import type { BotStatus } from '../protocol/bots.js';
import { JobQueues, type Job } from './queue.js';

export interface RuntimeStatus {
  status: BotStatus;
  queued: number;
  taskId: string | null;
}

export interface Starting {
  job: Job;
  abort: AbortController;
  /** The coordinator's job once it is this worker's (unset: the gap after the bot's last run, before the fetch). */
  held?: CoordJob;
}

export class SingleFlight<Active extends { job: Job }> {
  readonly queues = new JobQueues();
  readonly starting = new Map<string, Starting>();
  readonly runs = new Map<string, Active>();
  readonly pulses = new Map<string, AbortController>();
  private readonly dispatching = new Map<string, number>();
  private readonly externalRuns = new Map<string, Set<symbol>>();

  isIdle(botId: string): boolean {
    return (
      !this.runs.has(botId) &&
      !this.externalRuns.has(botId) &&
      this.queues.size(botId) === 0 &&
      !this.starting.has(botId) &&
      !this.dispatching.has(botId) &&
      !this.pulses.has(botId)
    );
  }

  /** The read model for the page: working (a run), queued (waiting or about to start), idle. */
  statusOf(botId: string): RuntimeStatus {
    const active = this.runs.get(botId);
    const queued = this.queues.size(botId) + (this.starting.has(botId) ? 1 : 0);
    if (active || this.externalRuns.has(botId)) return { status: 'working', queued, taskId: active?.job.taskId ?? null };
    if (queued > 0 || this.dispatching.has(botId)) return { status: 'queued', queued, taskId: null };
    return { status: 'idle', queued: 0, taskId: null };
  }

  /** A dispatch for this bot is being written; call the returned function once it is queued (or failed). */
  holdDispatch(botId: string): () => void {
    this.dispatching.set(botId, (this.dispatching.get(botId) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const n = (this.dispatching.get(botId) ?? 1) - 1;
      if (n > 0) this.dispatching.set(botId, n);
      else this.dispatching.delete(botId);
    };
  }

  /** A run of this bot started outside the queue; the bot is busy until the returned function is called. */
  holdExternalRun(botId: string): () => void {
    const token = Symbol('external-run');
    const set = this.externalRuns.get(botId) ?? new Set<symbol>();
    set.add(token);
    this.externalRuns.set(botId, set);
    return () => {
      set.delete(token);
      if (set.size === 0 && this.externalRuns.get(botId) === set) this.externalRuns.delete(botId);
    };
  }
}
