/**
 * The configured sources of a workspace (folders, IMAP accounts, …), run together: a first sync,
 * a live follower per source (a folder watcher, IMAP IDLE; debounced), and a full sync every
 * `sync_interval_minutes` on the injected clock as a safety net for changes a follower misses.
 * Syncs of one source never overlap. A failed sync (a server down, a wrong password) is tried
 * again with backoff — 30 s, doubling, at most the interval — and `status()` says when; the
 * other sources are not held up by it.
 *
 *   const sources = new MemorySources({ store, db, clock, log, emit, workspace, sources: config.sources });
 *   await sources.start();            // the daemon: registers namespaces, first sync, watchers, periodic syncs
 *   await sources.ready(signal);      // a world's observe: the first sync has finished (a one-shot
 *                                     // `tick`, which never calls start(), runs it here)
 *   sources.syncNow();                // "Sync now": in the background
 *   await sources.stop();
 *
 * `ready()` is what makes a one-shot `subconscious tick` read a folder before its worlds look at
 * memory: every world that reads memory awaits it in its observe, and the first caller starts the
 * sync. After that it is a resolved promise (a quiet tick pays nothing for it).
 */
import type { Kysely } from 'kysely';
import { untilAborted } from '../../core/abort.js';
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { MemorySourceStatus } from '../../protocol/memory.js';
import type { MemorySourceConfig } from '../config.js';
import type { MemoryEmit, MemoryStore } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { createSource, watches } from './create.js';
import type { SyncResult } from './folder.js';
import type { MemorySource } from './source.js';

export interface MemorySourcesDeps {
  store: MemoryStore;
  db: Kysely<MemoryTables>;
  clock: Clock;
  log: Logger;
  emit?: MemoryEmit | undefined;
  workspace: string;
  sources: readonly MemorySourceConfig[];
  fsNow?: (() => number) | undefined;
}

/** Skipped files listed per source in `status()` (the count stays exact). */
const SKIPPED_LISTED = 20;
/** The first retry after a failed sync; it doubles up to the source's interval. */
export const RETRY_MIN_MS = 30_000;

interface Schedule {
  /** When the loop's next sync is due (null: none planned, e.g. stopped). */
  next: number | null;
  /** Failed syncs in a row. */
  failures: number;
  /** Aborted to cut the loop's wait short (a failure outside the loop: retry with backoff, not at the interval). */
  rewait: AbortController | null;
}

export class MemorySources {
  readonly folders: MemorySource[];
  private readonly schedules: Schedule[];
  private readonly stopController = new AbortController();
  private readonly unwatch: (() => void)[] = [];
  private loops: Promise<void>[] = [];
  private first: Promise<void> | null = null;
  private readonly background = new Set<Promise<unknown>>();
  private started = false;

  constructor(private readonly deps: MemorySourcesDeps) {
    this.folders = deps.sources.map((s) => createSource(deps, s));
    this.schedules = deps.sources.map(() => ({ next: null, failures: 0, rewait: null }));
  }

  get(namespace: string): MemorySource | undefined {
    return this.folders.find((f) => f.namespace === namespace);
  }

  /** Register every namespace, then the first sync, watchers and periodic syncs, in the background. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const folder of this.folders) await this.deps.store.registerNamespace(folder.namespace, { label: folder.label, kind: folder.kind });
    void this.ready();
    this.deps.sources.forEach((config, i) => {
      const folder = this.folders[i]!;
      if (watches(config)) this.unwatch.push(folder.watch());
      this.loops.push(this.loop(i, config.sync_interval_minutes * 60_000));
    });
  }

  /**
   * Resolves once every source finished its first sync of this process (started now if nothing
   * started it). Never rejects for a sync: a failed one is logged and recorded on its namespace.
   * With a signal, stops waiting (rejects) when it aborts; the sync itself goes on.
   */
  ready(signal?: AbortSignal): Promise<void> {
    if (this.folders.length === 0) return Promise.resolve();
    this.first ??= this.track(this.syncEach().then(() => undefined));
    return untilAborted(this.first, signal);
  }

