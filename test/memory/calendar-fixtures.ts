/**
 * iCalendar text for the calendar source tests (ics, caldav): a VCALENDAR around events, the
 * weekly "Team standup" in Europe/Berlin (an EXDATE, an attendee, a location; with `moved`, the
 * 19 January occurrence moved by a RECURRENCE-ID override), and a one-off event on 10 January.
 */
export const vcalendar = (...events: string[]): string =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//subconscious//test//EN', ...events, 'END:VCALENDAR', ''].join('\r\n');

export function standup(extra: string[] = [], opts: { moved?: boolean } = {}): string {
  return [
    'BEGIN:VEVENT',
    'UID:standup',
    'DTSTAMP:20260101T000000Z',
    'DTSTART;TZID=Europe/Berlin:20260105T093000',
    'DTEND;TZID=Europe/Berlin:20260105T094500',
    'RRULE:FREQ=WEEKLY;BYDAY=MO',
    'EXDATE;TZID=Europe/Berlin:20260112T093000',
    'SUMMARY:Team standup',
    'LOCATION:Room 4',
    'ATTENDEE;CN=Ben;PARTSTAT=ACCEPTED:mailto:ben@example.com',
    ...extra,
    'END:VEVENT',
    ...(opts.moved
      ? [
          'BEGIN:VEVENT',
          'UID:standup',
          'DTSTAMP:20260101T000000Z',
          'RECURRENCE-ID;TZID=Europe/Berlin:20260119T093000',
          'DTSTART;TZID=Europe/Berlin:20260119T110000',
          'DTEND;TZID=Europe/Berlin:20260119T111500',
          'SUMMARY:Team standup (moved)',
          'END:VEVENT',
        ]
      : []),
  ].join('\r\n');
}

/** A one-off event on 10 January 2026, 08:00–09:00 UTC. */
export function single(uid: string, summary: string, status = 'CONFIRMED'): string {
  return [
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20260101T000000Z',
    'DTSTART:20260110T080000Z',
    'DTEND:20260110T090000Z',
    `STATUS:${status}`,
    `SUMMARY:${summary}`,
    'END:VEVENT',
  ].join('\r\n');
}
