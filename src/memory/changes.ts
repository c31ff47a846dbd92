/**
 * Diffs from the change sequence: every document row whose `change_seq` passed the checkpoint's
 * high-water mark, read with one range scan on the `change_seq` index — O(changes), whatever
 * the number of documents. Each row says whether it existed at the checkpoint and exists now:
 *
 *   existed, exists     → modified
 *   new, exists         → added      (also: added, then modified since)
 *   existed, deleted    → removed
 *   new, deleted        → nothing    (added and removed within the window)
 *
 * "Existed at the checkpoint" is: this incarnation was created by then, or (a revived
 * tombstone) the previous incarnation was alive then. Only the last two incarnations are
 * remembered, so a document deleted and revived several times within one window may show as
 * added where modified would be exact; it is never missed.
 */
import type { Kysely } from 'kysely';
import type { DiffChange, MemoryBaseline } from '../protocol/memory.js';
import { emptyTotals, type DiffEntry, type MemoryDiff, type NamespaceDiff } from './diff.js';
import type { MemoryTables } from './tables.js';

export async function diffSince(db: Kysely<MemoryTables>, since: MemoryBaseline, entriesPerNamespace: number): Promise<MemoryDiff> {
  const cp = since.seq;
  // The head first: every change up to it is in the rows read after it (later ones may be too),
  // so a baseline set at `head` can repeat a change in the next diff but never miss one.
  const state = await db.selectFrom('memory_state').select('seq').where('id', '=', 1).executeTakeFirstOrThrow();
  const head = Number(state.seq);
  const [rows, namespaces] = await Promise.all([
    db
      .selectFrom('memory_documents')
      .select([
        'id',
        'namespace',
        'external_id',
        'title',
        'source_kind',
        'updated_at',
        'deleted_at',
        'created_seq',
        'change_seq',
        'prior_created_seq',
        'prior_deleted_seq',
      ])
      .where('change_seq', '>', cp)
      .orderBy('change_seq', 'desc')
      .execute(),
    db.selectFrom('memory_namespaces').select(['namespace', 'label', 'kind']).execute(),
  ]);
  const info = new Map(namespaces.map((n) => [n.namespace, n]));
  const byNamespace = new Map<string, { diff: NamespaceDiff; lists: Record<DiffChange, DiffEntry[]> }>();
  const totals = emptyTotals();

  for (const r of rows) {
    const created = Number(r.created_seq);
    const existed = created <= cp || (r.prior_created_seq !== null && Number(r.prior_created_seq) <= cp && cp < Number(r.prior_deleted_seq));
    const exists = r.deleted_at === null;
    const change: DiffChange | null = existed ? (exists ? 'modified' : 'removed') : exists ? 'added' : null;
    if (!change) continue;
    let ns = byNamespace.get(r.namespace);
    if (!ns) {
      const meta = info.get(r.namespace);
      ns = {
        diff: { namespace: r.namespace, label: meta?.label ?? r.namespace, kind: meta?.kind ?? 'unknown', totals: emptyTotals(), entries: [] },
        lists: { added: [], modified: [], removed: [] },
      };
      byNamespace.set(r.namespace, ns);
    }
    ns.diff.totals[change]++;
    totals[change]++;
    const list = ns.lists[change];
    if (list.length < entriesPerNamespace) {
      list.push({ id: Number(r.id), external_id: r.external_id, title: r.title, source_kind: r.source_kind, change, updated_at: Number(r.updated_at) });
    }
  }

  const out: NamespaceDiff[] = [];
  for (const { diff, lists } of [...byNamespace.values()].sort((a, b) => a.diff.namespace.localeCompare(b.diff.namespace))) {
    diff.entries = [...lists.added, ...lists.modified, ...lists.removed].slice(0, entriesPerNamespace);
    out.push(diff);
  }
  return { since, head, totals, namespaces: out };
}
