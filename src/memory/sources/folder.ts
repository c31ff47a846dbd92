/**
 * A folder source keeps one namespace in step with a directory of `.md`, `.txt`, `.eml` and
 * `.mbox` files: new, changed, deleted and renamed files.
 *
 * `sync()` is cheap when nothing changed: it stats every file and compares size and mtime with
 * what it saw last time (`memory_source_files`), reads and hashes only the files that differ,
 * and parses only those whose bytes really changed. A new file with the bytes of a vanished one
 * is a rename: its documents keep their identity and get the new path. A file that cannot be
 * parsed is skipped with its reason (logged, and listed in the result); its earlier documents
 * stay, and the rest of the folder still syncs. A missing folder is an error for the whole sync
 * and deletes nothing (an unmounted disk is not "every file deleted").
 *
 * A file written in the last few seconds is recorded with no mtime, so the next sync hashes it
 * again: a second write within the file system's timestamp granularity is never missed.
 *
 * `watch()` syncs after `debounceMs` without file events (at most `10 × debounceMs` after the
 * first), one sync at a time: events during a sync cause one more sync after it, never a loop.
 */
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { describeError } from '../../core/errors.js';
import { sha256Hex } from '../hash.js';
import type { MemorySourceFailure } from '../../protocol/memory.js';
import type { WriteOp } from '../store.js';
import { isSupported, parseFile } from './files.js';
import { ParseError } from './mime.js';
import { count } from './bookkeeping.js';
import { SourceBase, type SourceBaseDeps } from './base.js';
import { emptyResult, type MemorySource } from './source.js';

export interface FolderSourceDeps extends SourceBaseDeps {
  /** The wall clock file times are compared with (default `Date.now`): file systems keep real time. */
  fsNow?: (() => number) | undefined;
}

export interface FolderSourceOptions {
  namespace: string;
  /** Absolute path of the folder. */
  root: string;
  label?: string | undefined;
  recursive?: boolean | undefined;
  maxFileBytes?: number | undefined;
  debounceMs?: number | undefined;
}

export interface SkippedFile {
  /** Relative path, with `#<n>` for a message inside an mbox. */
  path: string;
  reason: string;
}

export interface SyncResult {
  namespace: string;
  /** Supported files found. */
  files: number;
  /** Files read and hashed (their size or mtime differed). */
  read: number;
  /** Files parsed (their bytes differed). */
  parsed: number;
  /** Documents. */
  added: number;
  modified: number;
  removed: number;
  unchanged: number;
  /** Files recognised as renamed. */
  renamed: number;
  skipped: SkippedFile[];
  /** The whole sync failed (the folder is missing): nothing was changed. */
  error: string | null;
  /** For a source with a server: which step failed and what to do. */
  failure?: MemorySourceFailure | undefined;
  duration_ms: number;
}

/** Files modified this recently are hashed again at the next sync (timestamp granularity). */
const RACY_MS = 3_000;
const DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024;

interface SeenFile {
  size: number;
  mtimeMs: number;
}

interface KnownFile {
  size: number;
  mtime_ms: number;
  hash: string;
  error: string | null;
}

export class FolderSource extends SourceBase implements MemorySource {
  readonly kind = 'folder' as const;
  readonly root: string;
  private readonly recursive: boolean;
  private readonly maxFileBytes: number;
  private readonly debounceMs: number;
  private readonly fsNow: () => number;
  private watcher: FSWatcher | null = null;
  private debounce: AbortController | null = null;
  private firstEventAt: number | null = null;

  constructor(
    protected override readonly deps: FolderSourceDeps,
    opts: FolderSourceOptions,
  ) {
    super(deps, opts);
    this.root = opts.root;
    this.recursive = opts.recursive ?? true;
    this.maxFileBytes = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.debounceMs = opts.debounceMs ?? 2_000;
    this.fsNow = deps.fsNow ?? Date.now;
  }

  get location(): string {
    return this.root;
  }

  /** A debounced sync is waiting for file events to settle. */
  get pending(): boolean {
    return this.debounce !== null;
  }

  /** A watcher follows the folder. */
  get watching(): boolean {
    return this.watcher !== null;
  }

