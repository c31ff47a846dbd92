/**
 * An iCalendar file or URL (a calendar's "secret address in iCal format", an exported `.ics`)
 * as one namespace of calendar documents (`source_kind` `calendar`), each event or occurrence
 * the document `ics#<uid>` / `ics#<uid>@<start>` (calendar.ts). A sync reads the whole calendar,
 * expands it within the window (`past_days` before now to `future_days` after) and writes what
 * changed: a changed event is modified, a cancelled or deleted one is removed, and occurrences
 * that left the window go too. A file or URL that cannot be read or parsed changes nothing.
 */
import { readFile } from 'node:fs/promises';
import type { MemorySourceFailure } from '../../protocol/memory.js';
import { SourceBase, type SourceBaseDeps } from './base.js';
import { calendarDocuments } from './calendar.js';
import { classifyFailure } from './failure.js';
import type { SyncResult } from './folder.js';
import { writeSnapshot } from './bookkeeping.js';
import { emptyResult, type MemorySource } from './source.js';

/** What an ics source is given (every kind is given the same). */
export type IcsSourceDeps = SourceBaseDeps;

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

export class IcsSource extends SourceBase implements MemorySource {
  readonly kind = 'ics' as const;
  readonly location: string;
  readonly watching = false;

  constructor(
    deps: SourceBaseDeps,
    private readonly opts: IcsSourceOptions,
  ) {
    super(deps, opts);
    this.location = opts.location;
  }

  /** A calendar has no live feed: the periodic sync follows it. */
  watch(): () => void {
    return () => undefined;
  }
  unwatch(): void {}

  /** Read and parse the calendar without storing anything: null when it works, else what failed. */
  async testConnection(): Promise<MemorySourceFailure | null> {
    try {
      const now = this.deps.clock.now();
      calendarDocuments(await this.read(), { from: now - this.opts.pastDays * DAY, to: now + this.opts.futureDays * DAY });
      return null;
    } catch (err) {
      return this.failureOf(err);
    }
  }

  private failureOf(err: unknown): MemorySourceFailure {
    const url = /^https?:\/\//i.test(this.location) ? new URL(this.location) : null;
    return url
      ? classifyFailure(err, { host: url.hostname, port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80) })
      : {
          kind: 'other',
          message: `cannot read the calendar ${this.location}: ${(err as Error).message}`,
          hint: 'Check the path (an .ics file) and that the daemon may read it.',
        };
  }

  private async read(): Promise<string> {
    if (!/^https?:\/\//i.test(this.location)) return readFile(this.location, 'utf8');
    const res = await fetch(this.location, { signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status} ${res.statusText}`), { status: res.status });
    return res.text();
  }

  protected async syncOnce(): Promise<SyncResult> {
    const { store, clock } = this.deps;
    const started = clock.now();
    const result = emptyResult(this.namespace);
    await store.registerNamespace(this.namespace, { label: this.label, kind: 'ics' });
    try {
      const now = clock.now();
      const docs = calendarDocuments(await this.read(), { from: now - this.opts.pastDays * DAY, to: now + this.opts.futureDays * DAY });
      result.files = docs.length;
      const puts = docs.map((d) => ({
        op: 'put' as const,
        doc: { external_id: `${KEY}#${d.key}`, title: d.title, body: d.body, metadata: d.metadata, source_kind: 'calendar' },
      }));
      await writeSnapshot(store, this.namespace, KEY, puts, { label: this.label, kind: 'ics' }, result);
      result.read = 1;
      result.parsed = 1;
    } catch (err) {
      this.failed(result, this.failureOf(err), 'ics sync failed; nothing changed');
    }
    return this.book.finish(result, started);
  }
}
