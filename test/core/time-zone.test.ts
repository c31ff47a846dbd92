/** Calendar days in a time zone: DST days of 23 and 25 hours, odd offsets, skipped midnights. */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { isTimeZone, startOfZonedDay, zonedDate } from '../../src/core/index.js';

const iso = (ms: number) => new Date(ms).toISOString();

it('finds the start of the day and of the days after it', () => {
  expect(iso(startOfZonedDay(Date.parse('2026-03-15T10:30:00Z'), 'UTC'))).toBe('2026-03-15T00:00:00.000Z');
  expect(iso(startOfZonedDay(Date.parse('2026-03-15T05:00:00Z'), 'America/Los_Angeles'))).toBe('2026-03-14T07:00:00.000Z');
  expect(iso(startOfZonedDay(Date.parse('2026-03-15T05:00:00Z'), 'Asia/Kathmandu'))).toBe('2026-03-14T18:15:00.000Z'); // +05:45
  expect(iso(startOfZonedDay(Date.parse('2026-03-15T05:00:00Z'), 'Pacific/Chatham'))).toBe('2026-03-14T10:15:00.000Z'); // +13:45
});

it('a DST day lasts 23 or 25 hours', () => {
  const spring = Date.parse('2026-03-29T12:00:00Z');
  expect(startOfZonedDay(spring, 'Europe/Paris', 1) - startOfZonedDay(spring, 'Europe/Paris')).toBe(23 * 3_600_000);
  const autumn = Date.parse('2026-10-25T12:00:00Z');
  expect(startOfZonedDay(autumn, 'Europe/Paris', 1) - startOfZonedDay(autumn, 'Europe/Paris')).toBe(25 * 3_600_000);
});

it('a day whose midnight is skipped starts at the first instant that exists', () => {
  // Santiago moves from -04 to -03 at 24:00 on 5 September 2026: the 6th begins at 01:00 local.
  const start = startOfZonedDay(Date.parse('2026-09-06T12:00:00Z'), 'America/Santiago');
  expect(iso(start)).toBe('2026-09-06T04:00:00.000Z');
  expect(zonedDate(start, 'America/Santiago')).toBe('2026-09-06');
  expect(zonedDate(start - 1, 'America/Santiago')).toBe('2026-09-05');
});

it('every instant lies in [start of its day, start of the next) in any zone', () => {
  const zones = ['UTC', 'Europe/Paris', 'America/New_York', 'America/Santiago', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham', 'America/St_Johns'];
  fc.assert(
    fc.property(fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) }), fc.constantFrom(...zones), (t, zone) => {
      const start = startOfZonedDay(t, zone);
      const next = startOfZonedDay(t, zone, 1);
      expect(start).toBeLessThanOrEqual(t);
      expect(next).toBeGreaterThan(t);
      expect(zonedDate(start, zone)).toBe(zonedDate(t, zone));
      expect(zonedDate(start - 1, zone)).not.toBe(zonedDate(t, zone));
      expect(zonedDate(next, zone)).not.toBe(zonedDate(t, zone));
    }),
    { numRuns: 300 },
  );
});

it('knows an IANA zone from a made-up one', () => {
  expect(isTimeZone('Europe/Paris')).toBe(true);
  expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
  expect(isTimeZone('')).toBe(false);
});
