/**
 * A CalDAV account's calendars (Radicale, Fastmail, iCloud, Nextcloud, Google's CalDAV) as one
 * namespace of calendar documents, read over CalDAV with tsdav (dav.ts) and parsed by the
 * ics source's reader (calendar.ts): title, time with zone, attendees, location, recurring events
 * expanded within the window (`past_days` ago to `future_days` ahead).
 *
 * `url` is a calendar, or a collection holding calendars (the account's calendar home): each
 * calendar found there is followed, or those named in `calendars`. An event is the document
 * `<calendar path>#<uid>` (an occurrence `…#<uid>@<start>`). A changed event is modified; a
 * cancelled (STATUS:CANCELLED) or deleted event, and occurrences that left the window, are
 * removals in the memory diff. A calendar object that does not parse is skipped with its reason
 * (counted, listed) and the rest still syncs; a failed connection, login or calendar changes
 * nothing and says what failed.
 *
 * Incremental: each sync starts with one PROPFIND (the calendars and their change tokens). A
 * calendar whose token (RFC 6578 `sync-token`, else `getctag`) is the one seen last costs
 * nothing more. A changed one is asked what changed since that token (REPORT sync-collection,
 * with the data; a multiget for what the server sent without): only the changed and removed
 * objects are read and written. The calendar is read whole (REPORT calendar-query over the
 * window) the first time, when the server has no sync token or refuses ours, when the window
 * settings change, and once a day, as the window moves with the date.
 *
 * State lives in `memory_source_files`: a row per calendar (path = its path, hash = the JSON
 * `{ token, day, window }` of the last good read) and a row per object (path = its href, hash =
 * its UID, error = why it was skipped), so a removed object's documents are known by its href.
 */
import type { MemorySourceFailure } from '../../protocol/memory.js';
import type { WriteOp } from '../store.js';
import { cutText, SourceBase, type SourceBaseDeps } from './base.js';
import { count, writeSnapshot } from './bookkeeping.js';
import { calendarDocuments, type Window } from './calendar.js';
import {
  calendarMultiget,
  calendarObjects,
  discoverCalendars,
  syncCollection,
  SyncTokenExpired,
  type DavAuth,
  type DavCalendar,
  type DavObject,
  type DavShape,
} from './dav.js';
import { classifyFailure } from './failure.js';
import type { SyncResult } from './folder.js';
import { ParseError } from './mime.js';
import { emptyResult, type MemorySource } from './source.js';

/** What a caldav source is given (every kind is given the same). */
export type CaldavSourceDeps = SourceBaseDeps;

export interface CaldavSourceOptions {
  namespace: string;
  label?: string | undefined;
  url: string;
  user: string;
  auth: 'basic' | 'bearer';
  /** Read at each sync (a rotated token file is picked up). */
  secret: () => string;
  /** Calendar names or paths to follow (empty: every calendar under `url`). */
  calendars: readonly string[];
  pastDays: number;
  futureDays: number;
  maxBodyChars: number;
}

const DAY = 86_400_000;

type Put = Extract<WriteOp, { op: 'put' }>;

/** A calendar's row: the token and the day of the last good read. */
interface CalendarState {
  /** `sync:<sync-token>` or `ctag:<ctag>`; null when the server gave neither. */
  token: string | null;
  day: number;
  window: string;
}

/** What one calendar's read found, written after every calendar has been read. */
type CalendarRead =
  | { cal: DavCalendar; mode: 'same' }
  | { cal: DavCalendar; mode: 'full'; objects: ParsedObject[] }
  | { cal: DavCalendar; mode: 'delta'; objects: ParsedObject[]; removed: string[] };

interface ParsedObject {
  href: string;
  uid: string;
  puts: Put[];
  skip: string | null;
}

export class CaldavSource extends SourceBase implements MemorySource {
  readonly kind = 'caldav' as const;
  readonly location: string;
  readonly watching = false;
  /** What `url` turned out to be: known after the first discovery, it saves the probe. */
  private shape: DavShape | undefined;

  constructor(
    deps: SourceBaseDeps,
    private readonly opts: CaldavSourceOptions,
  ) {
    super(deps, opts);
    const u = new URL(opts.url);
    this.location = `${u.protocol}//${encodeURIComponent(opts.user)}@${u.host}${u.pathname}`;
  }

  /** CalDAV has no push a client can rely on: the periodic sync follows it. */
  watch(): () => void {
    return () => undefined;
  }
  unwatch(): void {}

  /** Log in and find the calendars to follow: what failed, or null when all is well. */
  async testConnection(): Promise<MemorySourceFailure | null> {
    try {
      await this.calendars(this.auth());
      return null;
    } catch (err) {
      return this.failure(err);
    }
  }

  private auth(): DavAuth {
    return { user: this.opts.user, secret: this.opts.secret(), scheme: this.opts.auth };
  }

