/**
 * The CalDAV calls a calendar source needs (RFC 4918, RFC 4791, RFC 6578), made with tsdav: find
 * the calendars under a URL with their change tokens (`propfind`: `sync-token`, and
 * CalendarServer's `getctag`), read a calendar's events overlapping a window (`calendarQuery`
 * with a time-range), what changed since a sync token (`syncCollection`) and named objects (a
 * calendar-multiget through `davRequest`). tsdav writes the request XML and parses the multistatus
 * answers; this file maps them onto the few shapes the source works with.
 *
 * tsdav's higher-level helpers are not used, because each costs requests the source does not
 * make (the tests and bench/caldav.bench.ts count them): `DAVClient.login`/`fetchCalendars`
 * discover the principal and the calendar home and then ask each calendar for its
 * supported-report-set (an unchanged calendar would cost 2+ requests, not 1); `fetchCalendarObjects`
 * asks for etags and then multigets (2 REPORTs for a whole read, not 1); `smartCollectionSync`
 * always multigets what changed, though Radicale sends the data in the sync-collection answer,
 * and it throws a plain message for a refused token where the source needs to tell "read it whole"
 * from a failure. Also `url` may be a calendar itself, which tsdav's discovery does not follow.
 *
 * Every request goes through `davFetch`: the auth header, a timeout, and an HTTP error (other than
 * 207) thrown with its `status`, a socket error with its `code` (ECONNREFUSED, a TLS code), so
 * `classifyFailure` can say which step failed. It calls `globalThis.fetch` at request time (tsdav
 * binds the global fetch when it is imported), so a fetch installed later is the one used.
 */
import { calendarQuery, davRequest, propfind, syncCollection as davSyncCollection, type DAVResponse } from 'tsdav';

export interface DavAuth {
  user: string;
  secret: string;
  /** `basic` (user and password) or `bearer` (the secret is an OAuth2 access token). */
  scheme: 'basic' | 'bearer';
}

export interface DavCalendar {
  /** The collection's URL. */
  url: string;
  /** Its path on the server (`/ada/work/`): the key of its documents. */
  path: string;
  name: string;
  /** RFC 6578 sync token (null: the server offers none). */
  syncToken: string | null;
  /** CalendarServer's collection tag: changes whenever the calendar does (null: none). */
  ctag: string | null;
}

/** What a URL holds: a calendar itself, or a collection of calendars (an account's home). */
export type DavShape = 'calendar' | 'home';

/** What changed in a calendar since a sync token. */
export interface DavChanges {
  /** The calendar's token now: the next call's starting point. */
  syncToken: string;
  /** Changed or new objects (`data` null when the server did not send it: fetch with `calendarMultiget`). */
  changed: { href: string; etag: string | null; data: string | null }[];
  /** Objects removed since the token. */
  removed: string[];
}

/** A sync token the server no longer knows (RFC 6578 `valid-sync-token`): read the calendar whole. */
export class SyncTokenExpired extends Error {}

export interface DavObject {
  href: string;
  etag: string | null;
  data: string;
}

const TIMEOUT_MS = 30_000;

