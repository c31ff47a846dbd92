/**
 * The coordinator: every unit of work is a durable job before it is acknowledged (DESIGN.md
 * "Storage", issue 17). One small interface, two implementations: pg-boss on Postgres (several
 * workers), and our own tables in the same SQLite file (one process) with the same guarantees
 * across a restart. One contract-test suite runs against both.
 *
 * Guarantees every implementation gives:
 * - `send` resolves only after the job is committed (an RPC that accepts work answers after it).
 * - A job is held by one worker at a time, under a lease its holder renews (`renew`, or `work`
 *   does it). A worker that stops renewing (SIGKILL) loses its jobs after the lease lapses; on
 *   this host a holder process that is gone is noticed at once. The next fetch takes the job over,
 *   with its last `checkpoint`, and `takenOverFrom` names the worker it came from.
 * - Within a `group` (a bot, a thread) at most one job is active, and the next to start is the
 *   highest `priority`, then the oldest: a person's message (priority > 0) goes before heartbeat
 *   work (priority 0) across workers too.
 * - A `key` is a singleton: sending a key that is already queued or active returns that job's id.
 * - State moves forward only through `complete` / `fail` / `cancel` by the lease holder; a call
 *   from a worker whose lease was lost returns false and changes nothing.
 * - A job whose payload no longer parses is moved aside (`deadLetter`) with its reason, and
 *   nothing else stops.
 */

/** JSON-safe payloads and checkpoints. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type JobState = 'queued' | 'active' | 'completed' | 'failed' | 'cancelled' | 'dead';

export interface JobSpec<P extends JsonValue = JsonValue> {
  /** Queue name, `<area>.<kind>`: `bots.run`, `heartbeat.resume`, `tasks.execute`, `engine.tick`. */
  queue: string;
  payload: P;
  /** Singleton / idempotency key: while a job with this key is queued or active, `send` returns its id. */
  key?: string | undefined;
  /** Ordering group: at most one active job per group; highest priority, then oldest, starts next. */
  group?: string | undefined;
  /** Higher starts first within a group (and a queue). Default 0. */
  priority?: number | undefined;
  /** Not before this time (epoch ms). */
  startAfter?: number | undefined;
  /** Attempts after the first failure (default 0: a failed job stays failed). */
  retryLimit?: number | undefined;
  /** Delay before a retry (ms); doubled per attempt when `retryBackoff`. */
  retryDelayMs?: number | undefined;
  retryBackoff?: boolean | undefined;
}

export type CancelTarget = { id: string } | { key: string } | { group: string; queue?: string };

export interface CancelOptions {
  /** Only jobs that wait (no worker holds them). */
  waitingOnly?: boolean;
}

export interface Job<P extends JsonValue = JsonValue> {
  id: string;
  queue: string;
  payload: P;
  key: string | null;
  group: string | null;
  priority: number;
  state: JobState;
  /** 1 on the first run; a take-over or a retry counts one more. */
  attempt: number;
  /** What the last holder saved with `checkpoint` (null: none). */
  checkpoint: JsonValue | null;
  /** The worker whose lease lapsed, when this fetch took the job over from it. */
  takenOverFrom: string | null;
  createdAt: number;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  /** `face` (HTTP + scheduler) or `worker` (no HTTP face). */
  role: 'face' | 'worker';
  startedAt: number;
  lastSeenAt: number;
  /** Jobs (and leases) it holds now. */
  jobsHeld: number;
  alive: boolean;
}

export interface QueueSize {
  queue: string;
  queued: number;
  active: number;
  failed: number;
  dead: number;
}

/** A job moved aside (`deadLetter`, or a payload that no longer parses), with why. */
export interface DeadLetter {
  id: string;
  queue: string;
  key: string | null;
  group: string | null;
  reason: string;
  createdAt: number;
  /** When it was moved aside (null where the implementation does not keep it). */
  movedAt: number | null;
}

/** A named exclusive lease (a world's tick lock): one holder at a time, renewed while held. */
export interface Lease {
  name: string;
  /** Increases on every acquisition: a stale holder's writes can be refused by comparing it. */
  generation: number;
  /** Extend; false when the lease was lost (it lapsed and another worker took it). */
  renew(): Promise<boolean>;
  /** Still held by this holder at this generation and not lapsed: a read, no write. */
  held(): Promise<boolean>;
  release(): Promise<void>;
}

