/**
 * The mcp source on real MCP servers from npm over stdio: `@modelcontextprotocol/server-everything`
 * (resources listed and read, `list_changed` when a tool adds a resource, subscriptions) and
 * `@modelcontextprotocol/server-filesystem` (tools only: test connection says it serves no
 * resources). A binary resource is skipped with its reason counted; a resource gone from the
 * list is a removal; a body over max_body_chars is cut and said; a command that cannot start is
 * a clear failure. Reads are counted (the SDK client's readResource spied on, the calls still
 * reach the server): an unchanged poll reads nothing, list_changed reads only the new resource,
 * `notifications/resources/updated` (server-everything's toggle-subscriber-updates sends one per
 * subscribed URI at once) reads those, and `reread_hours` reads everything again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/core/index.js';
import { McpSource, mcpSourceSchema } from '../../src/memory/index.js';
import { memoryPrompt } from '../../src/worlds/conscious/prompt.js';
import { openMemory, type MemoryFixture } from './support.js';

const EVERYTHING = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
const FILESYSTEM = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url));

describe('mcp source on server-everything (stdio)', () => {
  let f: MemoryFixture;
  let sources: McpSource[];
  const make = (opts: { args?: string[]; command?: string; maxBodyChars?: number; include?: string[]; rereadMs?: number } = {}) => {
    const s = new McpSource(
      { store: f.memory, db: f.db, clock: f.clock, log: silentLogger, emit: f.emit },
      {
        namespace: 'docs',
        label: 'Everything docs',
        server: { command: opts.command ?? process.execPath, args: opts.args ?? [EVERYTHING, 'stdio'], env: () => ({}) },
        include: opts.include ?? [],
        documentKind: 'notes',
        maxResources: 100,
        maxBodyChars: opts.maxBodyChars ?? 200_000,
        debounceMs: 500,
        rereadMs: opts.rereadMs,
      },
    );
    sources.push(s);
    return s;
  };
  const docs = async () => (await f.memory.listDocuments({ namespace: 'docs', limit: 100 })).documents;

  beforeEach(async () => {
    f = await openMemory('sqlite');
    sources = [];
  });
  afterEach(async () => {
    for (const s of sources) await s.close();
    await f.dispose();
  });

  it('resources become documents; a new one arrives by list_changed; a binary one is skipped and counted; a gone one is removed', async () => {
    const s = make();
    s.watch();
    const first = await s.sync();
    expect(first).toMatchObject({ error: null, skipped: [] });
    expect(first.added).toBeGreaterThanOrEqual(5);
    const all = await docs();
    const features = all.find((d) => d.external_id === 'mcp#demo://resource/static/document/features.md')!;
    expect(features).toMatchObject({ title: 'features.md', source_kind: 'notes', metadata: { mime_type: 'text/markdown' } });
    const body = (await f.memory.getDocument('docs', features.external_id))!.body;
    expect(body.length).toBeGreaterThan(100);
    expect(s.watching).toBe(true);
    expect(await s.sync()).toMatchObject({ added: 0, modified: 0, removed: 0 });

    // A tool adds a session resource (gzip: binary): the server says list_changed, the debounced sync runs.
    const client = await s.connection();
    const text = Buffer.from('hello from the test').toString('base64');
    await client.callTool({ name: 'gzip-file-as-resource', arguments: { name: 'hello.txt.gz', data: `data:text/plain;base64,${text}` } });
    await f.clock.advance(500);
    await s.idle();
    expect(s.last!.skipped).toEqual([{ path: 'demo://resource/session/hello.txt.gz', reason: expect.stringContaining('binary content (application/gzip)') }]);
    expect(s.totals.syncs).toBe(3);

    // A narrower include: what left the list is a removal in the memory diff.
    const checkpoint = await f.memory.createCheckpoint('test');
    await s.close();
    const narrow = make({ include: ['demo://resource/static/document/features.md'] });
    expect(await narrow.sync()).toMatchObject({ removed: all.length - 1, added: 0 });
    const diff = await f.memory.diffSinceCheckpoint(checkpoint.id);
    expect(diff.namespaces.find((n) => n.namespace === 'docs')!.totals.removed).toBe(all.length - 1);

    // What the conscious loop reads: the resource labelled with its kind.
    const info = (await f.memory.namespaces()).find((n) => n.namespace === 'docs')!;
    const prompt = memoryPrompt([{ namespace: info, documents: await f.memory.recent({ namespace: 'docs', limit: 10 }) }], f.clock.now(), {
      budgetTokens: 12_000,
      maxChars: 4000,
      minChars: 400,
    });
    expect(prompt).toContain('kind: mcp');
    expect(prompt).toContain('Title: features.md');
    expect(prompt).toContain('Kind: notes');
  });

  it('reads only what may have changed: nothing on an unchanged poll, the new one on list_changed, the updated ones, all after reread_hours', async () => {
    const reads = vi.spyOn(Client.prototype, 'readResource');
    const readsOf = async (run: () => Promise<unknown>) => {
      reads.mockClear();
      await run();
      return reads.mock.calls.map(([p]) => p.uri).sort();
    };
    try {
      const s = make();
      s.watch();
      const listed = await readsOf(() => s.sync());
      expect(listed.length).toBeGreaterThanOrEqual(5);
      // Polled with nothing changed: listed, nothing read, the documents untouched.
      expect(await readsOf(() => s.sync())).toEqual([]);
      expect(s.last).toMatchObject({ files: listed.length, read: 0, unchanged: listed.length, added: 0, modified: 0, removed: 0 });

      // list_changed: only the new resource is read (binary: skipped, listed, and not read again).
      const client = await s.connection();
      const gz = Buffer.from('hello').toString('base64');
      await client.callTool({ name: 'gzip-file-as-resource', arguments: { name: 'hi.txt.gz', data: `data:text/plain;base64,${gz}` } });
      expect(
        await readsOf(async () => {
          await f.clock.advance(500);
          await s.idle();
        }),
      ).toEqual(['demo://resource/session/hi.txt.gz']);
      expect(await s.skippedFiles()).toEqual([{ path: 'demo://resource/session/hi.txt.gz', reason: expect.stringContaining('binary content') }]);
      expect(await readsOf(() => s.sync())).toEqual([]);

      // notifications/resources/updated for every subscribed URI: those are read (their text is the same: unchanged).
      await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await vi.waitFor(() => expect(s.pendingUpdates).toBe(listed.length + 1), { timeout: 10_000 });
      await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      const updated = await readsOf(async () => {
        await f.clock.advance(500);
        await s.idle();
      });
      expect(updated).toEqual([...listed, 'demo://resource/session/hi.txt.gz'].sort());
      expect(s.last).toMatchObject({ modified: 0, added: 0, removed: 0 });
      expect(s.pendingUpdates).toBe(0);
      expect(await readsOf(() => s.sync())).toEqual([]);

      // Nothing said for reread_hours (24 by default): everything is read again once.
      await f.clock.advance(24 * 3_600_000);
      expect((await readsOf(() => s.sync())).length).toBe(listed.length + 1);
      expect(await readsOf(() => s.sync())).toEqual([]);
      await s.close();

      // Polling a server without a live connection (watch off): the same, each sync on a fresh connection
      // (a new server process: the session resource is gone, and its skip record with it).
      const polled = make();
      expect(await readsOf(() => polled.sync())).toEqual([]);
      expect(polled.last).toMatchObject({ unchanged: listed.length, removed: 0 });
      expect(await polled.skippedFiles()).toEqual([]);
      // reread_hours = 0: every sync reads everything.
      const always = make({ rereadMs: 0 });
      expect((await readsOf(() => always.sync())).length).toBe(listed.length);
    } finally {
      reads.mockRestore();
    }
  });

  it('a huge body is cut and said', async () => {
    const s = make({ maxBodyChars: 1000, include: ['demo://resource/static/document/features.md'] });
    expect(await s.sync()).toMatchObject({ added: 1 });
    const doc = (await f.memory.getDocument('docs', 'mcp#demo://resource/static/document/features.md'))!;
    expect(doc.body).toMatch(/\[cut: the text was \d+ characters; cut at 1000 \(max_body_chars\)\]$/);
    expect(doc.metadata.cut).toMatch(/cut at 1000/);
  });

  it('test connection: a tools-only server and a command that cannot start say so; a failed sync changes nothing', async () => {
    expect(await make().testConnection()).toBeNull();
    expect(await make({ args: [FILESYSTEM, '/tmp'] }).testConnection()).toMatchObject({
      kind: 'other',
      message: expect.stringContaining('offers no resources'),
    });
    const missing = make({ command: '/nonexistent/mcp-server' });
    expect(await missing.testConnection()).toMatchObject({ kind: 'host', message: expect.stringContaining('cannot start stdio: /nonexistent/mcp-server') });
    const failed = await missing.sync();
    expect(failed.failure).toMatchObject({ kind: 'host' });
    expect(await docs()).toEqual([]);
  });
});

describe('mcp source on a server that says nothing of edits (shaped like Google Drive’s)', () => {
  const DRIVE = fileURLToPath(new URL('./fixtures/drive-server.ts', import.meta.url));
  let f: MemoryFixture;
  let dir: string;
  let s: McpSource;
  const make = (pollReads?: number) =>
    new McpSource(
      { store: f.memory, db: f.db, clock: f.clock, log: silentLogger, emit: f.emit },
      {
        namespace: 'drive',
        label: 'Drive',
        server: { command: process.execPath, args: ['--import', 'tsx', DRIVE, dir], env: () => ({}) },
        include: [],
        documentKind: 'notes',
        maxResources: 100,
        maxBodyChars: 200_000,
        debounceMs: 500,
        pollReads,
      },
    );
  const body = async (name: string) => (await f.memory.getDocument('drive', `mcp#drive:///${name}`))?.body;

  beforeEach(async () => {
    f = await openMemory('sqlite');
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-drive-'));
    for (let i = 1; i <= 5; i++) writeFileSync(path.join(dir, `doc${i}.md`), `Draft ${i}.`);
  });
  afterEach(async () => {
    await s?.close();
    await f.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an edit reaches memory within ceil(resources / poll_reads) polls, not after reread_hours; an unchanged re-read writes nothing', async () => {
    s = make(2);
    s.watch();
    expect(await s.sync()).toMatchObject({ error: null, added: 5 });
    expect(s.watching).toBe(false); // no listChanged, no subscribe: polled
    await f.clock.advance(15 * 60_000);

    writeFileSync(path.join(dir, 'doc4.md'), 'Draft 4, edited: the budget review moved to Friday.');
    const synced = [];
    for (let poll = 0; poll < 3 && !(await body('doc4.md'))?.includes('Friday'); poll++) {
      synced.push(await s.sync());
      await f.clock.advance(15 * 60_000);
    }
    expect(await body('doc4.md')).toBe('Draft 4, edited: the budget review moved to Friday.');
    // Two of the five read again each poll, those read longest ago first: three polls at most.
    expect(synced.length).toBeLessThanOrEqual(3);
    expect(synced.every((r) => r.read === 2)).toBe(true);
    expect(synced.reduce((n, r) => n + r.modified, 0)).toBe(1);
    expect(synced.reduce((n, r) => n + r.added + r.removed, 0)).toBe(0);
  });

  it('poll_reads = 0 leaves an edit to reread_hours (the old behaviour, by choice)', async () => {
    s = make(0);
    await s.sync();
    writeFileSync(path.join(dir, 'doc1.md'), 'Draft 1, edited.');
    await f.clock.advance(15 * 60_000);
    expect(await s.sync()).toMatchObject({ read: 0 });
    expect(await body('doc1.md')).toBe('Draft 1.');
    await f.clock.advance(24 * 3_600_000);
    await s.sync();
    expect(await body('doc1.md')).toBe('Draft 1, edited.');
  });
});

describe('mcp source config', () => {
  it('a stdio server or a url; secrets from the environment, never the TOML', () => {
    expect(
      mcpSourceSchema.parse({
        kind: 'mcp',
        namespace: 'notion',
        command: 'npx',
        args: ['-y', '@notionhq/notion-mcp-server'],
        env_from: { NOTION_TOKEN: 'MY_NOTION' },
      }),
    ).toMatchObject({
      document_kind: 'notes',
      watch: true,
      env: {},
    });
    expect(mcpSourceSchema.safeParse({ kind: 'mcp', namespace: 'x' }).error?.issues[0]?.message).toBe(
      'set exactly one of command (a stdio server) or url (streamable HTTP)',
    );
    expect(mcpSourceSchema.safeParse({ kind: 'mcp', namespace: 'x', command: 'srv', token_env: 'T' }).error?.issues[0]?.message).toContain(
      'only apply to a url server',
    );
    expect(mcpSourceSchema.parse({ kind: 'mcp', namespace: 'x', url: 'https://mcp.example.com/mcp', token_file: '~/.config/token' })).toMatchObject({
      url: 'https://mcp.example.com/mcp',
    });
  });
});
