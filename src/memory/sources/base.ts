/**
 * What every source kind shares, written once: its dependencies, the sync gate and bookkeeping
 * behind `sync()`, `idle()`, `last`, `totals`, `progress` and the skipped list; the debounce of
 * a live follower's notifications (IMAP IDLE, MCP notifications); a failed sync recorded the same
 * way everywhere (the failure on the result, a warning, nothing changed); and a text cut at
 * `max_body_chars` with the cut said.
 *
 * A kind extends `SourceBase` and writes `syncOnce()` (and what is its own: location, watch,
 * test connection).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.js';
import { describeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { MemorySourceFailure } from '../../protocol/memory.js';
import type { MemoryEmit, MemoryStore } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { SyncBookkeeping, type Totals } from './bookkeeping.js';
import type { SkippedFile, SyncResult } from './folder.js';
import { SyncGate, type SyncProgress } from './source.js';

const PROGRESS_EVERY_MS = 500;

/** What a source kind is given (the folder source adds its file-system clock). */
export interface SourceBaseDeps {
  store: MemoryStore;
  db: Kysely<MemoryTables>;
  clock: Clock;
  log: Logger;
  emit?: MemoryEmit | undefined;
}

export abstract class SourceBase {
  readonly namespace: string;
  readonly label: string;
  protected readonly book: SyncBookkeeping;
  protected readonly gate = new SyncGate(() => this.syncOnce());
  /** The running sync's progress, set by `syncOnce()` through `progressed()`. */
  private current: SyncProgress | null = null;
  private progressSaidAt = -Infinity;

  constructor(
    protected readonly deps: SourceBaseDeps,
    opts: { namespace: string; label?: string | undefined },
    /** How skipped items are listed: by path, or newest first (messages). */
    skippedOrder: 'path' | 'newest' = 'path',
  ) {
    this.namespace = opts.namespace;
    this.label = opts.label ?? opts.namespace;
    this.book = new SyncBookkeeping(deps, this.namespace, skippedOrder);
  }

  /** One sync, never two at once (the gate sees to that). */
  protected abstract syncOnce(): Promise<SyncResult>;

  /** The last finished sync's result, or null. */
  get last(): SyncResult | null {
    return this.book.last;
  }
  /** Syncs finished by this object, and the document changes they made. */
  get totals(): Totals {
    return this.book.totals;
  }
  get progress(): SyncProgress | null {
    return this.current && { ...this.current };
  }
  /** A sync is running now. */
  get syncing(): boolean {
    return this.gate.busy;
  }
  /** Sync now. Calls during a running sync share one more sync after it (and get its result). */
  sync(): Promise<SyncResult> {
    return this.gate.run();
  }
  /** Resolves when no sync is running or queued. */
  idle(): Promise<void> {
    return this.gate.idle();
  }
  /** Items skipped the last time they were read, with their reasons (`memory_source_files` rows). */
  skippedFiles(limit?: number): Promise<SkippedFile[]> {
    return this.book.skippedFiles(limit);
  }
  skippedCount(): Promise<number> {
    return this.book.skippedCount();
  }

  /**
   * The running sync read more (null: it ended). An open page hears it as `memory.sync_progress`,
   * at most one every half second: enough to watch a long import move, too few to crowd the
   * event log (the end is `memory.synced`).
   */
  protected progressed(progress: SyncProgress | null): void {
    this.current = progress;
    if (!progress) {
      this.progressSaidAt = -Infinity;
      return;
    }
    const now = this.deps.clock.now();
    if (now - this.progressSaidAt < PROGRESS_EVERY_MS) return;
    this.progressSaidAt = now;
    this.deps.emit?.('memory.sync_progress', { namespace: this.namespace, ...progress });
  }

  /** A failed sync: its failure on the result, one warning; the caller changes nothing more. */
  protected failed(result: SyncResult, failure: MemorySourceFailure, what: string): void {
    result.error = failure.message;
    result.failure = failure;
    this.deps.log.warn({ namespace: this.namespace, failure }, what);
  }
}

/**
 * Run `fn` once calls have been quiet for `ms` on the injected clock: a burst of notifications
 * costs one sync. `cancel()` drops a waiting run.
 */
export class Debounce {
  private waiting: AbortController | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly namespace: string,
  ) {}

  get pending(): boolean {
    return this.waiting !== null;
  }

  schedule(ms: number, fn: () => Promise<unknown>): void {
    this.waiting?.abort();
    const controller = new AbortController();
    this.waiting = controller;
    this.clock.sleep(ms, controller.signal).then(
      () => {
        if (this.waiting !== controller) return;
        this.waiting = null;
        fn().catch((err: unknown) => this.log.error({ namespace: this.namespace, err: describeError(err) }, 'memory source sync failed'));
      },
      () => undefined,
    );
  }

  cancel(): void {
    this.waiting?.abort();
    this.waiting = null;
  }
}

/** A text cut at `max` characters, and the note saying so (null when it fits). */
export function cutText(text: string, max: number): { text: string; note: string | null } {
  if (text.length <= max) return { text, note: null };
  const note = `the text was ${text.length} characters; cut at ${max} (max_body_chars)`;
  return { text: `${text.slice(0, max)}\n\n[cut: ${note}]`, note };
}
