/**
 * An iCalendar object (RFC 5545, ical.js) as calendar documents: one per event — one per
 * occurrence for a recurring event, expanded within a window around now (RRULE, RDATE, EXDATE,
 * and moved or cancelled occurrences: RECURRENCE-ID overrides). A cancelled event
 * (STATUS:CANCELLED) is no document, so a cancellation reaches memory as a removal.
 *
 * Times keep their zone: a TZID that names an IANA zone is read with it (the offset of that
 * date, DST included), UTC stays UTC, a floating time or an all-day date is read as written.
 * The body says when (in the event's zone and in UTC), where, who, and the description.
 */
import ICAL from 'ical.js';
import { isTimeZone } from '../../core/time-zone.js';
import { ParseError } from './mime.js';

export interface CalendarDocument {
  /** `<uid>` for a single event, `<uid>@<occurrence start, UTC ISO>` for an occurrence. */
  key: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
}

export interface Window {
  from: number;
  to: number;
}

/** Occurrences read per recurring event at most (an endless daily rule over a long window). */
const MAX_OCCURRENCES = 1000;

export function calendarDocuments(ics: string, window: Window): CalendarDocument[] {
  let root: ICAL.Component;
  try {
    root = new ICAL.Component(ICAL.parse(ics));
  } catch (err) {
    throw new ParseError(`not an iCalendar object: ${(err as Error).message}`);
  }
  const vevents = root.name === 'vevent' ? [root] : root.getAllSubcomponents('vevent');
  const masters = new Map<string, ICAL.Event>();
  const exceptions: ICAL.Event[] = [];
  for (const c of vevents) {
    const event = new ICAL.Event(c);
    if (!event.uid) continue;
    if (event.isRecurrenceException()) exceptions.push(event);
    else masters.set(event.uid, event);
  }
  for (const ex of exceptions) masters.get(ex.uid)?.relateException(ex);
  const docs: CalendarDocument[] = [];
  for (const event of masters.values()) {
    if (!event.isRecurring()) {
      if (cancelled(event.component)) continue;
      const start = epochOf(event.startDate);
      const end = event.endDate ? epochOf(event.endDate) : start;
      if (end < window.from || start > window.to) continue;
      docs.push(document(event, event.uid, event.startDate, event.endDate, false));
      continue;
    }
    const it = event.iterator();
    for (let n = 0, next = it.next(); next && n < MAX_OCCURRENCES * 10; n++, next = it.next()) {
      const details = event.getOccurrenceDetails(inZoneOf(next, event.startDate));
      details.startDate = inZoneOf(details.startDate, event.startDate);
      details.endDate = inZoneOf(details.endDate, event.endDate ?? event.startDate);
      details.recurrenceId = inZoneOf(details.recurrenceId, event.startDate);
      const start = epochOf(details.startDate);
      if (start > window.to) break;
      if (epochOf(details.endDate) < window.from) continue;
      if (docs.length >= MAX_OCCURRENCES * masters.size) break;
      const item = details.item;
      if (cancelled(item.component)) continue;
      docs.push(document(item, `${event.uid}@${new Date(epochOf(details.recurrenceId)).toISOString()}`, details.startDate, details.endDate, true));
    }
  }
  return docs;
}

/** An expanded occurrence keeps the wall time but drops the TZID: put back the event's own. */
function inZoneOf(t: ICAL.Time, of: ICAL.Time): ICAL.Time {
  if (t.isDate || zoneOf(t) !== 'floating' || zoneOf(of) === 'floating') return t;
  const copy = t.clone() as ICAL.Time & { timezone?: string };
  const tzid = zoneOf(of);
  if (of.zone && of.zone.tzid !== 'floating') copy.zone = of.zone;
  copy.timezone = tzid;
  return copy;
}

function cancelled(c: ICAL.Component): boolean {
  return String(c.getFirstPropertyValue('status') ?? '').toUpperCase() === 'CANCELLED';
}