  /** Start watching the folder; returns the stop function. A folder that cannot be watched is logged (periodic syncs still run). */
  watch(): () => void {
    if (this.watcher) return () => this.unwatch();
    try {
      this.watcher = fsWatch(this.root, { recursive: this.recursive, persistent: false }, (_event, filename) => {
        const name = typeof filename === 'string' ? filename : '';
        if (name.split(/[\\/]/).some((part) => part.startsWith('.'))) return;
        this.schedule();
      });
      this.watcher.on('error', (err) => {
        this.deps.log.warn({ namespace: this.namespace, err: describeError(err) }, 'memory folder watch stopped; periodic syncs continue');
        this.unwatch();
      });
    } catch (err) {
      this.deps.log.warn({ namespace: this.namespace, root: this.root, err: describeError(err) }, 'cannot watch memory folder; periodic syncs continue');
      this.watcher = null;
    }
    return () => this.unwatch();
  }

  unwatch(): void {
    this.watcher?.close();
    this.watcher = null;
    this.debounce?.abort();
    this.debounce = null;
    this.firstEventAt = null;
  }

  /** A file event: sync once events have been quiet for `debounceMs` (capped at 10× after the first). */
  schedule(): void {
    const now = this.deps.clock.now();
    this.firstEventAt ??= now;
    this.debounce?.abort();
    const controller = new AbortController();
    this.debounce = controller;
    const wait = Math.max(0, Math.min(this.debounceMs, this.firstEventAt + 10 * this.debounceMs - now));
    this.deps.clock.sleep(wait, controller.signal).then(
      () => {
        if (this.debounce !== controller) return;
        this.debounce = null;
        this.firstEventAt = null;
        this.sync().catch((err) => this.deps.log.error({ namespace: this.namespace, err: describeError(err) }, 'memory folder sync failed'));
      },
      () => undefined,
    );
  }

  protected async syncOnce(): Promise<SyncResult> {
    const { store, clock, log } = this.deps;
    const started = clock.now();
    const result = emptyResult(this.namespace);
    await store.registerNamespace(this.namespace, { label: this.label, kind: 'folder' });
    let seen: Map<string, SeenFile>;
    try {
      seen = await this.scan();
    } catch (err) {
      result.error = `cannot read the folder ${this.root}: ${describeError(err)}`;
      log.warn({ namespace: this.namespace, err: result.error }, 'memory folder sync failed; nothing changed');
      return this.book.finish(result, started);
    }
    result.files = seen.size;
    const known = await this.knownFiles();
    const vanished = new Map([...known].filter(([p]) => !seen.has(p)));
    const vanishedByHash = new Map<string, string>();
    for (const [p, k] of vanished) if (k.hash && !k.error) vanishedByHash.set(k.hash, p);

    for (const [rel, file] of [...seen].sort(([a], [b]) => a.localeCompare(b))) {
      const before = known.get(rel);
      if (before && before.size === file.size && before.mtime_ms === Math.floor(file.mtimeMs)) continue;
      if (file.size > this.maxFileBytes) {
        this.skip(result, rel, `larger than ${Math.round(this.maxFileBytes / 1024 / 1024)} MB (max_file_mb)`);
        await this.remember(rel, file, '', result.skipped[result.skipped.length - 1]!.reason);
        continue;
      }
      let bytes: Buffer;
      try {
        bytes = await readFile(path.join(this.root, rel));
      } catch (err) {
        // Gone or unreadable since the scan: the next sync sees it as it is then.
        this.skip(result, rel, `cannot read: ${describeError(err)}`);
        continue;
      }
      result.read++;
      const hash = sha256Hex(bytes);
      if (before && before.hash === hash) {
        await this.remember(rel, file, hash, before.error);
        continue;
      }
      const renamedFrom = before ? undefined : vanishedByHash.get(hash);
      if (renamedFrom !== undefined) {
        vanishedByHash.delete(hash);
        vanished.delete(renamedFrom);
      }
      const error = await this.apply(rel, bytes, renamedFrom, result);
      await this.remember(rel, file, hash, error);
      if (renamedFrom !== undefined) {
        // The old file is gone either way; if the new name does not parse (another extension), its documents go too.
        if (error) await this.removeUnder(renamedFrom, result);
        else result.renamed++;
        await this.forget(renamedFrom);
      }
    }

    for (const rel of vanished.keys()) {
      await this.removeUnder(rel, result);
      await this.forget(rel);
    }
    return this.book.finish(result, started);
  }

