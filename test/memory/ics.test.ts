/**
 * The ics source on a real file, on both dialects: a recurring event expanded within the window
 * in its own zone (EXDATE skipped, a moved occurrence kept with its new time), attendees and
 * location; a changed event is modified, a cancelled one removed; an unreadable file changes
 * nothing. And the label the conscious loop reads: its prompt shows the event as calendar.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/index.js';
import { IcsSource } from '../../src/memory/index.js';
import { memoryPrompt } from '../../src/worlds/conscious/prompt.js';
import { testDialects } from '../support/stores.js';
import { single, standup, vcalendar } from './calendar-fixtures.js';
import { openMemory, type MemoryFixture } from './support.js';

const dialects = await testDialects();

const cal = vcalendar;
const standupMoved = (extra: string[] = []) => standup(extra, { moved: true });
const dentist = (status = 'CONFIRMED', summary = 'Dentist') => single('dentist', summary, status);

describe.each(dialects)('ics source (%s)', (dialect) => {
  let f: MemoryFixture;
  let file: string;
  let source: IcsSource;
  const docs = async () => (await f.memory.listDocuments({ namespace: 'cal', limit: 100 })).documents.map((d) => `${d.external_id}=${d.title}`).sort();

  beforeEach(async () => {
    f = await openMemory(dialect);
    file = path.join(mkdtempSync(path.join(os.tmpdir(), 'subc-ics-')), 'work.ics');
    // The fake clock starts 2026-01-01 09:00 UTC: the window is 2025-12-02 … 2026-01-31.
    source = new IcsSource(
      { store: f.memory, db: f.db, clock: f.clock, log: silentLogger, emit: f.emit },
      { namespace: 'cal', label: 'Work calendar', location: file, pastDays: 30, futureDays: 30 },
    );
  });
  afterEach(async () => f.dispose());

  it('expands a recurring event within the window in its zone; changes and cancellations reach memory', async () => {
    writeFileSync(file, cal(standupMoved(), dentist()));
    expect(await source.sync()).toMatchObject({ added: 4, error: null });
    expect(await docs()).toEqual([
      'ics#dentist=Dentist',
      'ics#standup@2026-01-05T08:30:00.000Z=Team standup',
      'ics#standup@2026-01-19T08:30:00.000Z=Team standup (moved)',
      'ics#standup@2026-01-26T08:30:00.000Z=Team standup',
    ]);
    const first = await f.memory.getDocument('cal', 'ics#standup@2026-01-05T08:30:00.000Z');
    expect(first).toMatchObject({ source_kind: 'calendar' });
    expect(first!.body).toContain('When: 2026-01-05 09:30 – 2026-01-05 09:45 Europe/Berlin (2026-01-05T08:30:00.000Z – 2026-01-05T08:45:00.000Z)');
    expect(first!.body).toContain('Where: Room 4');
    expect(first!.body).toContain('Attendees: Ben <ben@example.com> (accepted)');
    expect(first!.metadata).toMatchObject({ time_zone: 'Europe/Berlin', start: '2026-01-05T08:30:00.000Z', location: 'Room 4', recurring: true });
    const moved = await f.memory.getDocument('cal', 'ics#standup@2026-01-19T08:30:00.000Z');
    expect(moved!.metadata).toMatchObject({ start: '2026-01-19T10:00:00.000Z' });
    expect(await f.memory.getDocument('cal', 'ics#standup@2026-01-12T08:30:00.000Z')).toBeUndefined();

    const checkpoint = await f.memory.createCheckpoint('test');
    writeFileSync(file, cal(standupMoved(), dentist('CANCELLED')));
    expect(await source.sync()).toMatchObject({ removed: 1, added: 0, modified: 0 });
    // The series gets a description: its two regular occurrences change (the moved one is its own VEVENT).
    writeFileSync(file, cal(standupMoved(['DESCRIPTION:Bring the numbers'])));
    expect(await source.sync()).toMatchObject({ modified: 2, removed: 0 });
    const diff = await f.memory.diffSinceCheckpoint(checkpoint.id);
    expect(diff.namespaces.find((n) => n.namespace === 'cal')!.totals).toMatchObject({ removed: 1, modified: 2 });

    // Unreadable: an error, nothing removed.
    writeFileSync(file, 'not a calendar');
    const bad = await source.sync();
    expect(bad.error).toContain('cannot read the calendar');
    expect((await docs()).length).toBe(3);

    // What the conscious loop reads: the event labelled as calendar.
    const ns = (await f.memory.namespaces()).find((n) => n.namespace === 'cal')!;
    const prompt = memoryPrompt([{ namespace: ns, documents: await f.memory.recent({ namespace: 'cal', limit: 10 }) }], f.clock.now(), {
      budgetTokens: 12_000,
      maxChars: 4000,
      minChars: 400,
    });
    expect(prompt).toContain('kind: ics');
    // The fence writes the document as a JSON string (newlines as \n).
    expect(prompt).toContain('Title: Team standup\\nDate: 2026-01-26T08:30:00.000Z\\nUpdated: 2026-01-01T09:00:00.000Z\\nKind: calendar');
  });
});
