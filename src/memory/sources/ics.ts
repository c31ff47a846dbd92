/**
 * An iCalendar file or URL (a calendar's "secret address in iCal format", an exported `.ics`)
 * as one namespace of calendar documents (`source_kind` `calendar`), each event or occurrence
 * the document `ics#<uid>` / `ics#<uid>@<start>` (calendar.ts). A sync reads the whole calendar,
 * expands it within the window (`past_days` before now to `future_days` after) and writes what
 * changed: a changed event is modified, a cancelled or deleted one is removed, and occurrences
 * that left the window go too. A file or URL that cannot be read or parsed changes nothing.
 */
import { readFile } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { MemoryEmit, MemoryStore, WriteOp } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { calendarDocuments } from './calendar.js';
import { classifyFailure } from './failure.js';
import type { SkippedFile, SyncResult } from './folder.js';
import { emptyResult, SyncGate, type MemorySource } from './source.js';

export interface IcsSourceDeps {
  store: MemoryStore;
  db: Kysely<MemoryTables>;
  clock: Clock;
  log: Logger;
  emit?: MemoryEmit | undefined;
}

export interface IcsSourceOptions {
  namespace: string;
  label?: string | undefined;
  /** An absolute file path, or an http(s) URL. */
  location: string;
  pastDays: number;
  futureDays: number;
}

const KEY = 'ics';
const DAY = 86_400_000;

export class IcsSource implements MemorySource {
  readonly kind = 'ics' as const;
  readonly namespace: string;
  readonly label: string;
  readonly location: string;
  readonly progress = null;
  readonly watching = false;
  private readonly gate = new SyncGate(() => this.syncOnce());
  private lastResult: SyncResult | null = null;
  private readonly sinceStart = { syncs: 0, added: 0, modified: 0, removed: 0 };

  constructor(
    private readonly deps: IcsSourceDeps,
    private readonly opts: IcsSourceOptions,
  ) {
    this.namespace = opts.namespace;
    this.label = opts.label ?? opts.namespace;
    this.location = opts.location;
  }

  get last(): SyncResult | null {
    return this.lastResult;
  }
  get totals(): { syncs: number; added: number; modified: number; removed: number } {
    return { ...this.sinceStart };
  }
  get syncing(): boolean {
    return this.gate.busy;
  }
  sync(): Promise<SyncResult> {
    return this.gate.run();
  }
  idle(): Promise<void> {
    return this.gate.idle();
  }
  /** A calendar has no live feed: the periodic sync follows it. */
  watch(): () => void {
    return () => undefined;
  }
  unwatch(): void {}
  skippedFiles(): Promise<SkippedFile[]> {
    return Promise.resolve(this.lastResult?.skipped ?? []);
  }
  skippedCount(): Promise<number> {
    return Promise.resolve(this.lastResult?.skipped.length ?? 0);
  }

  private async read(): Promise<string> {
    if (!/^https?:\/\//i.test(this.location)) return readFile(this.location, 'utf8');
    const res = await fetch(this.location, { signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status} ${res.statusText}`), { status: res.status });
    return res.text();
  }

  private async syncOnce(): Promise<SyncResult> {
    const { store, clock } = this.deps;
    const started = clock.now();
    const result = emptyResult(this.namespace);
    await store.registerNamespace(this.namespace, { label: this.label, kind: 'ics' });
    try {
      const now = clock.now();
      const docs = calendarDocuments(await this.read(), { from: now - this.opts.pastDays * DAY, to: now + this.opts.futureDays * DAY });
      result.files = docs.length;
      const ops: WriteOp[] = docs.map((d) => ({
        op: 'put',
        doc: { external_id: `${KEY}#${d.key}`, title: d.title, body: d.body, metadata: d.metadata, source_kind: 'calendar' },
      }));
      const wanted = new Set(ops.map((o) => (o.op === 'put' ? o.doc.external_id : '')));
      for (const d of await store.documentsUnder(this.namespace, KEY)) if (!wanted.has(d.external_id)) ops.push({ op: 'delete', external_id: d.external_id });
      const s = await store.write(this.namespace, ops, { label: this.label, kind: 'ics' });
      Object.assign(result, { added: s.added, modified: s.modified, removed: s.removed, unchanged: s.unchanged, read: 1, parsed: 1 });
    } catch (err) {
      const url = /^https?:\/\//i.test(this.location) ? new URL(this.location) : null;
      const failure = url
        ? classifyFailure(err, { host: url.hostname, port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80) })
        : {
            kind: 'other' as const,
            message: `cannot read the calendar ${this.location}: ${(err as Error).message}`,
            hint: 'Check the path (an .ics file) and that the daemon may read it.',
          };
      result.error = failure.message;
      result.failure = failure;
      this.deps.log.warn({ namespace: this.namespace, failure }, 'ics sync failed; nothing changed');
    }
    result.duration_ms = clock.now() - started;
    await store.recordSync(this.namespace, result.error);
    this.lastResult = result;
    this.sinceStart.syncs++;
    this.sinceStart.added += result.added;
    this.sinceStart.modified += result.modified;
    this.sinceStart.removed += result.removed;
    this.deps.emit?.('memory.synced', {
      namespace: this.namespace,
      added: result.added,
      modified: result.modified,
      removed: result.removed,
      renamed: 0,
      skipped: 0,
      error: result.error,
    });
    return result;
  }
}
