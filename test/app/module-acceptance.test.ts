/**
 * Issue 8's acceptance: a world defined entirely in this file and registered with one line
 * (`[...productModules, notesModule]`) gets, with no other file touched: its table (migrated on
 * both dialects), its config section with defaults and validation, an RPC method typed on the
 * page's client, an event on `/events`, its line in `subconscious status`, and its card on the
 * page, whose Run now a real Chromium presses.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { createApp } from '../../src/app/app.js';
import { productModules } from '../../src/app/modules.js';
import { startDaemon, type Daemon } from '../../src/cli/daemon.js';
import { printStatus } from '../../src/cli/format.js';
import { daemonEvents } from '../../src/cli/remote.js';
import { isSubconsciousError, silentLogger } from '../../src/core/index.js';
import { defineModule, type World } from '../../src/engine/index.js';
import { createRpcClient, defineContract, method, type MethodsOf, type StatusResult } from '../../src/protocol/index.js';
import { openTestStore, testDialects } from '../support/stores.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';

// ---- The world under test: notes that a tick marks as seen. ----------------------------------

type Note = { id: string; text: string; seen: boolean };
type NotesEvents = { 'notes.added': { world: string; id: string; text: string } };

const notesContract = defineContract<NotesEvents>()({
  methods: {
    'notes.add': method(z.strictObject({ text: z.string().trim().min(1, 'must not be empty').max(200) }), 'Add a note.').returns<Note>(),
    'notes.list': method(z.strictObject({}), 'Every note, oldest first.').returns<Note[]>(),
  },
  events: ['notes.added'],
});

interface NotesTables {
  notes_items: { id: string; text: string; seen: number; created_at: number };
}

const notesConfig = z.strictObject({
  interval_minutes: z.number().int().min(1, 'must be at least 1').max(60).default(7),
  greeting: z.string().min(1).default('hello'),
});

const notesModule = defineModule<typeof notesConfig, NotesTables, typeof notesContract>({
  kind: 'notes',
  description: 'Marks new notes as seen.',
  config: notesConfig,
  tables: {
    names: ['notes_items'],
    migrations: {
      'notes/0001_items': {
        up: async (db) => {
          await db.schema
            .createTable('notes_items')
            .addColumn('id', 'text', (c) => c.primaryKey())
            .addColumn('text', 'text', (c) => c.notNull())
            .addColumn('seen', 'integer', (c) => c.notNull().defaultTo(0))
            .addColumn('created_at', 'bigint', (c) => c.notNull())
            .execute();
        },
      },
    },
  },
  contract: notesContract,
  create(ctx) {
    const unseen = () => ctx.db.selectFrom('notes_items').select('id').where('seen', '=', 0).execute();
    const world: World<{ ids: string[] }> = {
      kind: 'notes',
      roles: [],
      intervalMinutes: () => ctx.config.interval_minutes,
      observe: async () => {
        const ids = (await unseen()).map((r) => r.id);
        return { quiet: ids.length === 0, tainted: false, data: { ids } };
      },
      prepareContext: async () => null,
      reflect: async () => null,
      commit: async (_tick, { observation }) => {
        if (observation.data.ids.length) await ctx.db.updateTable('notes_items').set({ seen: 1 }).where('id', 'in', observation.data.ids).execute();
        return { summary: `${ctx.config.greeting}: ${observation.data.ids.length} note(s) seen`, counts: { seen: observation.data.ids.length } };
      },
    };
    return {
      world,
      handlers: {
        'notes.add': async ({ text }) => {
          const id = ctx.ids();
          await ctx.db.insertInto('notes_items').values({ id, text, seen: 0, created_at: ctx.clock.now() }).execute();
          ctx.events.emit('notes.added', { world: ctx.name, id, text });
          return { id, text, seen: false };
        },
        'notes.list': async () =>
          (await ctx.db.selectFrom('notes_items').selectAll().orderBy('created_at').execute()).map((r) => ({
            id: r.id,
            text: r.text,
            seen: Number(r.seen) === 1,
          })),
      },
    };
  },
});

/** The one line. */
const modules = [...productModules, notesModule];

// ---- What it gets. --------------------------------------------------------------------------

const dialects = await testDialects();
let workspace: string;
beforeAll(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-notes-'));
});
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

describe.each(dialects)('a world module defined in a test, on %s', (dialect) => {
  it('gets its table migrated, its config defaults, its methods, its event and its status line', async () => {
    const store = await openTestStore(dialect);
    const app = await createApp({ workspace: store.workspace, modules, store, log: silentLogger });
    try {
      const seen: Array<{ type: string; data: unknown }> = [];
      const stop = app.events.subscribe((e) => seen.push(e));
      const note = (await app.rpc.call('notes.add', { text: 'buy milk' })) as Note;
      stop();
      expect(note).toMatchObject({ text: 'buy milk', seen: false });
      expect(seen.filter((e) => e.type === 'notes.added').map((e) => e.data)).toEqual([{ world: 'notes', id: note.id, text: 'buy milk' }]);
      // The table exists on this dialect and holds the row.
      expect(await store.db.selectFrom('notes_items').select('text').execute()).toEqual([{ text: 'buy milk' }]);

      const outcome = (await app.registry.tickOnce('notes'))[0]!;
      expect(outcome).toMatchObject({ world: 'notes', kind: 'committed', message: 'hello: 1 note(s) seen' });
      expect(await app.rpc.call('notes.list')).toEqual([{ id: note.id, text: 'buy milk', seen: true }]);

      const status = (await app.rpc.call('subconscious.status')) as StatusResult;
      const notes = status.instances.find((i) => i.world === 'notes')!;
      expect(notes).toMatchObject({ enabled: true, interval_minutes: 7, total_ticks: 1, description: 'Marks new notes as seen.' });
      const lines: string[] = [];
      printStatus(status, (l) => lines.push(l));
      expect(lines.find((l) => l.startsWith('notes:'))).toMatch(/^notes: enabled — every 7 min, 1 ticks, last .*\(hello: 1 note\(s\) seen\)$/);
      // Bad params get a typed JSON-RPC error and change nothing.
      await expect(app.rpc.call('notes.add', { text: '' })).rejects.toThrow(/text: must not be empty/);
      expect(await store.db.selectFrom('notes_items').select('id').execute()).toHaveLength(1);
    } finally {
      await app.close();
      await store.dispose();
    }
  });
});