export interface WorkOptions {
  /** Handlers running at once (default 1): each fetch claims at most the free slots, and a slot is refilled as soon as its job ends. */
  batchSize?: number | undefined;
  /** How often an idle worker looks for work (ms). Implementations may also be woken by `send`. */
  pollIntervalMs?: number | undefined;
}

/** What `work()` gives a handler besides its job (added to the contract: a handler must learn that its lease was lost). */
export interface WorkContext {
  /** Aborted when the job was taken over by another worker, or when this worker stops. */
  signal: AbortSignal;
}

export interface Coordinator {
  /** This worker's id (unique in the cluster). */
  readonly workerId: string;
  /** The lease period (ms): a dead worker's jobs are taken over within two of these. */
  readonly leaseMs: number;

  /** Register this worker, start liveness and maintenance. */
  start(): Promise<void>;
  /** Stop fetching, release what this worker holds (its jobs become queued again), deregister. */
  stop(): Promise<void>;

  /** Commit a job; resolves with its id (an existing one for a live `key`). */
  send<P extends JsonValue>(spec: JobSpec<P>): Promise<string>;
  /** Claim up to `batchSize` startable jobs of a queue under this worker's lease. */
  fetch<P extends JsonValue>(queue: string, opts?: { batchSize?: number }): Promise<Job<P>[]>;
  /** Keep the lease on a held job; false: it is not ours any more (stop working on it). */
  renew(jobId: string): Promise<boolean>;
  /** Save progress with the job, so a take-over continues from here. */
  checkpoint(jobId: string, data: JsonValue): Promise<boolean>;
  complete(jobId: string, output?: JsonValue): Promise<boolean>;
  /**
   * Complete several held jobs at once (added: a batch worker's one round trip instead of one per
   * job); returns the ids completed — a job not held by this worker any more is left out, unchanged.
   */
  completeMany(jobIds: readonly string[]): Promise<string[]>;
  /** Fail (retried per its spec unless `retry: false`). */
  fail(jobId: string, reason: string, opts?: { retry?: boolean }): Promise<boolean>;
  /**
   * Cancel queued or active jobs by id or key (no holder needed: a person's stop); with
   * `waitingOnly`, only jobs no worker holds (a job another worker runs is left to it).
   */
  cancel(target: CancelTarget, opts?: CancelOptions): Promise<number>;
  /** Move a job aside with a reason (a payload that no longer parses). */
  deadLetter(jobId: string, reason: string): Promise<void>;

  /** Run `handler` for each fetched job, renewing its lease while it runs; returns a stop function. */
  work<P extends JsonValue>(queue: string, opts: WorkOptions, handler: (job: Job<P>, ctx: WorkContext) => Promise<void>): () => Promise<void>;

  /** Take a named exclusive lease (a world's tick), or null when another live worker holds it. */
  lease(name: string, ttlMs?: number): Promise<Lease | null>;
  /** Who holds a named lease now, or null (added: the engine says which worker a skipped tick waits for). */
  leaseHolder(name: string): Promise<string | null>;

  getJob<P extends JsonValue>(jobId: string): Promise<Job<P> | null>;
  /** The queued or active job of a `key`, or null: a read, nothing sent (added: restart repair asks it). */
  liveJob<P extends JsonValue>(key: string): Promise<Job<P> | null>;
  workers(): Promise<WorkerInfo[]>;
  /**
   * Other live workers (faces too) on this store, as last counted at this worker's heartbeat (every
   * third of a lease period); null before the first count or when it failed. Added: the scheduler
   * keeps a quiet tick's next time in memory while nobody else reads it.
   */
  othersAlive(): number | null;
  sizes(): Promise<QueueSize[]>;
  /** The newest jobs moved aside, with their reasons (added: the page lists them). */
  deadLetters(limit?: number): Promise<DeadLetter[]>;
  /**
   * Delete finished jobs (completed, cancelled, failed, dead) last changed before `olderThan`
   * (epoch ms); returns how many (added: retention; the maintenance loop calls it).
   */
  prune(olderThan: number): Promise<number>;
}