  private failure(err: unknown, calendar?: string): MemorySourceFailure {
    const u = new URL(this.opts.url);
    const port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
    return classifyFailure(err, { host: u.hostname, port, user: this.opts.user, folder: calendar ?? u.pathname, tls: u.protocol === 'https:' });
  }

  /** The calendars followed; a named one that is not there is a `folder` failure. */
  private async calendars(auth: DavAuth): Promise<DavCalendar[]> {
    const { calendars: found, shape } = await discoverCalendars(this.opts.url, auth, this.shape);
    this.shape = shape;
    if (this.opts.calendars.length === 0) {
      if (found.length === 0) throw Object.assign(new Error(`no calendar at ${new URL(this.opts.url).pathname}`), { status: 404 });
      return found;
    }
    return this.opts.calendars.map((want) => {
      const c = found.find((f) => f.name === want || f.path === want || f.path.replace(/\/$/, '').endsWith(`/${want}`));
      if (!c) {
        throw Object.assign(new Error(`no such calendar "${want}" (found: ${found.map((f) => f.name).join(', ') || 'none'})`), { status: 404, calendar: want });
      }
      return c;
    });
  }

  protected async syncOnce(): Promise<SyncResult> {
    const { store, clock } = this.deps;
    const started = clock.now();
    const result = emptyResult(this.namespace);
    await store.registerNamespace(this.namespace, { label: this.label, kind: 'caldav' });
    let calendar: string | undefined;
    try {
      const auth = this.auth();
      const calendars = await this.calendars(auth);
      const now = clock.now();
      const window = { from: now - this.opts.pastDays * DAY, to: now + this.opts.futureDays * DAY };
      const want: CalendarState = { token: null, day: Math.floor(now / DAY), window: `${this.opts.pastDays},${this.opts.futureDays}` };
      // Read every calendar before writing any: a failure halfway removes nothing.
      const reads: CalendarRead[] = [];
      for (const [i, cal] of calendars.entries()) {
        calendar = cal.name;
        this.progressed({ part: cal.name, done: i, total: calendars.length });
        reads.push(await this.readCalendar(cal, auth, window, { ...want, token: tokenOf(cal) }, result));
      }
      calendar = undefined;
      for (const read of reads) await this.write(read, { ...want, token: tokenOf(read.cal) }, result);
    } catch (err) {
      this.failed(result, this.failure(err, (err as { calendar?: string }).calendar ?? calendar), 'caldav sync failed; nothing changed');
    } finally {
      this.progressed(null);
    }
    return this.book.finish(result, started);
  }

  /** One calendar: nothing when its token is the one seen, what changed since it, or the window whole. */
  private async readCalendar(cal: DavCalendar, auth: DavAuth, window: Window, now: CalendarState, result: SyncResult): Promise<CalendarRead> {
    const was = await this.state(cal.path);
    const sameWindow = was !== null && was.day === now.day && was.window === now.window;
    if (sameWindow && now.token !== null && was.token === now.token) return { cal, mode: 'same' };
    if (sameWindow && was.token?.startsWith('sync:') && now.token?.startsWith('sync:')) {
      try {
        const changes = await syncCollection(cal, auth, was.token.slice('sync:'.length));
        const missing = changes.changed.filter((c) => c.data === null).map((c) => c.href);
        const fetched = new Map((await calendarMultiget(cal, auth, missing)).map((o) => [o.href, o]));
        const objects: DavObject[] = [];
        const removed = [...changes.removed];
        for (const c of changes.changed) {
          const o = c.data !== null ? { href: c.href, etag: c.etag, data: c.data } : fetched.get(c.href);
          if (o) objects.push(o);
          else removed.push(c.href);
        }
        // The token the answer gave is the one to keep (it may be newer than the PROPFIND's).
        cal.syncToken = changes.syncToken;
        return { cal, mode: 'delta', objects: this.parse(cal, objects, window, result), removed };
      } catch (err) {
        if (!(err instanceof SyncTokenExpired)) throw err;
        this.deps.log.info({ namespace: this.namespace, calendar: cal.path, reason: err.message }, 'caldav sync token refused: the calendar is read whole');
      }
    }
    const objects = await calendarObjects(cal, auth, window.from, window.to);
    return { cal, mode: 'full', objects: this.parse(cal, objects, window, result) };
  }

  private parse(cal: DavCalendar, objects: readonly DavObject[], window: Window, result: SyncResult): ParsedObject[] {
    result.files += objects.length;
    return objects.map((o) => {
      result.read++;
      try {
        const docs = calendarDocuments(o.data, window);
        result.parsed++;
        return { href: o.href, uid: uidOf(o.data) ?? '', puts: docs.map((d) => this.put(cal, d)), skip: null };
      } catch (err) {
        // One bad object (ical.js may throw more than ParseError on odd input) never stops the sync.
        const reason = err instanceof ParseError ? err.message : `cannot read the event: ${(err as Error).message}`;
        result.skipped.push({ path: o.href, reason });
        this.deps.log.warn({ namespace: this.namespace, href: o.href, reason }, 'caldav event skipped');
        return { href: o.href, uid: uidOf(o.data) ?? '', puts: [], skip: reason };
      }
    });
  }