  /** Parse one changed file and write its documents; returns the skip reason, or null. */
  private async apply(rel: string, bytes: Buffer, renamedFrom: string | undefined, result: SyncResult): Promise<string | null> {
    const { store } = this.deps;
    let parsed;
    try {
      parsed = parseFile(rel, bytes);
    } catch (err) {
      if (!(err instanceof ParseError)) throw err;
      this.skip(result, rel, err.message);
      return err.message;
    }
    result.parsed++;
    for (const s of parsed.skipped) this.skip(result, `${rel}${s.part}`, s.reason);
    const ops: WriteOp[] = [];
    const wanted = new Set(parsed.documents.map((d) => `${rel}${d.suffix}`));
    if (renamedFrom !== undefined) {
      // Keep each document's identity: move `old…` to `new…` before the puts (which record the new path).
      for (const d of await store.documentsUnder(this.namespace, renamedFrom)) {
        const to = `${rel}${d.external_id.slice(renamedFrom.length)}`;
        if (wanted.has(to)) ops.push({ op: 'move', from: d.external_id, to });
      }
    }
    for (const d of parsed.documents) {
      ops.push({ op: 'put', doc: { external_id: `${rel}${d.suffix}`, title: d.title, body: d.body, metadata: d.metadata, source_kind: d.source_kind } });
    }
    const moved = new Set(ops.flatMap((o) => (o.op === 'move' ? [o.from] : [])));
    const stale = [
      ...(await store.documentsUnder(this.namespace, rel)).filter((d) => !wanted.has(d.external_id)),
      ...(renamedFrom !== undefined ? (await store.documentsUnder(this.namespace, renamedFrom)).filter((d) => !moved.has(d.external_id)) : []),
    ];
    for (const d of stale) ops.push({ op: 'delete', external_id: d.external_id });
    count(result, await store.write(this.namespace, ops, { label: this.label, kind: 'folder' }));
    return null;
  }

  private async removeUnder(rel: string, result: SyncResult): Promise<void> {
    const { store } = this.deps;
    const docs = await store.documentsUnder(this.namespace, rel);
    if (docs.length)
      count(
        result,
        await store.write(
          this.namespace,
          docs.map((d) => ({ op: 'delete', external_id: d.external_id })),
        ),
      );
  }

  private skip(result: SyncResult, rel: string, reason: string): void {
    result.skipped.push({ path: rel, reason });
    this.deps.log.warn({ namespace: this.namespace, path: rel, reason }, 'memory source skipped a file');
  }

  /** Every supported, non-hidden regular file under the root: relative path → size and mtime. */
  private async scan(): Promise<Map<string, SeenFile>> {
    const out = new Map<string, SeenFile>();
    const info = await stat(this.root);
    if (!info.isDirectory()) throw new Error('not a folder');
    const walk = async (dir: string, prefix: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        if (entry.name.startsWith('.')) continue;
        const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
        if (entry.isDirectory()) {
          if (this.recursive) await walk(path.join(dir, entry.name), rel);
        } else if (entry.isFile() && isSupported(entry.name)) {
          try {
            const s = await stat(path.join(dir, entry.name));
            out.set(rel, { size: s.size, mtimeMs: s.mtimeMs });
          } catch {
            // removed between readdir and stat
          }
        }
      }
    };
    await walk(this.root, '');
    return out;
  }

  private async knownFiles(): Promise<Map<string, KnownFile>> {
    const rows = await this.deps.db
      .selectFrom('memory_source_files')
      .select(['path', 'size', 'mtime_ms', 'hash', 'error'])
      .where('namespace', '=', this.namespace)
      .execute();
    return new Map(rows.map((r) => [r.path, { size: Number(r.size), mtime_ms: Number(r.mtime_ms), hash: r.hash, error: r.error }]));
  }

  private async remember(rel: string, file: SeenFile, hash: string, error: string | null): Promise<void> {
    const mtime = Math.floor(file.mtimeMs);
    // Written moments ago: a second write in the same timestamp tick would look unchanged.
    const recorded = mtime >= this.fsNow() - RACY_MS ? -1 : mtime;
    await this.book.record(rel, { size: file.size, mtime_ms: recorded, hash, error });
  }

  private async forget(rel: string): Promise<void> {
    await this.book.forget([rel]);
  }
}