  /** Sync every source now (one at a time: they share the store's write lock anyway). Rejects on a store error. */
  async syncAll(): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    for (let i = 0; i < this.folders.length; i++) results.push(await this.runSync(i));
    return results;
  }

  /** "Sync now": one source or all, in the background; returns the namespaces started. */
  syncNow(namespace?: string): string[] {
    const targets = namespace === undefined ? this.folders : [this.get(namespace)].filter((f) => f !== undefined);
    if (namespace !== undefined && targets.length === 0) {
      throw new SubconsciousError('not_found', `No configured memory source has the namespace "${namespace}".`, {
        hint: this.folders.length
          ? `Configured: ${this.folders.map((f) => f.namespace).join(', ')}.`
          : 'Add one under [[worlds.memory.sources]] in subconscious.toml.',
      });
    }
    for (const folder of targets) {
      const i = this.folders.indexOf(folder);
      this.track(
        this.runSync(i).catch((err: unknown) => this.deps.log.error({ namespace: folder.namespace, err: describeError(err) }, 'memory source sync failed')),
      );
    }
    return targets.map((f) => f.namespace);
  }

  /** Every configured source as the page shows it. */
  async status(): Promise<MemorySourceStatus[]> {
    return Promise.all(
      this.folders.map(async (folder, i) => {
        const config = this.deps.sources[i]!;
        const last = folder.last;
        const [skipped, skippedTotal] = await Promise.all([folder.skippedFiles(SKIPPED_LISTED), folder.skippedCount()]);
        const schedule = this.schedules[i]!;
        return {
          namespace: folder.namespace,
          label: folder.label,
          kind: folder.kind,
          path: folder.location,
          watching: folder.watching,
          syncing: folder.syncing,
          sync_interval_minutes: config.sync_interval_minutes,
          last_sync: last && {
            files: last.files,
            added: last.added,
            modified: last.modified,
            removed: last.removed,
            renamed: last.renamed,
            skipped: last.skipped.length,
            error: last.error,
            failure: last.failure ?? null,
            duration_ms: last.duration_ms,
          },
          since_start: folder.totals,
          skipped,
          skipped_total: skippedTotal,
          progress: folder.progress,
          next_sync_at: schedule.next,
          failures: schedule.failures,
        };
      }),
    );
  }

  /** Stop watchers and periodic syncs, and wait for syncs already running. */
  async stop(): Promise<void> {
    this.stopController.abort();
    for (const stop of this.unwatch.splice(0)) stop();
    for (const folder of this.folders) folder.unwatch();
    await Promise.all(this.loops);
    this.loops = [];
    await Promise.all([...this.background]);
    await Promise.all(this.folders.map((f) => f.idle()));
  }

  /** Each source's sync, one after another; a failing one is logged and the others still run. */
  private async syncEach(): Promise<void> {
    for (let i = 0; i < this.folders.length; i++) {
      if (this.stopController.signal.aborted) return;
      try {
        await this.runSync(i);
      } catch (err) {
        this.deps.log.error({ namespace: this.folders[i]!.namespace, err: describeError(err) }, 'memory source sync failed');
      }
    }
  }

  /** One source's sync, counting failures in a row for the backoff (a throw counts too). */
  private async runSync(i: number): Promise<SyncResult> {
    const schedule = this.schedules[i]!;
    try {
      const result = await this.folders[i]!.sync();
      if (result.error) this.failed(schedule);
      else schedule.failures = 0;
      return result;
    } catch (err) {
      this.failed(schedule);
      throw err;
    }
  }

  private failed(schedule: Schedule): void {
    schedule.failures++;
    schedule.rewait?.abort();
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.background.add(work);
    void work.finally(() => this.background.delete(work)).catch(() => undefined);
    return work;
  }

  private async loop(i: number, intervalMs: number): Promise<void> {
    const signal = this.stopController.signal;
    const folder = this.folders[i]!;
    const schedule = this.schedules[i]!;
    // The first sync is `ready()`'s; this loop is the periodic safety net after it, and the retries.
    while (!signal.aborted) {
      const wait = schedule.failures ? Math.min(intervalMs, RETRY_MIN_MS * 2 ** (schedule.failures - 1)) : intervalMs;
      schedule.next = this.deps.clock.now() + wait;
      const rewait = new AbortController();
      schedule.rewait = rewait;
      try {
        await this.deps.clock.sleep(wait, AbortSignal.any([signal, rewait.signal]));
      } catch {
        if (signal.aborted) {
          schedule.next = null;
          return;
        }
        continue; // a sync failed meanwhile: wait the backoff from now instead
      }
      try {
        await this.runSync(i);
      } catch (err) {
        this.deps.log.error({ namespace: folder.namespace, err: describeError(err) }, 'memory source sync failed');
      }
    }
  }
}
