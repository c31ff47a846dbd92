/**
 * `npx tsx bench/caldav.bench.ts` (`npm run bench:caldav`) — what following a CalDAV calendar
 * costs per sync on a real Radicale (started here, as the tests do). Figures are printed, never
 * asserted.
 *
 * A calendar of BENCH_EVENTS events (default 1,000; one in ten weekly-recurring), then:
 *   1. the first sync (the window read whole: REPORT calendar-query);
 *   2. an unchanged poll (one PROPFIND, no event read);
 *   3. BENCH_CHANGED (default 10) events changed and one removed (PROPFIND + sync-collection);
 *   4. the same calendar read whole again (a resync), the cost every sync had before.
 * Each line: wall time, HTTP requests, calendar objects read, document changes. SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeClock, sequentialIds, silentLogger } from '../src/core/index.js';
import { CaldavSource, MemoryStore, memoryMigrations, SyncBookkeeping, type MemoryTables, type SyncResult } from '../src/memory/index.js';
import { applyMigrations, openStore, tablesView } from '../src/store/index.js';
import { radicaleAvailable, startRadicale } from '../devtools/radicale.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000);
const CHANGED = Number(process.env.BENCH_CHANGED ?? 10);

function event(n: number, summary = `Meeting ${n}`): string {
  const day = String(1 + (n % 28)).padStart(2, '0');
  const hour = String(8 + (n % 9)).padStart(2, '0');
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//subconscious//bench//EN',
    'BEGIN:VEVENT',
    `UID:bench-${n}`,
    'DTSTAMP:20260101T000000Z',
    `DTSTART;TZID=Europe/Berlin:202601${day}T${hour}0000`,
    `DTEND;TZID=Europe/Berlin:202601${day}T${hour}3000`,
    ...(n % 10 === 0 ? ['RRULE:FREQ=WEEKLY'] : []),
    `SUMMARY:${summary}`,
    `LOCATION:Room ${n % 40}`,
    `ATTENDEE;CN=Person ${n % 50}:mailto:p${n % 50}@example.com`,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}

async function main(): Promise<void> {
  if (!radicaleAvailable()) throw new Error('Radicale is not installed: run scripts/ensure-mail-servers.sh');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-caldav-'));
  const dav = await startRadicale({ users: { bench: 'secret' } });
  const store = await openStore({ sqliteFile: path.join(dir, 'caldav.db') });
  try {
    const cal = await dav.mkcalendar('bench', 'work');
    const t0 = performance.now();
    for (let n = 1; n <= EVENTS; n++) await dav.put('bench', cal, `e${n}.ics`, event(n));
    console.log(`setup: ${EVENTS} events PUT into Radicale in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

    await applyMigrations(store.db, store.dialect, memoryMigrations);
    const db = tablesView<MemoryTables>(store.db);
    const clock = new FakeClock();
    const memory = new MemoryStore({ db, dialect: store.dialect, clock, ids: sequentialIds('cp') });
    const deps = { store: memory, db, clock, log: silentLogger };
    const source = new CaldavSource(deps, {
      namespace: 'cal',
      url: `${dav.url}/bench/`,
      user: 'bench',
      auth: 'basic',
      secret: () => 'secret',
      calendars: [],
      pastDays: 30,
      futureDays: 60,
      maxBodyChars: 200_000,
    });

    // Every request the source makes, counted on its way to Radicale.
    const realFetch = globalThis.fetch;
    let requests = 0;
    globalThis.fetch = (...args: Parameters<typeof fetch>) => {
      requests++;
      return realFetch(...args);
    };
    const measure = async (what: string, run: () => Promise<SyncResult>) => {
      requests = 0;
      const start = performance.now();
      const r = await run();
      const ms = performance.now() - start;
      if (r.error) throw new Error(`${what}: ${r.error}`);
      console.log(
        `${what.padEnd(44)} ${ms.toFixed(0).padStart(6)} ms  ${String(requests).padStart(3)} requests  ${String(r.read).padStart(5)} objects read  +${r.added} ~${r.modified} -${r.removed}`,
      );
    };
    await measure(`first sync (${EVENTS} events, window whole)`, () => source.sync());
    await measure('unchanged poll', () => source.sync());
    globalThis.fetch = realFetch;
    for (let n = 1; n <= CHANGED; n++) await dav.put('bench', cal, `e${n}.ics`, event(n, `Meeting ${n} (moved)`));
    await dav.remove('bench', cal, `e${EVENTS}.ics`);
    globalThis.fetch = (...args: Parameters<typeof fetch>) => {
      requests++;
      return realFetch(...args);
    };
    await measure(`${CHANGED} changed, 1 removed (sync-collection)`, () => source.sync());
    await measure('unchanged poll', () => source.sync());
    await new SyncBookkeeping(deps, 'cal').forgetAll();
    await measure('the window read whole again (a resync)', () => source.sync());
    globalThis.fetch = realFetch;
  } finally {
    await store.close();
    await dav.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