/** The fetch tsdav is given: auth, timeout, and failures that say what failed. */
function davFetch(auth: DavAuth): typeof fetch {
  // Basic is encoded here, as UTF-8 (RFC 7617): tsdav's getBasicAuthHeaders refuses non-Latin-1 passwords.
  const authorization = auth.scheme === 'bearer' ? `Bearer ${auth.secret}` : `Basic ${Buffer.from(`${auth.user}:${auth.secret}`).toString('base64')}`;
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', authorization);
    const method = init?.method ?? 'GET';
    let res: Response;
    try {
      res = await globalThis.fetch(input, { ...init, headers, redirect: 'follow', signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (err) {
      // undici says "fetch failed" and keeps the socket's error (its code) as the cause.
      const cause = (err as { cause?: unknown }).cause;
      throw cause instanceof Error ? cause : err;
    }
    if (res.status !== 207 && !res.ok) {
      await res.body?.cancel();
      const url = input instanceof Request ? input.url : String(input);
      throw Object.assign(new Error(`${method} ${new URL(url).pathname}: HTTP ${res.status} ${res.statusText}`), { status: res.status });
    }
    return res;
  };
}

const CALENDAR_PROPS = { 'd:resourcetype': {}, 'd:displayname': {}, 'd:sync-token': {}, 'cs:getctag': {} };
const OBJECT_PROPS = { 'd:getetag': {}, 'c:calendar-data': {} };

/**
 * The calendars at `url` and what the URL is. With the shape known from an earlier call it costs
 * one request (depth 0 on a calendar, depth 1 on a home); without, a depth-0 probe comes first.
 */
export async function discoverCalendars(url: string, auth: DavAuth, shape?: DavShape): Promise<{ calendars: DavCalendar[]; shape: DavShape }> {
  const fetch = davFetch(auth);
  if (shape !== 'home') {
    const self = (await propfind({ url, props: CALENDAR_PROPS, depth: '0', fetch })).find(isCalendar);
    if (self) return { calendars: [calendarOf(url, self)], shape: 'calendar' };
  }
  const children = await propfind({ url, props: CALENDAR_PROPS, depth: '1', fetch });
  return { calendars: children.filter(isCalendar).map((r) => calendarOf(url, r)), shape: 'home' };
}

/**
 * What changed in `calendar` since `token` (RFC 6578 sync-collection, asking for the data too:
 * a server that sends it spares the multiget). A token the server refuses is `SyncTokenExpired`.
 */
export async function syncCollection(calendar: DavCalendar, auth: DavAuth, token: string): Promise<DavChanges> {
  let answer: DAVResponse[];
  try {
    answer = await davSyncCollection({
      url: calendar.url,
      props: OBJECT_PROPS,
      syncLevel: 1,
      syncToken: token,
      headers: { depth: '0' },
      fetch: davFetch(auth),
    });
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 403 || status === 409 || status === 412)
      throw new SyncTokenExpired(`the server refused the sync token of ${calendar.path} (HTTP ${status})`);
    throw err;
  }
  // An answer with no response still carries the multistatus (tsdav gives it as one entry's raw).
  const next = text((answer[0]?.raw as { multistatus?: { syncToken?: unknown } } | undefined)?.multistatus?.syncToken);
  if (!next) throw new Error(`REPORT sync-collection ${calendar.path}: the answer has no sync-token`);
  const changes: DavChanges = { syncToken: next, changed: [], removed: [] };
  const self = pathOf(calendar.url, calendar.url);
  for (const r of answer) {
    if (r.href === undefined) continue;
    const href = pathOf(r.href, calendar.url);
    if (href === self) continue;
    // A removed member is a response with status 404 and no properties (RFC 6578 §3.5.2).
    if (r.status === 404) changes.removed.push(href);
    else changes.changed.push({ href, etag: text(r.props?.getetag), data: calendarData(r) });
  }
  return changes;
}

/**
 * The named objects of `calendar` (REPORT calendar-multiget); one that is gone is left out.
 * Through `davRequest`, not tsdav's `calendarMultiGet`: that one throws when any href answers
 * 404, where the source wants the others.
 */
export async function calendarMultiget(calendar: DavCalendar, auth: DavAuth, hrefs: readonly string[]): Promise<DavObject[]> {
  if (hrefs.length === 0) return [];
  const answer = await davRequest({
    url: calendar.url,
    init: {
      method: 'REPORT',
      namespace: 'c',
      headers: { depth: '1' },
      body: {
        'calendar-multiget': {
          _attributes: { 'xmlns:d': 'DAV:', 'xmlns:c': 'urn:ietf:params:xml:ns:caldav' },
          'd:prop': OBJECT_PROPS,
          'd:href': hrefs.map((h) => encodeURI(h)),
        },
      },
    },
    fetch: davFetch(auth),
  });
  return objectsOf(answer, calendar.url);
}

/** Every calendar object with an event overlapping [from, to] (recurring ones whole: we expand them). */
export async function calendarObjects(calendar: DavCalendar, auth: DavAuth, from: number, to: number): Promise<DavObject[]> {
  const answer = await calendarQuery({
    url: calendar.url,
    props: OBJECT_PROPS,
    filters: {
      'comp-filter': {
        _attributes: { name: 'VCALENDAR' },
        'comp-filter': { _attributes: { name: 'VEVENT' }, 'time-range': { _attributes: { start: davTime(from), end: davTime(to) } } },
      },
    },
    depth: '1',
    fetch: davFetch(auth),
  });
  return objectsOf(answer, calendar.url);
}

function objectsOf(answer: readonly DAVResponse[], base: string): DavObject[] {
  return answer.flatMap((r) => {
    const data = r.ok && r.href !== undefined ? calendarData(r) : null;
    return data === null ? [] : [{ href: pathOf(r.href!, base), etag: text(r.props?.getetag), data }];
  });
}

/** The object's iCalendar text (tsdav gives CDATA as `_cdata`); null when the server sent none. */
function calendarData(r: DAVResponse): string | null {
  const d = (r.props as { calendarData?: unknown } | undefined)?.calendarData;
  return text(typeof d === 'object' && d !== null ? (d as { _cdata?: unknown })._cdata : d) || null;
}

/**
 * A property's text, or null. tsdav turns a text that looks like a number or a boolean into one
 * (a display name "2026", a numeric ctag): it is made text again.
 */
function text(v: unknown): string | null {
  if (typeof v === 'object' && v !== null && '_cdata' in v) return text((v as { _cdata: unknown })._cdata);
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;
}

function pathOf(href: string, base: string): string {
  return decodeURIComponent(new URL(href, base).pathname);
}

function davTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function isCalendar(r: DAVResponse): boolean {
  const type = (r.props as { resourcetype?: unknown } | undefined)?.resourcetype;
  return r.ok && typeof type === 'object' && type !== null && 'calendar' in type;
}

function calendarOf(base: string, r: DAVResponse): DavCalendar {
  const url = new URL(r.href ?? new URL(base).pathname, base).toString();
  const path = decodeURIComponent(new URL(url).pathname);
  const props = r.props as { displayname?: unknown; syncToken?: unknown; getctag?: unknown } | undefined;
  const name = text(props?.displayname) || path.split('/').filter(Boolean).pop() || path;
  return { url, path, name, syncToken: text(props?.syncToken) || null, ctag: text(props?.getctag) || null };
}
