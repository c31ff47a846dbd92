/**
 * The sources of a workspace (folders, IMAP accounts, calendars, MCP servers), run together and
 * managed like accounts: a first sync, a live follower per source (a folder watcher, IMAP IDLE,
 * MCP notifications; debounced), and a full sync every `sync_interval_minutes` on the injected
 * clock as a safety net for changes a follower misses. Syncs of one source never overlap. A
 * failed sync (a server down, a wrong password) is tried again with backoff — 30 s, doubling,
 * at most the interval — and `status()` says when; the other sources are not held up by it.
 *
 * Sources come from `subconscious.toml` (`origin: config`) or are added at run time (`add()`,
 * `origin: added`: kept in `<workspace>/.subconscious/memory-sources.json`, which holds only
 * where secrets are, never a secret). Each can be paused (no syncs, no follower; its documents
 * stay), resynced (its sync state forgotten and everything read again: what is gone on the
 * server becomes a removal) and, when added, removed (its documents deleted — removals in the
 * memory diff — or kept as a plain namespace).
 *
 *   const sources = new MemorySources({ store, db, clock, log, emit, workspace, sources: config.sources });
 *   await sources.start();            // the daemon: registers namespaces, first sync, watchers, periodic syncs
 *   await sources.ready(signal);      // a world's observe: the first sync has finished (a one-shot
 *                                     // `tick`, which never calls start(), runs it here)
 *   sources.syncNow();                // "Sync now": in the background
 *   await sources.stop();
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { untilAborted } from '../../core/abort.js';
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { MemorySourceFailure, MemorySourceStatus } from '../../protocol/memory.js';
import { memorySourceSchema, type MemorySourceConfig } from '../config.js';
import type { MemoryEmit, MemoryStore } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { SyncBookkeeping } from './bookkeeping.js';
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
  /** Where added sources and pauses are kept (default `<workspace>/.subconscious/memory-sources.json`; null: not kept). */
  stateFile?: string | null | undefined;
}

/** Skipped files listed per source in `status()` (the count stays exact). */
const SKIPPED_LISTED = 20;
/** The first retry after a failed sync; it doubles up to the source's interval. */
export const RETRY_MIN_MS = 30_000;

interface Entry {
  config: MemorySourceConfig;
  source: MemorySource;
  origin: 'config' | 'added';
  paused: boolean;
  /** When the loop's next sync is due (null: none planned, e.g. stopped or paused). */
  next: number | null;
  /** Failed syncs in a row. */
  failures: number;
  /** Aborted to cut the loop's wait short (a failure outside the loop: retry with backoff, not at the interval). */
  rewait: AbortController | null;
  /** Stops this source's loop (pause, remove, stop). */
  halt: AbortController;
  loop: Promise<void> | null;
  unwatch: (() => void) | null;
}

interface StateFile {
  added: unknown[];
  paused: string[];
}

export class MemorySources {
  private readonly entries: Entry[] = [];
  private readonly stopController = new AbortController();
  private first: Promise<void> | null = null;
  private readonly background = new Set<Promise<unknown>>();
  private started = false;
  private readonly stateFile: string | null;

  constructor(private readonly deps: MemorySourcesDeps) {
    this.stateFile = deps.stateFile === undefined ? path.join(deps.workspace, '.subconscious', 'memory-sources.json') : deps.stateFile;
    const state = this.readState();
    for (const config of deps.sources) this.entries.push(this.entry(config, 'config', state.paused.includes(config.namespace)));
    for (const raw of state.added) {
      const parsed = memorySourceSchema.safeParse(raw);
      const ns = (raw as { namespace?: unknown } | null)?.namespace;
      if (!parsed.success) {
        deps.log.warn(
          { namespace: ns, issue: parsed.error.issues[0] },
          'an added memory source no longer validates; left out (remove it from memory-sources.json)',
        );
        continue;
      }
      if (this.get(parsed.data.namespace)) {
        deps.log.warn({ namespace: parsed.data.namespace }, 'an added memory source has the namespace of one in subconscious.toml; the TOML one is used');
        continue;
      }
      this.entries.push(this.entry(parsed.data, 'added', state.paused.includes(parsed.data.namespace)));
    }
  }

