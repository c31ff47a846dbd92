/**
 * The configured sources of a workspace, run together: an initial sync at start, a watcher per
 * folder (debounced), and a full sync every `sync_interval_minutes` on the injected clock as a
 * safety net for changes a watcher misses. Syncs of one source never overlap.
 *
 *   const sources = new MemorySources({ store, db, clock, log, emit, workspace, sources: config.sources });
 *   await sources.start();            // registers namespaces, first sync in the background
 *   await sources.syncAll();          // e.g. before a one-shot `tick`
 *   await sources.stop();
 */
import type { Kysely } from 'kysely';
import { describeError } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { resolveSourcePath, type MemorySourceConfig } from '../config.js';
import type { MemoryEmit, MemoryStore } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { FolderSource, type SyncResult } from './folder.js';

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

export class MemorySources {
  readonly folders: FolderSource[];
  private readonly stopController = new AbortController();
  private readonly unwatch: (() => void)[] = [];
  private loops: Promise<void>[] = [];

  constructor(private readonly deps: MemorySourcesDeps) {
    this.folders = deps.sources.map(
      (s) =>
        new FolderSource(
          { store: deps.store, db: deps.db, clock: deps.clock, log: deps.log, emit: deps.emit, fsNow: deps.fsNow },
          {
            namespace: s.namespace,
            root: resolveSourcePath(deps.workspace, s.path),
            label: s.label,
            recursive: s.recursive,
            maxFileBytes: s.max_file_mb * 1024 * 1024,
            debounceMs: s.debounce_ms,
          },
        ),
    );
  }

  get(namespace: string): FolderSource | undefined {
    return this.folders.find((f) => f.namespace === namespace);
  }

  /** Register every namespace, then sync, watch and re-sync periodically in the background. */
  async start(): Promise<void> {
    for (const folder of this.folders) await this.deps.store.registerNamespace(folder.namespace, { label: folder.label, kind: 'folder' });
    this.deps.sources.forEach((config, i) => {
      const folder = this.folders[i]!;
      if (config.watch) this.unwatch.push(folder.watch());
      this.loops.push(this.loop(folder, config.sync_interval_minutes * 60_000));
    });
  }

  /** Sync every source now (one at a time: they share the store's write lock anyway). */
  async syncAll(): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    for (const folder of this.folders) results.push(await folder.sync());
    return results;
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    for (const stop of this.unwatch.splice(0)) stop();
    await Promise.all(this.loops);
    this.loops = [];
  }

  private async loop(folder: FolderSource, intervalMs: number): Promise<void> {
    const signal = this.stopController.signal;
    for (let first = true; !signal.aborted; first = false) {
      if (!first) {
        try {
          await this.deps.clock.sleep(intervalMs, signal);
        } catch {
          return;
        }
      }
      try {
        await folder.sync();
      } catch (err) {
        this.deps.log.error({ namespace: folder.namespace, err: describeError(err) }, 'memory source sync failed');
      }
    }
  }
}