describe('its config section', () => {
  const toml = (text: string) => writeFileSync(path.join(workspace, 'subconscious.toml'), text);

  it('is read from [worlds.notes], validated with the key named, and enabled = false is a hard off', async () => {
    toml('[worlds.notes]\ninterval_minutes = 0\n');
    const err = await createApp({ workspace, modules, log: silentLogger }).then(
      async (app) => {
        await app.close();
        return null;
      },
      (e: unknown) => e,
    );
    expect(isSubconsciousError(err, 'config_invalid')).toBe(true);
    expect((err as Error).message).toMatch(/worlds\.notes\.interval_minutes: must be at least 1/);

    toml('[worlds.notes]\ngreeting = "hi"\nenabled = false\n');
    const app = await createApp({ workspace, modules, log: silentLogger });
    try {
      await app.rpc.call('notes.add', { text: 'x' });
      expect((await app.registry.tickOnce('notes'))[0]).toMatchObject({ kind: 'skipped', message: 'disabled' });
      const notes = ((await app.rpc.call('subconscious.status')) as StatusResult).instances.find((i) => i.world === 'notes')!;
      expect(notes).toMatchObject({ enabled: false, disabled_by: '[worlds.notes] enabled = false in subconscious.toml' });
    } finally {
      await app.close();
      rmSync(path.join(workspace, 'subconscious.toml'));
    }
  });
});

describe('through the daemon', () => {
  let daemon: Daemon;
  let browser: TestBrowser;
  beforeAll(async () => {
    daemon = await startDaemon({ workspace: mkdtempSync(path.join(os.tmpdir(), 'subc-notes-daemon-')), port: 0, log: silentLogger, modules });
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await daemon?.stop();
    if (daemon) rmSync(daemon.app.workspace, { recursive: true, force: true });
  });

  /** The page's client, typed by this module's contract, over the daemon's real `/rpc`. */
  const client = () =>
    createRpcClient<MethodsOf<typeof notesContract>>(async (name, params) => {
      const res = await fetch(`${daemon.http.url}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${daemon.token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: name, params }),
      });
      const body = (await res.json()) as { result?: unknown; error?: { message: string } };
      if (body.error) throw new Error(body.error.message);
      return body.result;
    });

  it('serves its method typed on the client, and its event on /events', async () => {
    const call = client();
    // Types only (these calls are never made): results and params come from the contract.
    expectTypeOf<ReturnType<typeof call<'notes.add'>>>().toEqualTypeOf<Promise<Note>>();
    expectTypeOf<ReturnType<typeof call<'notes.list'>>>().toEqualTypeOf<Promise<Note[]>>();
    // @ts-expect-error: the params are checked against the contract
    void (() => call('notes.add', { body: 'x' }));

    const events: Array<{ type: string; data: Record<string, unknown> }> = [];
    const stop = (await daemonEvents(daemon.app.workspace, (e) => events.push(e)))!;
    try {
      const note = await call('notes.add', { text: 'over the wire' });
      await expect
        .poll(() => events.find((e) => e.type === 'notes.added')?.data, { timeout: 10_000 })
        .toEqual({ world: 'notes', id: note.id, text: 'over the wire' });
    } finally {
      stop();
    }
  });

  it('has its card on the page, whose Run now ticks the world', async () => {
    const { page, errors } = await browser.newPage();
    await page.goto(daemon.pageUrl);
    const card = page.locator('[data-testid="world-notes"]');
    await card.waitFor();
    // The daemon's first pass ticked it once already (a never-ticked world is due at start).
    const ticks = async () => Number(await card.locator('[data-testid="world-ticks"]').textContent());
    await expect.poll(() => daemon.app.registry.get('notes').running).toBe(false);
    const before = ((await daemon.app.rpc.call('subconscious.status')) as StatusResult).instances.find((i) => i.world === 'notes')!.total_ticks;
    await expect.poll(ticks).toBe(before);
    await client()('notes.add', { text: 'for the card' });
    await page.getByRole('button', { name: 'Run Notes now' }).click();
    await expect.poll(ticks, { timeout: 15_000 }).toBe(before + 1);
    // Every note added through this daemon so far was seen by that tick, and the card says so.
    const notes = await client()('notes.list');
    expect(notes.every((n) => n.seen)).toBe(true);
    await expect.poll(() => card.textContent()).toContain(`hello: ${notes.length} note(s) seen`);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
