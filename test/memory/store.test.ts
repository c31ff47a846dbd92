/**
 * The memory store on both dialects: writes (update in place, unchanged hash writes nothing),
 * recall (ranked, per namespace and across, snippets, any text a valid query), namespaces,
 * and change tracking (checkpoints, diffs, the O(1) "changed since" check, rendering).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderDiff, type MemoryDiff } from '../../src/memory/index.js';
import { testDialects } from '../support/stores.js';
import { loadCorpus, openMemory, type MemoryFixture } from './support.js';

const dialects = await testDialects();

describe.each(dialects)('memory store (%s)', (dialect) => {
  let f: MemoryFixture;
  beforeAll(async () => {
    f = await openMemory(dialect);
  });
  afterAll(async () => {
    await f.dispose();
  });

  describe('writes', () => {
    it('stores, updates in place by external id, and writes nothing for an unchanged hash', async () => {
      const { memory } = f;
      const first = await memory.storeDocument({ namespace: 'w', external_id: 'a', title: 'Alpha', body: 'one', metadata: { b: 1, a: [1, 2] } });
      expect(first).toMatchObject({ created: true, changed: true });
      const head = await memory.head();
      const changes = f.events.filter((e) => e.type === 'memory.changed').length;

      // Same content (metadata keys in another order): no write, no sequence, no event.
      f.clock.set(f.clock.now() + 60_000);
      const again = await memory.storeDocument({ namespace: 'w', external_id: 'a', title: 'Alpha', body: 'one', metadata: { a: [1, 2], b: 1 } });
      expect(again).toEqual({ id: first.id, created: false, changed: false });
      expect(await memory.head()).toBe(head);
      expect(f.events.filter((e) => e.type === 'memory.changed').length).toBe(changes);
      const unchanged = await memory.getDocument('w', 'a');
      expect(unchanged!.updated_at).toBe(unchanged!.created_at);

      const updated = await memory.storeDocument({ namespace: 'w', external_id: 'a', title: 'Alpha', body: 'two' });
      expect(updated).toEqual({ id: first.id, created: false, changed: true });
      expect(await memory.head()).toBe(head + 1);
      const doc = await memory.getDocument('w', 'a');
      expect(doc).toMatchObject({ id: first.id, body: 'two', metadata: {}, deleted_at: null });
      expect(doc!.updated_at).toBeGreaterThan(doc!.created_at);
      expect(f.events.at(-1)).toMatchObject({ type: 'memory.changed', data: { namespace: 'w', added: 0, modified: 1, removed: 0 } });
    });

    it('deletes as a tombstone (not listed, not recalled), and a second delete is a no-op', async () => {
      const { memory } = f;
      await memory.storeDocument({ namespace: 'w', external_id: 'gone', title: 'Ephemeral zebra', body: 'zebra crossing' });
      expect((await memory.recall({ query: 'zebra', namespace: 'w' })).map((h) => h.external_id)).toEqual(['gone']);
      const head = await memory.head();
      expect(await memory.deleteDocument('w', 'gone')).toBe(true);
      expect(await memory.head()).toBe(head + 1);
      expect(await memory.deleteDocument('w', 'gone')).toBe(false);
      expect(await memory.deleteDocument('w', 'never')).toBe(false);
      expect(await memory.head()).toBe(head + 1);
      expect(await memory.recall({ query: 'zebra' })).toEqual([]);
      const tomb = await memory.getDocument('w', 'gone');
      expect(tomb).toMatchObject({ title: 'Ephemeral zebra', body: '' });
      expect(tomb!.deleted_at).not.toBeNull();
      expect((await memory.listDocuments({ namespace: 'w' })).documents.map((d) => d.external_id)).not.toContain('gone');
      // Stored again: the same row comes back to life.
      const back = await memory.storeDocument({ namespace: 'w', external_id: 'gone', title: 'Ephemeral zebra', body: 'zebra crossing' });
      expect(back).toMatchObject({ id: tomb!.id, created: true, changed: true });
      expect((await memory.recall({ query: 'zebra' })).map((h) => h.external_id)).toEqual(['gone']);
    });

    it('concurrent writers (a connection pool on Postgres) get distinct sequences and never collide on a new id', async () => {
      const head = await f.memory.head();
      const results = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => f.memory.storeDocument({ namespace: 'race', external_id: 'same', title: 'Same', body: `version ${i}` })),
        ...Array.from({ length: 8 }, (_, i) => f.memory.storeDocument({ namespace: 'race', external_id: `own-${i}`, title: 'Own', body: 'x' })),
      ]);
      expect(results.filter((r) => r.created)).toHaveLength(9);
      expect(await f.memory.head()).toBe(head + 16);
      const seqs = await f.db.selectFrom('memory_documents').select('change_seq').where('namespace', '=', 'race').execute();
      expect(new Set(seqs.map((r) => Number(r.change_seq))).size).toBe(9);
      expect((await f.memory.namespaces()).find((n) => n.namespace === 'race')!.documents).toBe(9);
    });

    it('refuses a bad namespace or external id with invalid_params', async () => {
      await expect(f.memory.storeDocument({ namespace: 'bad space', external_id: 'x', title: 't', body: '' })).rejects.toMatchObject({
        code: 'invalid_params',
      });
      await expect(f.memory.storeDocument({ namespace: 'ok', external_id: '', title: 't', body: '' })).rejects.toMatchObject({ code: 'invalid_params' });
    });

    it('a batch is one transaction: a failing op leaves nothing behind', async () => {
      const head = await f.memory.head();
      await expect(
        f.memory.write('batch', [
          { op: 'put', doc: { external_id: 'b1', title: 'B1', body: 'x' } },
          { op: 'put', doc: { external_id: 'x'.repeat(600), title: 'too long id', body: 'x' } },
        ]),
      ).rejects.toMatchObject({ code: 'invalid_params' });
      expect(await f.memory.getDocument('batch', 'b1')).toBeUndefined();
      expect(await f.memory.head()).toBe(head);
    });
  });

  describe('recall', () => {
    let r: MemoryFixture;
    beforeAll(async () => {
      r = await openMemory(dialect);
      await loadCorpus(r.memory);
    });
    afterAll(async () => {
      await r.dispose();
    });

    it.each([
      ['overdue invoice', 'm1'],
      ['flight Lisbon', 'm3'],
      ['tomatoes compost', 'n1'],
      ['quarterly report board', 'c1'],
      ['deployment rollback', 'c2'],
      ['what is going on with the ACME invoice payment?', 'm1'],
    ])('ranks the relevant document first for %j', async (query, expected) => {
      const hits = await r.memory.recall({ query, limit: 5 });
      expect(hits[0]?.external_id).toBe(expected);
      for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
    });

    it('recalls per namespace and across namespaces, with a limit and snippets', async () => {
      const across = await r.memory.recall({ query: 'ACME invoice', limit: 10 });
      expect(new Set(across.map((h) => h.namespace))).toEqual(new Set(['mail', 'notes']));
      const notes = await r.memory.recall({ query: 'ACME invoice', namespace: 'notes', limit: 10 });
      expect(notes.map((h) => h.external_id)).toEqual(['n3']);
      expect(await r.memory.recall({ query: 'the', limit: 2 })).toHaveLength(dialect === 'postgres' ? 0 : 2); // Postgres drops stop words
      const [hit] = await r.memory.recall({ query: 'lisbon', limit: 1 });
      expect(hit).toMatchObject({ namespace: 'mail', title: 'Your flight to Lisbon', source_kind: 'note' });
      expect(hit!.snippet).toContain('**Lisbon**');
      const [start, end] = hit!.highlights[0]!;
      expect(hit!.snippet_text.slice(start, end)).toBe('Lisbon');
      expect(hit!.snippet_text).not.toContain('**');
    });

    it('marks only the engine’s matches: a document’s own ** and the internal markers are text', async () => {
      await r.memory.storeDocument({
        namespace: 'md',
        external_id: 'h1',
        title: 'Ledger \uE000notes\uE001',
        body: '**Deadline** Friday: settle the ** ledger ** with the \uE000auditor\uE001 before the audit closes.',
      });
      expect((await r.memory.getDocument('md', 'h1'))!.body).not.toMatch(/[\uE000\uE001]/);
      expect((await r.memory.getDocument('md', 'h1'))!.title).toBe('Ledger notes');
      const [hit] = await r.memory.recall({ query: 'auditor', namespace: 'md' });
      expect(hit!.snippet_text).toContain('Deadline** Friday: settle the ** ledger ** with the auditor'); // Postgres starts at a word
      expect(hit!.highlights.map(([a, b]) => hit!.snippet_text.slice(a, b))).toEqual(['auditor']);
      expect(hit!.snippet).toContain('with the **auditor** before');
    });

    it('stems words (running finds run) and ignores accents', async () => {
      await r.memory.storeDocument({ namespace: 'x', external_id: 's1', title: 'Café notes', body: 'We ran a quick experiment.' });
      await r.memory.storeDocument({ namespace: 'x', external_id: 's2', title: 'Runners', body: 'She runs every morning.' });
      expect((await r.memory.recall({ query: 'running', namespace: 'x' })).map((h) => h.external_id)).toEqual(['s2']);
      if (dialect === 'sqlite') expect((await r.memory.recall({ query: 'cafe', namespace: 'x' })).map((h) => h.external_id)).toEqual(['s1']);
    });

    it.each([
      '"unbalanced',
      'AND OR NOT',
      'NEAR(a b)',
      'title:invoice',
      'invoice*',
      '^start -minus +plus',
      '((()))',
      "o'reilly & <tag> | !bang :: ::",
      '🙂 emoji only',
      '',
      '     ',
      '"',
      '\u0000\u0001',
      'x'.repeat(1000),
    ])('treats untrusted query text %j as words, never as syntax', async (query) => {
      await expect(r.memory.recall({ query, limit: 3 })).resolves.toBeInstanceOf(Array);
      await expect(r.memory.recall({ query, namespace: 'mail', limit: 3 })).resolves.toBeInstanceOf(Array);
    });

    it('a quoted phrase matches the phrase', async () => {
      const hits = await r.memory.recall({ query: '"board meeting"' });
      expect(hits.map((h) => h.external_id)).toEqual(['c1']);
      expect(await r.memory.recall({ query: '"meeting board"' })).toEqual([]);
    });

    it('lists namespaces with document counts, and documents newest first with previews', async () => {
      const ns = await r.memory.namespaces();
      expect(ns.find((n) => n.namespace === 'mail')).toMatchObject({ label: 'mail', kind: 'rpc', documents: 3, last_sync_at: null });
      const list = await r.memory.listDocuments({ namespace: 'notes', limit: 2 });
      expect(list.total).toBe(3);
      expect(list.documents).toHaveLength(2);
      expect(list.documents[0]).not.toHaveProperty('body');
      expect(list.documents[0]!.preview.length).toBeGreaterThan(0);
      const recent = await r.memory.recent({ namespace: 'chat', limit: 10 });
      expect(recent.map((d) => d.external_id).sort()).toEqual(['c1', 'c2']);
    });
  });

  describe('checkpoints and diffs', () => {
    let d: MemoryFixture;
    beforeAll(async () => {
      d = await openMemory(dialect);
    });
    afterAll(async () => {
      await d.dispose();
    });

    const summary = (diff: MemoryDiff) =>
      Object.fromEntries(diff.namespaces.map((ns) => [ns.namespace, ns.entries.map((e) => `${e.change}:${e.external_id}`).sort()]));

    it('reports added, modified and removed per namespace; added-then-modified is added; added-then-removed is nothing', async () => {
      const m = d.memory;
      await m.registerNamespace('mail', { label: 'Mail', kind: 'folder' });
      for (const id of ['keep', 'edit', 'drop', 'flip']) await m.storeDocument({ namespace: 'mail', external_id: id, title: id, body: id });
      const cp = await m.createCheckpoint('test');
      expect(await m.changedSince(cp.seq)).toBe(false);

      await m.storeDocument({ namespace: 'mail', external_id: 'edit', title: 'edit', body: 'changed' });
      await m.deleteDocument('mail', 'drop');
      await m.storeDocument({ namespace: 'mail', external_id: 'new', title: 'new', body: 'v1' });
      await m.storeDocument({ namespace: 'mail', external_id: 'new', title: 'new', body: 'v2' });
      await m.storeDocument({ namespace: 'mail', external_id: 'blip', title: 'blip', body: 'short-lived' });
      await m.deleteDocument('mail', 'blip');
      await m.deleteDocument('mail', 'flip'); // deleted and back: it existed before, so modified
      await m.storeDocument({ namespace: 'mail', external_id: 'flip', title: 'flip', body: 'again' });
      await m.storeDocument({ namespace: 'notes', external_id: 'n', title: 'note', body: 'x' });
      await m.storeDocument({ namespace: 'mail', external_id: 'keep', title: 'keep', body: 'keep' }); // unchanged

      expect(await m.changedSince(cp.seq)).toBe(true);
      const diff = await m.diffSinceCheckpoint(cp.id);
      expect(summary(diff)).toEqual({
        mail: ['added:new', 'modified:edit', 'modified:flip', 'removed:drop'],
        notes: ['added:n'],
      });
      expect(diff.totals).toEqual({ added: 2, modified: 2, removed: 1 });
      expect(diff.namespaces[0]).toMatchObject({ namespace: 'mail', label: 'Mail', kind: 'folder' });
      expect(diff.head).toBe(await m.head());

      // A checkpoint at the head sees nothing; the old one still sees everything.
      const now = await m.createCheckpoint('test');
      expect((await m.diffSinceCheckpoint(now.id)).totals).toEqual({ added: 0, modified: 0, removed: 0 });
      expect((await m.diffSinceCheckpoint(cp.id)).totals).toEqual(diff.totals);
      await expect(m.diffSinceCheckpoint('nope')).rejects.toMatchObject({ code: 'not_found' });
    });

    it('renders a totals line and one "### label (kind)" section per source, at most 10 lines and "…and K more"', async () => {
      const m = d.memory;
      await m.registerNamespace('bulk', { label: 'Bulk import', kind: 'folder' });
      const cp = await m.createCheckpoint('render');
      await m.write(
        'bulk',
        Array.from({ length: 14 }, (_, i) => ({ op: 'put' as const, doc: { external_id: `b${i}`, title: `Bulk item ${i}\nwith a second line`, body: 'x' } })),
      );
      await m.storeDocument({ namespace: 'other', external_id: 'o', title: 'Other thing', body: 'x' });
      const text = renderDiff(await m.diffSinceCheckpoint(cp.id));
      const lines = text.split('\n');
      expect(lines[0]).toMatch(/^15 changes since checkpoint "render" \(.+\): 15 added, 0 modified, 0 removed$/);
      const bulk = text.split('\n\n').find((s) => s.startsWith('### Bulk import (folder)'))!;
      const bulkLines = bulk.split('\n');
      expect(bulkLines).toHaveLength(12);
      expect(bulkLines.slice(1, 11).every((l) => /^\[added\] Bulk item \d+ with a second line$/.test(l))).toBe(true);
      expect(bulkLines[11]).toBe('…and 4 more');
      expect(text).toContain('### other (rpc)\n[added] Other thing');
      expect(renderDiff(await m.diffSinceCheckpoint((await m.createCheckpoint('empty')).id))).toMatch(/^0 changes since checkpoint "empty"/);
    });

    it('checkpoint creation is idempotent by id, may record an earlier sequence, and refuses a future one', async () => {
      const m = d.memory;
      const head = await m.head();
      const a = await m.createCheckpoint('world', { id: 'fixed', seq: head - 1 });
      const b = await m.createCheckpoint('world', { id: 'fixed' });
      expect(b).toEqual(a);
      expect(a.seq).toBe(head - 1);
      await expect(m.createCheckpoint('world', { seq: head + 1 })).rejects.toMatchObject({ code: 'invalid_params' });
    });

    it('pruning keeps the newest checkpoints of a label and drops tombstones no checkpoint can see', async () => {
      const p = await openMemory(dialect);
      const m = p.memory;
      try {
        await m.storeDocument({ namespace: 'p', external_id: 'a', title: 'a', body: 'a' });
        await m.storeDocument({ namespace: 'p', external_id: 'b', title: 'b', body: 'b' });
        const old = await m.createCheckpoint('world');
        await m.deleteDocument('p', 'a');
        const mid = await m.createCheckpoint('world');
        await m.deleteDocument('p', 'b');
        const last = await m.createCheckpoint('world');
        expect(await m.pruneCheckpoints('world', 2)).toBe(1);
        expect(await m.getCheckpoint(old.id)).toBeUndefined();
        // a's tombstone is older than every checkpoint left; b's is still needed by `mid`.
        expect(await m.getDocument('p', 'a')).toBeUndefined();
        expect((await m.getDocument('p', 'b'))!.deleted_at).not.toBeNull();
        expect(summary(await m.diffSinceCheckpoint(mid.id))).toEqual({ p: ['removed:b'] });
        expect((await m.diffSinceCheckpoint(last.id)).totals.removed).toBe(0);
      } finally {
        await p.dispose();
      }
    });
  });
});
