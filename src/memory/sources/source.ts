/**
 * What every memory source kind (folder, imap, ics, caldav, mcp) offers the sources manager:
 * one namespace kept in step with somewhere a person's data lives, a `sync()` that never
 * overlaps itself, an optional live follower (`watch()`: fs.watch, IMAP IDLE, MCP
 * notifications) and what the page shows (last sync, totals, skipped items, progress).
 */
import type { MemorySourceFailure } from '../../protocol/memory.js';
import type { SkippedFile, SyncResult } from './folder.js';

export type SourceKind = 'folder' | 'imap' | 'ics' | 'caldav' | 'mcp';

export interface SyncProgress {
  /** What is being read (an IMAP folder, a calendar). */
  part: string;
  done: number;
  total: number;
}

export interface MemorySource {
  readonly namespace: string;
  readonly label: string;
  readonly kind: SourceKind;
  /** Where its data lives, as the page shows it (a folder, `imap://user@host:993`, a URL). */
  readonly location: string;
  readonly syncing: boolean;
  readonly watching: boolean;
  readonly last: SyncResult | null;
  readonly totals: { syncs: number; added: number; modified: number; removed: number };
  /** The running sync's progress (null when none runs or it cannot tell). */
  readonly progress: SyncProgress | null;
  sync(): Promise<SyncResult>;
  /** Start following changes live; returns the stop function. */
  watch(): () => void;
  unwatch(): void;
  idle(): Promise<void>;
  skippedFiles(limit?: number): Promise<SkippedFile[]>;
  skippedCount(): Promise<number>;
  /** Sources with a server: connect, log in, open what it follows; what failed, or null. */
  testConnection?(): Promise<MemorySourceFailure | null>;
}

/** A failed sync's cause, for status: what failed and what to do. */
export type { MemorySourceFailure };

/**
 * One sync at a time: a call during a running sync shares one more sync after it (and gets its
 * result), so a burst of triggers costs at most two syncs.
 */
export class SyncGate<T> {
  private running: Promise<T> | null = null;
  private queued: Promise<T> | null = null;

  constructor(private readonly once: () => Promise<T>) {}

  get busy(): boolean {
    return this.running !== null;
  }

  run(): Promise<T> {
    if (this.running) {
      this.queued ??= this.running.then(
        () => this.startQueued(),
        () => this.startQueued(),
      );
      return this.queued;
    }
    this.running = this.once().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Resolves when no sync is running or queued (one started meanwhile is waited for too). */
  async idle(): Promise<void> {
    for (let p = this.queued ?? this.running; p; p = this.queued ?? this.running) await p.catch(() => undefined);
  }

  private startQueued(): Promise<T> {
    this.queued = null;
    return this.run();
  }
}

/** An empty result to fill in. */
export function emptyResult(namespace: string): SyncResult {
  return { namespace, files: 0, read: 0, parsed: 0, added: 0, modified: 0, removed: 0, unchanged: 0, renamed: 0, skipped: [], error: null, duration_ms: 0 };
}