  /** The sources, in order (config first, then added). */
  get folders(): MemorySource[] {
    return this.entries.map((e) => e.source);
  }

  get(namespace: string): MemorySource | undefined {
    return this.find(namespace)?.source;
  }

  /** Register every namespace, then the first sync, watchers and periodic syncs, in the background. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const e of this.entries) await this.deps.store.registerNamespace(e.source.namespace, { label: e.source.label, kind: e.source.kind });
    void this.ready();
    for (const e of this.entries) if (!e.paused) this.follow(e);
  }

  /**
   * Resolves once every source finished its first sync of this process (started now if nothing
   * started it). Never rejects for a sync: a failed one is logged and recorded on its namespace.
   * With a signal, stops waiting (rejects) when it aborts; the sync itself goes on.
   */
  ready(signal?: AbortSignal): Promise<void> {
    if (this.entries.length === 0) return Promise.resolve();
    this.first ??= this.track(this.syncEach().then(() => undefined));
    return untilAborted(this.first, signal);
  }

  /** Sync every unpaused source now (one at a time: they share the store's write lock anyway). Rejects on a store error. */
  async syncAll(): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    for (const e of [...this.entries]) if (!e.paused) results.push(await this.runSync(e));
    return results;
  }

  /** "Sync now": one source or all, in the background; returns the namespaces started (a paused one is not). */
  syncNow(namespace?: string): string[] {
    const targets = namespace === undefined ? this.entries.filter((e) => !e.paused) : [this.require(namespace)];
    const paused = targets.find((e) => e.paused);
    if (paused)
      throw new SubconsciousError('conflict', `The memory source "${paused.source.namespace}" is paused.`, {
        hint: `Resume it first: memory.sources_pause {namespace: "${paused.source.namespace}", paused: false}.`,
      });
    for (const e of targets) this.background_(e);
    return targets.map((e) => e.source.namespace);
  }

  /** Connect and open what a source follows, without syncing: null when all is well, else what failed. */
  async test(config: MemorySourceConfig): Promise<MemorySourceFailure | null> {
    const source = createSource(this.deps, config);
    if (!source.testConnection) return this.testLocal(source);
    try {
      return await source.testConnection();
    } finally {
      source.unwatch();
    }
  }

  /** Test a configured source by namespace. */
  async testNamespace(namespace: string): Promise<MemorySourceFailure | null> {
    const e = this.require(namespace);
    return e.source.testConnection ? e.source.testConnection() : this.testLocal(e.source);
  }

  /**
   * Add a source at run time: validated, its connection tested (a failure refuses it with what
   * failed, unless `force`), kept in the state file, then synced and followed.
   */
  async add(config: MemorySourceConfig, opts: { force?: boolean | undefined } = {}): Promise<{ failure: MemorySourceFailure | null }> {
    if (this.get(config.namespace))
      throw new SubconsciousError('conflict', `The namespace "${config.namespace}" already has a memory source.`, {
        hint: 'Choose another namespace, or remove that source first.',
      });
    const failure = await this.test(config);
    if (failure && !opts.force)
      throw new SubconsciousError(
        'source_unreachable',
        `The ${config.kind} source "${config.namespace}" failed its test connection (${failure.kind}): ${failure.message}`,
        {
          hint: `${failure.hint} Add it anyway with force: true; it then retries with backoff.`,
          details: { failure },
        },
      );
    const e = this.entry(config, 'added', false);
    this.entries.push(e);
    this.writeState();
    await this.deps.store.registerNamespace(config.namespace, { label: e.source.label, kind: e.source.kind });
    if (this.started) {
      this.background_(e);
      this.follow(e);
    }
    return { failure };
  }

  /** Pause (no syncs, no follower; documents stay) or resume (a sync now, then as before). Kept across restarts. */
  async pause(namespace: string, paused: boolean): Promise<void> {
    const e = this.require(namespace);
    if (e.paused === paused) return;
    e.paused = paused;
    this.writeState();
    if (paused) await this.halt(e);
    else if (this.started) {
      e.failures = 0;
      this.background_(e);
      this.follow(e);
    }
  }

  /** Forget what the source has synced and read it all again (in the background): what is gone becomes a removal. */
  async resync(namespace: string): Promise<void> {
    const e = this.require(namespace);
    if (e.paused) throw new SubconsciousError('conflict', `The memory source "${namespace}" is paused.`, { hint: 'Resume it first, then resync.' });
    await e.source.idle();
    await new SyncBookkeeping(this.deps, namespace).forgetAll();
    this.background_(e);
  }

  /**
   * Remove an added source. Its documents are deleted (removals in the memory diff), or with
   * `keep_documents` kept as a plain namespace that RPC may write. A source from subconscious.toml
   * is refused: its entry there would bring it back at the next start.
   */
  async remove(namespace: string, opts: { keepDocuments?: boolean | undefined } = {}): Promise<{ removed_documents: number; kept_documents: number }> {
    const e = this.require(namespace);
    if (e.origin === 'config')
      throw new SubconsciousError('forbidden', `The memory source "${namespace}" is configured in subconscious.toml.`, {
        hint: `Delete its [[worlds.memory.sources]] entry (namespace = "${namespace}") and restart; or pause it with memory.sources_pause.`,
      });
    await this.halt(e);
    this.entries.splice(this.entries.indexOf(e), 1);
    this.writeState();
    await new SyncBookkeeping(this.deps, namespace).forgetAll();
    const docs = (await this.deps.store.listDocuments({ namespace, limit: 1 })).total;
    if (opts.keepDocuments) {
      await this.deps.store.registerNamespace(namespace, { label: e.source.label, kind: 'rpc' });
      return { removed_documents: 0, kept_documents: docs };
    }
    let removed = 0;
    for (;;) {
      const page = await this.deps.store.listDocuments({ namespace, limit: 500 });
      if (page.documents.length === 0) break;
      const s = await this.deps.store.write(
        namespace,
        page.documents.map((d) => ({ op: 'delete' as const, external_id: d.external_id })),
      );
      removed += s.removed;
    }
    return { removed_documents: removed, kept_documents: 0 };
  }

  /** Every source as the page shows it. */
  async status(): Promise<MemorySourceStatus[]> {
    return Promise.all(
      this.entries.map(async (e) => {
        const { source, config } = e;
        const last = source.last;
        const [skipped, skippedTotal] = await Promise.all([source.skippedFiles(SKIPPED_LISTED), source.skippedCount()]);
        return {
          namespace: source.namespace,
          label: source.label,
          kind: source.kind,
          path: source.location,
          watching: source.watching,
          syncing: source.syncing,
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
          since_start: source.totals,
          skipped,
          skipped_total: skippedTotal,
          progress: source.progress,
          next_sync_at: e.paused ? null : e.next,
          failures: e.failures,
          paused: e.paused,
          origin: e.origin,
          documents: (await this.deps.store.listDocuments({ namespace: source.namespace, limit: 1 })).total,
        };
      }),
    );
  }

  /** Stop watchers and periodic syncs, and wait for syncs already running. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await Promise.all(this.entries.map((e) => this.halt(e)));
    await Promise.all([...this.background]);
  }

  private entry(config: MemorySourceConfig, origin: Entry['origin'], paused: boolean): Entry {
    return {
      config,
      source: createSource(this.deps, config),
      origin,
      paused,
      next: null,
      failures: 0,
      rewait: null,
      halt: new AbortController(),
      loop: null,
      unwatch: null,
    };
  }

  private find(namespace: string): Entry | undefined {
    return this.entries.find((e) => e.source.namespace === namespace);
  }

  private require(namespace: string): Entry {
    const e = this.find(namespace);
    if (e) return e;
    throw new SubconsciousError('not_found', `No memory source has the namespace "${namespace}".`, {
      hint: this.entries.length
        ? `Sources: ${this.entries.map((x) => x.source.namespace).join(', ')}.`
        : 'Add one with memory.sources_add, or under [[worlds.memory.sources]] in subconscious.toml.',
    });
  }

  /** The follower and the periodic loop of one source. */
  private follow(e: Entry): void {
    e.halt = new AbortController();
    if (watches(e.config)) e.unwatch = e.source.watch();
    e.loop = this.loop(e, e.config.sync_interval_minutes * 60_000);
  }

  private async halt(e: Entry): Promise<void> {
    e.halt.abort();
    e.unwatch?.();
    e.unwatch = null;
    e.source.unwatch();
    await e.loop;
    e.loop = null;
    e.next = null;
    await e.source.idle();
  }

  /** A source without a server (a folder, an ics file): its sync is the test. */
  private testLocal(source: MemorySource): Promise<MemorySourceFailure | null> {
    if (source.kind === 'folder') {
      try {
        if (!statSync(source.location).isDirectory()) throw new Error('not a folder');
      } catch (err) {
        return Promise.resolve({
          kind: 'folder',
          message: `cannot read the folder ${source.location}: ${describeError(err)}`,
          hint: 'Check the path and that the daemon may read it.',
        });
      }
    }
    return Promise.resolve(null);
  }

  private background_(e: Entry): void {
    this.track(
      this.runSync(e).catch((err: unknown) => this.deps.log.error({ namespace: e.source.namespace, err: describeError(err) }, 'memory source sync failed')),
    );
  }

  /** Each source's sync, one after another; a failing one is logged and the others still run. */
  private async syncEach(): Promise<void> {
    for (const e of [...this.entries]) {
      if (this.stopController.signal.aborted) return;
      if (e.paused) continue;
      try {
        await this.runSync(e);
      } catch (err) {
        this.deps.log.error({ namespace: e.source.namespace, err: describeError(err) }, 'memory source sync failed');
      }
    }
  }

  /** One source's sync, counting failures in a row for the backoff (a throw counts too). */
  private async runSync(e: Entry): Promise<SyncResult> {
    try {
      const result = await e.source.sync();
      if (result.error) this.failed(e);
      else e.failures = 0;
      return result;
    } catch (err) {
      this.failed(e);
      throw err;
    }
  }

  private failed(e: Entry): void {
    e.failures++;
    e.rewait?.abort();
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.background.add(work);
    void work.finally(() => this.background.delete(work)).catch(() => undefined);
    return work;
  }

  private async loop(e: Entry, intervalMs: number): Promise<void> {
    const signal = AbortSignal.any([this.stopController.signal, e.halt.signal]);
    // The first sync is `ready()`'s; this loop is the periodic safety net after it, and the retries.
    while (!signal.aborted) {
      const wait = e.failures ? Math.min(intervalMs, RETRY_MIN_MS * 2 ** (e.failures - 1)) : intervalMs;
      e.next = this.deps.clock.now() + wait;
      const rewait = new AbortController();
      e.rewait = rewait;
      try {
        await this.deps.clock.sleep(wait, AbortSignal.any([signal, rewait.signal]));
      } catch {
        if (signal.aborted) {
          e.next = null;
          return;
        }
        continue; // a sync failed meanwhile: wait the backoff from now instead
      }
      try {
        await this.runSync(e);
      } catch (err) {
        this.deps.log.error({ namespace: e.source.namespace, err: describeError(err) }, 'memory source sync failed');
      }
    }
  }

  private readState(): StateFile {
    if (!this.stateFile) return { added: [], paused: [] };
    try {
      const raw = JSON.parse(readFileSync(this.stateFile, 'utf8')) as Partial<StateFile>;
      return { added: Array.isArray(raw.added) ? raw.added : [], paused: Array.isArray(raw.paused) ? raw.paused.filter((p) => typeof p === 'string') : [] };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.deps.log.warn({ file: this.stateFile, err: describeError(err) }, 'cannot read the added memory sources; none are loaded');
      return { added: [], paused: [] };
    }
  }

  /** Written whole to a temp file and renamed (0600 in the private folder): never half a file. */
  private writeState(): void {
    if (!this.stateFile) return;
    const state: StateFile = {
      added: this.entries.filter((e) => e.origin === 'added').map((e) => e.config),
      paused: this.entries.filter((e) => e.paused).map((e) => e.source.namespace),
    };
    mkdirSync(path.dirname(this.stateFile), { recursive: true, mode: 0o700 });
    const tmp = `${this.stateFile}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.stateFile);
  }
}
