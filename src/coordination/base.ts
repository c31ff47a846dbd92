/**
 * What both implementations share: the `work()` loop (fetch, run, renew while running, complete
 * or fail), named leases, the workers registry and its heartbeat. Each implementation brings the
 * job operations (`SqliteCoordinator`, `PgBossCoordinator`).
 */
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { SubconsciousError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { leaseHolder, takeLease } from './leases.js';
import type { CoordinationTables } from './tables.js';
import type {
  CancelOptions,
  CancelTarget,
  Coordinator,
  DeadLetter,
  Job,
  JobSpec,
  JsonValue,
  Lease,
  QueueSize,
  WorkContext,
  WorkOptions,
  WorkerInfo,
} from './types.js';
import { WorkersRegistry } from './workers.js';

export const DEFAULT_LEASE_MS = 60_000;
/** Finished jobs are kept this long (then pruned by the maintenance loop). */
export const DEFAULT_RETENTION_MS = 24 * 3_600_000;
const DEFAULT_POLL_MS = 2_000;
/** The maintenance loop prunes at most this often (and at start). */
const PRUNE_EVERY_MS = 3_600_000;

export interface CoordinatorOptions {
  db: Kysely<CoordinationTables>;
  clock: Clock;
  log: Logger;
  role?: WorkerInfo['role'];
  /** Default `host:pid:<random>`: `host:pid` lets this host notice a holder process that is gone. */
  workerId?: string;
  leaseMs?: number;
  /** How long finished jobs are kept (default 24 h). */
  retentionMs?: number;
}

export function newWorkerId(): string {
  return `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

export abstract class BaseCoordinator implements Coordinator {
  readonly workerId: string;
  readonly leaseMs: number;
  readonly retentionMs: number;
  protected readonly db: Kysely<CoordinationTables>;
  protected readonly clock: Clock;
  protected readonly log: Logger;
  protected readonly registry: WorkersRegistry;
  /** Named leases this worker holds (name → generation). */
  protected readonly leasesHeld = new Map<string, number>();
  /** Jobs `work()` runs now, and those of them the handler settled itself (so `work()` does not complete them again). */
  private readonly working = new Set<string>();
  private readonly settled = new Set<string>();
  private readonly wakers = new Map<string, AbortController>();
  private readonly loops = new Set<() => Promise<void>>();
  private heartbeat: AbortController | null = null;
  private heartbeatDone: Promise<void> = Promise.resolve();

  constructor(opts: CoordinatorOptions) {
    this.db = opts.db;
    this.clock = opts.clock;
    this.log = opts.log;
    this.workerId = opts.workerId ?? newWorkerId();
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    this.registry = new WorkersRegistry(this.db, this.workerId, opts.role ?? 'face', () => this.clock.now(), this.leaseMs);
  }

  abstract send<P extends JsonValue>(spec: JobSpec<P>): Promise<string>;
  abstract fetch<P extends JsonValue>(queue: string, opts?: { batchSize?: number }): Promise<Job<P>[]>;
  abstract renew(jobId: string): Promise<boolean>;
  abstract checkpoint(jobId: string, data: JsonValue): Promise<boolean>;
  protected abstract settle(jobId: string, how: { complete: JsonValue | undefined } | { fail: string; retry: boolean }): Promise<boolean>;
  protected abstract settleMany(jobIds: readonly string[]): Promise<string[]>;
  abstract cancel(target: CancelTarget, opts?: CancelOptions): Promise<number>;
  abstract deadLetter(jobId: string, reason: string): Promise<void>;
  abstract getJob<P extends JsonValue>(jobId: string): Promise<Job<P> | null>;
  abstract liveJob<P extends JsonValue>(key: string): Promise<Job<P> | null>;
  abstract sizes(): Promise<QueueSize[]>;
  abstract deadLetters(limit?: number): Promise<DeadLetter[]>;
  abstract prune(olderThan: number): Promise<number>;
  /** Jobs held per worker (active, under a lease). */
  protected abstract jobsHeld(): Promise<Map<string, number>>;
  /** Put this worker's jobs back in line (a clean stop). */
  protected abstract releaseAll(): Promise<void>;

  private others: number | null = null;

  othersAlive(): number | null {
    return this.others;
  }

  private async countOthers(): Promise<void> {
    this.others = await this.registry.othersAlive().catch(() => null);
  }

  async start(): Promise<void> {
    if (this.heartbeat) return;
    await this.registry.register();
    await this.countOthers();
    const stop = new AbortController();
    this.heartbeat = stop;
    let prunedAt = Number.NEGATIVE_INFINITY;
    this.heartbeatDone = (async () => {
      for (;;) {
        // Maintenance: finished jobs older than the retention go, at start and then hourly.
        if (this.clock.now() - prunedAt >= Math.min(PRUNE_EVERY_MS, this.retentionMs)) {
          prunedAt = this.clock.now();
          await this.maintain();
        }
        try {
          await this.clock.sleep(this.leaseMs / 3, stop.signal);
        } catch {
          return;
        }
        await this.registry.seen().catch((err) => this.log.warn({ err }, 'could not record this worker as seen; trying again'));
        await this.countOthers();
      }
    })();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.loops].map((stopLoop) => stopLoop()));
    this.heartbeat?.abort();
    await this.heartbeatDone;
    await this.releaseAll();
    await this.registry.stopped();
    this.others = null;
    await this.shutdown();
    this.heartbeat = null;
  }

  /** One maintenance pass: prune finished jobs past the retention (and stopped workers' rows of a day ago). */
  private async maintain(): Promise<void> {
    try {
      const n = await this.prune(this.clock.now() - this.retentionMs);
      await this.registry.prune(this.clock.now() - Math.max(this.retentionMs, 86_400_000));
      if (n > 0) this.log.info({ jobs: n }, 'pruned finished jobs past their retention');
    } catch (err) {
      this.log.warn({ err }, 'could not prune finished jobs; trying again later');
    }
  }

  /** What an implementation stops last (pg-boss's timers). */
  protected async shutdown(): Promise<void> {}

  complete(jobId: string, output?: JsonValue): Promise<boolean> {
    this.settledByHandler(jobId);
    return this.settle(jobId, { complete: output });
  }

  completeMany(jobIds: readonly string[]): Promise<string[]> {
    for (const id of jobIds) this.settledByHandler(id);
    return jobIds.length === 0 ? Promise.resolve([]) : this.settleMany([...new Set(jobIds)]);
  }

  fail(jobId: string, reason: string, opts: { retry?: boolean } = {}): Promise<boolean> {
    this.settledByHandler(jobId);
    return this.settle(jobId, { fail: reason, retry: opts.retry ?? true });
  }

  /** Only jobs `work()` runs are remembered (a job fetched and settled by hand left an id behind for good). */
  private settledByHandler(jobId: string): void {
    if (this.working.has(jobId)) this.settled.add(jobId);
  }

  work<P extends JsonValue>(queue: string, opts: WorkOptions, handler: (job: Job<P>, ctx: WorkContext) => Promise<void>): () => Promise<void> {
    const stop = new AbortController();
    const batchSize = opts.batchSize ?? 1;
    const pollMs = opts.pollIntervalMs ?? DEFAULT_POLL_MS;
    // Up to `batchSize` handlers at once: a free slot is filled as soon as one ends (a long job does not hold back the next).
    const running = new Set<Promise<void>>();
    const loop = (async () => {
      while (!stop.signal.aborted) {
        // Listening before fetching: a send that lands while the fetch runs wakes the sleep below
        // at once (registered after the fetch, such a wake found no one, and the job waited a
        // whole poll interval; on a fake clock, for ever).
        const waker = new AbortController();
        this.wakers.set(queue, waker);
        const free = batchSize - running.size;
        const jobs =
          free > 0
            ? await this.fetch<P>(queue, { batchSize: free }).catch((err) => {
                this.log.warn({ err, queue }, 'could not fetch jobs; trying again');
                return [] as Job<P>[];
              })
            : [];
        for (const job of jobs) {
          const one: Promise<void> = this.runOne(job, handler, stop.signal).finally(() => {
            running.delete(one);
            this.wake(queue);
          });
          running.add(one);
        }
        if (jobs.length > 0 && running.size < batchSize) continue;
        try {
          await this.clock.sleep(pollMs, AbortSignal.any([stop.signal, waker.signal]));
        } catch {
          // woken by a send or a finished job, or stopped
        }
      }
      await Promise.all(running);
    })();
    const stopLoop = async () => {
      stop.abort();
      await loop;
      this.loops.delete(stopLoop);
    };
    this.loops.add(stopLoop);
    return stopLoop;
  }

  /** One job under `work()`: renewed every third of a lease while the handler runs. */
  private async runOne<P extends JsonValue>(job: Job<P>, handler: (job: Job<P>, ctx: WorkContext) => Promise<void>, stopping: AbortSignal): Promise<void> {
    const lost = new AbortController();
    const done = new AbortController();
    const signal = AbortSignal.any([lost.signal, stopping]);
    this.working.add(job.id);
    const renewal = (async () => {
      for (;;) {
        try {
          await this.clock.sleep(this.leaseMs / 3, AbortSignal.any([done.signal, signal]));
        } catch {
          return;
        }
        const ok = await this.renew(job.id).catch(() => true); // a store hiccup is not a lost lease
        if (!ok) lost.abort(new SubconsciousError('lease_lost', `job ${job.id} was taken over by another worker`));
      }
    })();
    try {
      await handler(job, { signal });
      if (!this.settled.has(job.id) && !lost.signal.aborted) await this.settle(job.id, { complete: undefined });
    } catch (err) {
      // Stopping hands the job back (stop() releases it); a lost lease is the new holder's now.
      if (!this.settled.has(job.id) && !signal.aborted)
        await this.settle(job.id, { fail: (err as Error).message ?? String(err), retry: true }).catch(() => false);
    } finally {
      done.abort();
      await renewal;
      this.working.delete(job.id);
      this.settled.delete(job.id);
    }
  }

  /** Wake a local `work()` loop idling on this queue (a send in the same process). */
  protected wake(queue: string): void {
    this.wakers.get(queue)?.abort();
    this.wakers.delete(queue);
  }

  lease(name: string, ttlMs?: number): Promise<Lease | null> {
    return takeLease(this.db, name, this.workerId, ttlMs ?? this.leaseMs, () => this.clock.now(), this.leasesHeld);
  }

  leaseHolder(name: string): Promise<string | null> {
    return leaseHolder(this.db, name, this.clock.now());
  }

  async workers(): Promise<WorkerInfo[]> {
    const [jobs, leases] = await Promise.all([this.jobsHeld(), this.registry.leasesHeld()]);
    for (const [id, n] of leases) jobs.set(id, (jobs.get(id) ?? 0) + n);
    return this.registry.list(jobs);
  }
}

/** The retry delay after `retries` failures already retried (0 for the first retry). */
export function retryDelay(delayMs: number, backoff: boolean, retries: number): number {
  return backoff ? delayMs * 2 ** Math.min(retries, 20) : delayMs;
}

/** A stored JSON text, or a reason it is not JSON (a hand-edited or old release's row). */
export function parseJson(text: string | null): { ok: true; value: JsonValue | null } | { ok: false; reason: string } {
  if (text === null) return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(text) as JsonValue };
  } catch (err) {
    return { ok: false, reason: `the payload is not JSON: ${(err as Error).message}` };
  }
}

/** Per-queue counts from (queue, state, n) rows. */
export function queueSizes(rows: Array<{ queue: string; state: string; n: number | string | bigint }>): QueueSize[] {
  const by = new Map<string, QueueSize>();
  for (const r of rows) {
    const size = by.get(r.queue) ?? { queue: r.queue, queued: 0, active: 0, failed: 0, dead: 0 };
    if (r.state === 'queued' || r.state === 'active' || r.state === 'failed' || r.state === 'dead') size[r.state] += Number(r.n);
    by.set(r.queue, size);
  }
  return [...by.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

/** Monotonic within this process: orders jobs sent in the same clock millisecond. */
export function nextSeq(): number {
  return Number(process.hrtime.bigint() % 1_000_000_000_000_000n);
}