  private async write(read: CalendarRead, state: CalendarState, result: SyncResult): Promise<void> {
    const { cal } = read;
    const info = { label: this.label, kind: 'caldav' };
    if (read.mode === 'same') return;
    const rows = await this.objectRows(cal.path);
    if (read.mode === 'full') {
      // A skipped object keeps the documents it had: they are not in the snapshot's removals.
      const keep = read.objects.filter((o) => o.skip !== null).flatMap((o) => [o.uid, rows.get(o.href)].filter((u): u is string => !!u));
      const kept = keep.length
        ? (await this.deps.store.documentsUnder(this.namespace, cal.path)).filter((d) => keep.some((u) => isOfUid(d.external_id, cal.path, u)))
        : [];
      await writeSnapshot(
        this.deps.store,
        this.namespace,
        cal.path,
        read.objects.flatMap((o) => o.puts),
        info,
        result,
        new Set(kept.map((d) => d.external_id)),
      );
      const seen = new Set(read.objects.map((o) => o.href));
      await this.book.forget([...rows.keys()].filter((h) => !seen.has(h)));
    } else {
      const uids = new Set<string>();
      for (const o of read.objects) for (const u of [o.uid, rows.get(o.href)]) if (u) uids.add(u);
      for (const h of read.removed) if (rows.get(h)) uids.add(rows.get(h)!);
      const skippedUids = new Set(read.objects.filter((o) => o.skip !== null).map((o) => o.uid));
      const puts = read.objects.flatMap((o) => o.puts);
      const wanted = new Set(puts.map((p) => p.doc.external_id));
      const ops: WriteOp[] = [...puts];
      if (uids.size)
        for (const d of await this.deps.store.documentsUnder(this.namespace, cal.path))
          if (!wanted.has(d.external_id) && [...uids].some((u) => !skippedUids.has(u) && isOfUid(d.external_id, cal.path, u)))
            ops.push({ op: 'delete', external_id: d.external_id });
      for (let i = 0; i < ops.length; i += 500) count(result, await this.deps.store.write(this.namespace, ops.slice(i, i + 500), info));
      await this.book.forget(read.removed);
    }
    for (const o of read.objects) await this.book.record(o.href, { size: 0, mtime_ms: 0, hash: o.uid, error: o.skip });
    // The token last: a sync that failed before this point reads the same changes again.
    await this.book.record(cal.path, { size: 0, mtime_ms: 0, hash: JSON.stringify(state), error: null });
  }

  private async state(path: string): Promise<CalendarState | null> {
    const row = await this.deps.db
      .selectFrom('memory_source_files')
      .select('hash')
      .where('namespace', '=', this.namespace)
      .where('path', '=', path)
      .executeTakeFirst();
    if (!row) return null;
    try {
      return JSON.parse(row.hash) as CalendarState;
    } catch {
      return null;
    }
  }

  /** The calendar's object rows: href → UID. */
  private async objectRows(calPath: string): Promise<Map<string, string>> {
    const rows = await this.deps.db.selectFrom('memory_source_files').select(['path', 'hash']).where('namespace', '=', this.namespace).execute();
    return new Map(rows.filter((r) => r.path.startsWith(calPath) && r.path !== calPath).map((r) => [r.path, r.hash]));
  }

  private put(cal: DavCalendar, d: ReturnType<typeof calendarDocuments>[number]): Put {
    const { text: body, note } = cutText(d.body, this.opts.maxBodyChars);
    const metadata: Record<string, unknown> = { ...d.metadata, calendar: cal.name };
    if (note) metadata.cut = note;
    return { op: 'put', doc: { external_id: `${cal.path}#${d.key}`, title: d.title, body, metadata, source_kind: 'calendar' } };
  }
}

function tokenOf(cal: DavCalendar): string | null {
  return cal.syncToken ? `sync:${cal.syncToken}` : cal.ctag ? `ctag:${cal.ctag}` : null;
}

/** The object's UID, read without a parser (a skipped object still has one). */
function uidOf(ics: string): string | null {
  return /^UID(?:;[^:\r\n]*)?:(.+)$/m.exec(ics.replace(/\r?\n[ \t]/g, ''))?.[1]?.trim() ?? null;
}

/** The document is the event `uid` of the calendar, or one of its occurrences. */
function isOfUid(externalId: string, calPath: string, uid: string): boolean {
  const key = `${calPath}#${uid}`;
  return externalId === key || externalId.startsWith(`${key}@`);
}