function document(event: ICAL.Event, key: string, startTime: ICAL.Time, endTime: ICAL.Time | null, recurring: boolean): CalendarDocument {
  const zone = zoneOf(startTime);
  const start = epochOf(startTime);
  const end = endTime ? epochOf(endTime) : null;
  const allDay = startTime.isDate;
  const attendees = event.attendees.map(person);
  const organizerProp = event.component.getFirstProperty('organizer');
  const organizer = organizerProp ? person(organizerProp) : null;
  const when = allDay
    ? `${startTime.toString()}${end !== null && endTime && endTime.toString() !== startTime.toString() ? ` to ${endTime.toString()} (exclusive)` : ''} (all day)`
    : `${wall(startTime)}${endTime ? ` – ${wall(endTime)}` : ''} ${zone} (${new Date(start).toISOString()}${end !== null ? ` – ${new Date(end).toISOString()}` : ''})`;
  const title = event.summary?.trim() || '(no title)';
  const lines = [
    `When: ${when}`,
    event.location?.trim() && `Where: ${event.location.trim()}`,
    organizer && `Organizer: ${organizer}`,
    attendees.length > 0 && `Attendees: ${attendees.join(', ')}`,
    recurring && 'Recurring: yes',
  ].filter(Boolean);
  const metadata: Record<string, unknown> = {
    uid: event.uid,
    start: new Date(start).toISOString(),
    ...(end !== null && { end: new Date(end).toISOString() }),
    time_zone: zone,
    all_day: allDay,
    // The conscious prompt shows a document's `date`.
    date: new Date(start).toISOString(),
    recurring,
  };
  if (event.location?.trim()) metadata.location = event.location.trim();
  if (attendees.length) metadata.attendees = attendees;
  if (organizer) metadata.organizer = organizer;
  return { key, title, body: [...lines, '', event.description?.trim() ?? ''].join('\n').trim(), metadata };
}

function person(p: ICAL.Property): string {
  const cn = p.getParameter('cn');
  const name = Array.isArray(cn) ? cn[0] : cn;
  const value = String(p.getFirstValue() ?? '').replace(/^mailto:/i, '');
  const status = p.getParameter('partstat');
  const tail = typeof status === 'string' && status !== 'NEEDS-ACTION' ? ` (${status.toLowerCase()})` : '';
  return `${name ? `${name} <${value}>` : value}${tail}`;
}

function wall(t: ICAL.Time): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${t.year}-${p(t.month)}-${p(t.day)} ${p(t.hour)}:${p(t.minute)}`;
}

/** The zone a time is written in: an IANA name, `UTC`, or `floating`. */
function zoneOf(t: ICAL.Time): string {
  if (t.isDate) return 'floating';
  // ical.js keeps an unregistered TZID as `timezone` (a zone it knows as `zone`).
  const tzid = (t as ICAL.Time & { timezone?: string }).timezone || t.zone?.tzid;
  if (!tzid || tzid === 'floating') return 'floating';
  if (tzid === 'UTC' || tzid === 'Z') return 'UTC';
  return tzid;
}

/** A time as epoch ms: in its IANA zone by Intl (DST included), UTC as UTC, floating as written (UTC). */
export function epochOf(t: ICAL.Time): number {
  const asUtc = Date.UTC(t.year, t.month - 1, t.day, t.isDate ? 0 : t.hour, t.isDate ? 0 : t.minute, t.isDate ? 0 : t.second);
  const zone = zoneOf(t);
  if (zone === 'UTC' || zone === 'floating') return asUtc;
  if (isTimeZone(zone)) {
    // Two passes settle the offset on either side of a DST change.
    let guess = asUtc - offsetMs(asUtc, zone);
    guess = asUtc - offsetMs(guess, zone);
    return guess;
  }
  // A custom TZID with its own VTIMEZONE: what ical.js makes of it.
  return t.toUnixTime() * 1000;
}

function offsetMs(epochMs: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(epochMs);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const local = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return local - Math.floor(epochMs / 1000) * 1000;
}
