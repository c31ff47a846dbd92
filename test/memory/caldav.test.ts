/**
 * The caldav source on a real Radicale (started here as a child process, htpasswd users, a
 * calendar made with MKCALENDAR, events PUT and DELETEd over HTTP): a recurring event expanded
 * within the window in its own zone, attendees and location; a change is modified, a
 * cancellation and a deletion are removals in the memory diff; the conscious prompt shows the
 * events as calendar. Incremental: the requests a sync makes are counted (fetch spied on, the
 * calls still reach Radicale): an unchanged calendar costs one PROPFIND and reads no event; a
 * changed one one sync-collection REPORT carrying only what changed; a refused token, a new day
 * and a resync read the window whole. Test connection says which step failed: authentication,
 * calendar, host.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/core/index.js';
import { CaldavSource, caldavSourceSchema } from '../../src/memory/index.js';
import { calendarMultiget, discoverCalendars, syncCollection, SyncTokenExpired } from '../../src/memory/sources/dav.js';
import { memoryPrompt } from '../../src/worlds/conscious/prompt.js';
import { freePort } from '../support/dovecot.js';
import { radicaleAvailable, startRadicale, type Radicale } from '../support/radicale.js';
import { testDialects } from '../support/stores.js';
import { single, standup, vcalendar } from './calendar-fixtures.js';
import { openMemory, type MemoryFixture } from './support.js';

const dialects = await testDialects();
const haveRadicale = radicaleAvailable();

const cal = vcalendar;

describe.runIf(haveRadicale).each(dialects)('caldav source on Radicale (%s)', (dialect) => {
  let dav: Radicale;
  let calendarUrl: string;
  let f: MemoryFixture;
  const docs = async () => (await f.memory.listDocuments({ namespace: 'cal', limit: 100 })).documents.map((d) => `${d.external_id}=${d.title}`).sort();
  const source = (opts: { password?: string; url?: string; calendars?: string[] } = {}) =>
    new CaldavSource(
      { store: f.memory, db: f.db, clock: f.clock, log: silentLogger, emit: f.emit },
      {
        namespace: 'cal',
        label: 'Work calendar',
        url: opts.url ?? `${dav.url}/ada/`,
        user: 'ada',
        auth: 'basic',
        secret: () => opts.password ?? 'secret',
        calendars: opts.calendars ?? [],
        pastDays: 30,
        futureDays: 30,
        maxBodyChars: 1000,
      },
    );

  beforeAll(async () => {
    dav = await startRadicale({ users: { ada: 'secret' } });
    calendarUrl = await dav.mkcalendar('ada', 'work');
  }, 30_000);
  afterAll(async () => dav?.dispose());
  beforeEach(async () => {
    f = await openMemory(dialect);
    for (const file of ['standup.ics', 'dentist.ics', 'review.ics', 'broken.ics', 'lunch.ics'])
      await dav.remove('ada', calendarUrl, file).catch(() => undefined);
  });
  afterEach(async () => f.dispose());

  it('events with zone, attendees and location, recurring ones expanded; changes, cancellations and deletions reach memory', async () => {
    await dav.put('ada', calendarUrl, 'standup.ics', cal(standup()));
    await dav.put('ada', calendarUrl, 'dentist.ics', cal(single('dentist', 'Dentist')));
    await dav.put('ada', calendarUrl, 'review.ics', cal(single('review', 'Quarterly review')));
    const s = source();
    // The fake clock starts 2026-01-01 09:00 UTC: the window is 2025-12-02 … 2026-01-31.
    expect(await s.sync()).toMatchObject({ added: 5, error: null, files: 3 });
    expect(await docs()).toEqual([
      '/ada/work/#dentist=Dentist',
      '/ada/work/#review=Quarterly review',
      '/ada/work/#standup@2026-01-05T08:30:00.000Z=Team standup',
      '/ada/work/#standup@2026-01-19T08:30:00.000Z=Team standup',
      '/ada/work/#standup@2026-01-26T08:30:00.000Z=Team standup',
    ]);
    const first = await f.memory.getDocument('cal', '/ada/work/#standup@2026-01-05T08:30:00.000Z');
    expect(first).toMatchObject({ source_kind: 'calendar' });
    expect(first!.body).toContain('When: 2026-01-05 09:30 – 2026-01-05 09:45 Europe/Berlin (2026-01-05T08:30:00.000Z – 2026-01-05T08:45:00.000Z)');
    expect(first!.body).toContain('Where: Room 4');
    expect(first!.body).toContain('Attendees: Ben <ben@example.com> (accepted)');
    expect(first!.metadata).toMatchObject({ time_zone: 'Europe/Berlin', location: 'Room 4', recurring: true, calendar: 'work' });
    expect(await s.sync()).toMatchObject({ added: 0, modified: 0, removed: 0 });

    const checkpoint = await f.memory.createCheckpoint('test');
    await dav.put('ada', calendarUrl, 'dentist.ics', cal(single('dentist', 'Dentist', 'CANCELLED')));
    await dav.remove('ada', calendarUrl, 'review.ics');
    await dav.put('ada', calendarUrl, 'standup.ics', cal(standup(['DESCRIPTION:Bring the numbers'])));
    expect(await s.sync()).toMatchObject({ removed: 2, modified: 3, added: 0, error: null });
    const diff = await f.memory.diffSinceCheckpoint(checkpoint.id);
    const ns = diff.namespaces.find((n) => n.namespace === 'cal')!;
    expect(ns.totals).toMatchObject({ removed: 2, modified: 3 });
    expect(
      ns.entries
        .filter((e) => e.change === 'removed')
        .map((e) => e.title)
        .sort(),
    ).toEqual(['Dentist', 'Quarterly review']);

    // What the conscious loop reads: the event labelled as calendar.
    const info = (await f.memory.namespaces()).find((n) => n.namespace === 'cal')!;
    const prompt = memoryPrompt([{ namespace: info, documents: await f.memory.recent({ namespace: 'cal', limit: 10 }) }], f.clock.now(), {
      budgetTokens: 12_000,
      maxChars: 4000,
      minChars: 400,
    });
    expect(prompt).toContain('kind: caldav');
    expect(prompt).toMatch(/Title: Team standup\\nDate: 2026-01-\d\dT08:30:00.000Z\\nUpdated: [^\\]+\\nKind: calendar/);
  });

  it('incremental: an unchanged calendar costs one request; a change, a cancellation and a removal cost one REPORT of what changed', async () => {
    await dav.put('ada', calendarUrl, 'standup.ics', cal(standup()));
    await dav.put('ada', calendarUrl, 'dentist.ics', cal(single('dentist', 'Dentist')));
    await dav.put('ada', calendarUrl, 'review.ics', cal(single('review', 'Quarterly review')));
    const s = source();
    const spy = vi.spyOn(globalThis, 'fetch');
    const requests = async (run: () => Promise<unknown>) => {
      spy.mockClear();
      await run();
      return spy.mock.calls.map(([, init]) => {
        const body = String(init?.body ?? '');
        return `${init?.method} ${/<(?:\w+:)?(propfind|calendar-query|sync-collection|calendar-multiget)\b/.exec(body)?.[1] ?? ''}`.trim();
      });
    };
    try {
      // First sync: the home's calendars (a depth-0 probe, then depth 1), the window whole.
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind', 'PROPFIND propfind', 'REPORT calendar-query']);
      expect(s.last).toMatchObject({ added: 5, files: 3, skipped: [] });

      // Unchanged: one PROPFIND (the shape is known now), no event read.
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind']);
      expect(s.last).toMatchObject({ files: 0, read: 0, added: 0, modified: 0, removed: 0 });

      const checkpoint = await f.memory.createCheckpoint('test');
      await dav.put('ada', calendarUrl, 'dentist.ics', cal(single('dentist', 'Dentist', 'CANCELLED')));
      await dav.remove('ada', calendarUrl, 'review.ics');
      await dav.put('ada', calendarUrl, 'standup.ics', cal(standup(['DESCRIPTION:Bring the numbers'])));
      // Changed: the PROPFIND and one sync-collection REPORT carrying the two changed objects (the removal is an href).
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind', 'REPORT sync-collection']);
      expect(s.last).toMatchObject({ files: 2, read: 2, removed: 2, modified: 3, added: 0, error: null });
      const ns = (await f.memory.diffSinceCheckpoint(checkpoint.id)).namespaces.find((n) => n.namespace === 'cal')!;
      expect(ns.entries.filter((e) => e.change === 'removed').map((e) => e.title)).toEqual(expect.arrayContaining(['Dentist', 'Quarterly review']));
      expect((await f.memory.getDocument('cal', '/ada/work/#standup@2026-01-19T08:30:00.000Z'))!.body).toContain('Bring the numbers');
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind']);

      // Two new events: only those two are read.
      await dav.put('ada', calendarUrl, 'lunch.ics', cal(single('lunch', 'Lunch with Ben')));
      await dav.put('ada', calendarUrl, 'broken.ics', cal(single('fixed', 'Fixed event')));
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind', 'REPORT sync-collection']);
      expect(s.last).toMatchObject({ files: 2, read: 2, added: 2, removed: 0, modified: 0 });
      const now = await docs();

      // A new day: the window moved, so the calendar is read whole once (nothing else changed).
      await f.clock.advance(86_400_000);
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind', 'REPORT calendar-query']);
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind']);

      // A token the server no longer knows (its state forgotten on the server): read whole, nothing lost.
      const { rmSync } = await import('node:fs');
      rmSync(`${dav.dir}/collections/collection-root/ada/work/.Radicale.cache/sync-token`, { recursive: true, force: true });
      await dav.put('ada', calendarUrl, 'lunch.ics', cal(single('lunch', 'Lunch with Ben and Anna')));
      expect(await requests(() => s.sync())).toEqual(['PROPFIND propfind', 'REPORT sync-collection', 'REPORT calendar-query']);
      expect(s.last).toMatchObject({ modified: 1, removed: 0, error: null });
      expect(await docs()).toEqual(now.map((d) => (d.startsWith('/ada/work/#lunch=') ? '/ada/work/#lunch=Lunch with Ben and Anna' : d)));
    } finally {
      spy.mockRestore();
    }
  });

  it('the tsdav calls on their own: a multiget leaves a gone object out, a removal is an href, a bogus token is SyncTokenExpired', async () => {
    await dav.put('ada', calendarUrl, 'lunch.ics', cal(single('lunch', 'Lunch & <notes>')));
    await dav.put('ada', calendarUrl, 'review.ics', cal(single('review', 'Quarterly review')));
    const auth = { user: 'ada', secret: 'secret', scheme: 'basic' as const };
    const [work] = (await discoverCalendars(`${dav.url}/ada/`, auth)).calendars;
    expect(work).toMatchObject({ path: '/ada/work/', name: 'work', syncToken: expect.stringMatching(/\S/) });
    // What a sync-collection answer without data leads to (Radicale sends the data, so the source never multigets here).
    const got = await calendarMultiget(work!, auth, ['/ada/work/lunch.ics', '/ada/work/gone.ics']);
    expect(got.map((o) => o.href)).toEqual(['/ada/work/lunch.ics']);
    expect(got[0]!.data).toContain('SUMMARY:Lunch & <notes>');
    await dav.remove('ada', calendarUrl, 'review.ics');
    const changes = await syncCollection(work!, auth, work!.syncToken!);
    expect(changes).toMatchObject({ changed: [], removed: ['/ada/work/review.ics'] });
    expect(changes.syncToken).not.toBe(work!.syncToken);
    await expect(syncCollection(work!, auth, 'http://radicale.org/ns/sync/unknown')).rejects.toBeInstanceOf(SyncTokenExpired);
  });

  it('test connection and sync say which step failed: authentication, calendar, host; nothing is removed', async () => {
    await dav.put('ada', calendarUrl, 'dentist.ics', cal(single('dentist', 'Dentist')));
    expect(await source().testConnection()).toBeNull();
    expect(await source().sync()).toMatchObject({ added: 1 });

    expect(await source({ password: 'wrong' }).testConnection()).toMatchObject({ kind: 'auth', message: expect.stringContaining('refused the login of ada') });
    const denied = await source({ password: 'wrong' }).sync();
    expect(denied.failure).toMatchObject({ kind: 'auth' });
    expect(await source({ calendars: ['holidays'] }).testConnection()).toMatchObject({
      kind: 'folder',
      message: expect.stringContaining('no such calendar "holidays" (found: work)'),
    });
    const down = `http://127.0.0.1:${await freePort()}/ada/`;
    expect(await source({ url: down }).testConnection()).toMatchObject({ kind: 'host', message: expect.stringContaining('cannot reach 127.0.0.1') });
    expect((await source({ url: down }).sync()).failure).toMatchObject({ kind: 'host' });
    expect(await docs()).toEqual(['/ada/work/#dentist=Dentist']);
  });
});

describe('caldav source config', () => {
  it('takes the secret from an env var or a file, never from the TOML', () => {
    const base = { kind: 'caldav', namespace: 'cal', url: 'https://caldav.fastmail.com/dav/calendars/user/ada@fastmail.com/', user: 'ada@fastmail.com' };
    expect(caldavSourceSchema.parse({ ...base, password_env: 'FASTMAIL_APP_PASSWORD' })).toMatchObject({ auth: 'basic', calendars: [], future_days: 180 });
    expect(caldavSourceSchema.safeParse({ ...base, password: 'hunter2' }).error?.issues[0]?.message).toContain('never written in subconscious.toml');
    expect(caldavSourceSchema.safeParse(base).error?.issues[0]?.message).toBe('set exactly one of password_env or password_file');
    expect(caldavSourceSchema.safeParse({ ...base, url: 'ftp://x', password_env: 'X' }).success).toBe(false);
  });
});
