/**
 * The memory store: documents per namespace, full-text recall, and change tracking (checkpoints
 * and diffs). See `tables.ts` for how changes are tracked.
 *
 *   const memory = new MemoryStore({ db, dialect, clock, ids, emit, log });
 *   await memory.storeDocument({ namespace: 'mail', external_id: 'msg-1', title, body, metadata });
 *   await memory.recall({ query: 'invoice overdue', limit: 10 });
 *   const cp = await memory.createCheckpoint('memory');   // … later:
 *   renderDiff(await memory.diffSinceCheckpoint(cp.id));
 *   if (await memory.changedSince(cursor)) …              // O(1): one row read
 *
 * Writes: storing the same external id again updates in place; an unchanged content hash writes
 * nothing at all (no row, no sequence, no event). Every write of a batch happens in one
 * transaction, which also keeps the full-text index, the namespace counters and the change
 * sequence in step. On Postgres every write transaction first locks the sequence row (a lock,
 * not a data change), so writers are serialised: sequences are handed out in commit order, a
 * checkpoint never misses a write still in flight, and two writers of one new external id
 * never both insert it.
 */
import type { Kysely, Transaction } from 'kysely';
import { SubconsciousError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { IdGen } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { DialectName } from '../store/index.js';
import {
  MAX_BODY_CHARS,
  MAX_TITLE_CHARS,
  NAMESPACE_PATTERN,
  type MemoryBaseline,
  type MemoryDocument,
  type MemoryDocumentSummary,
  type MemoryEvents,
  type MemoryNamespace,
  type RecallHit,
  type StoreDocumentResult,
} from '../protocol/memory.js';
import { diffSince } from './changes.js';
import type { MemoryDiff } from './diff.js';
import { documentHash } from './hash.js';
import { recall } from './recall.js';
import { parseMetadata } from './rows.js';
import type { MemoryDocumentsTable, MemoryTables } from './tables.js';

export type MemoryEmit = <K extends keyof MemoryEvents>(type: K, data: MemoryEvents[K]) => void;

export interface MemoryStoreDeps {
  db: Kysely<MemoryTables>;
  dialect: DialectName;
  clock: Clock;
  ids: IdGen;
  /** `memory.changed` after each batch that really changed something. */
  emit?: MemoryEmit | undefined;
  log?: Logger | undefined;
}

export interface DocumentInput {
  namespace: string;
  external_id: string;
  title: string;
  body: string;
  metadata?: Record<string, unknown> | undefined;
  /** Default `note`. */
  source_kind?: string | undefined;
}

/** A namespace's label and kind, recorded when it is first written to. */
export interface NamespaceInfo {
  label?: string | undefined;
  kind?: string | undefined;
}

export type WriteOp =
  | { op: 'put'; doc: Omit<DocumentInput, 'namespace'> }
  | { op: 'delete'; external_id: string }
  /** Give a live document another external id, keeping its identity (a renamed file); no change by itself. */
  | { op: 'move'; from: string; to: string };

export type WriteOpResult =
  | ({ op: 'put' } & StoreDocumentResult)
  | { op: 'delete'; deleted: boolean }
  /** false: nothing to move, or the target id is taken (then delete and put instead). */
  | { op: 'move'; moved: boolean };

export interface WriteSummary {
  added: number;
  modified: number;
  removed: number;
  moved: number;
  unchanged: number;
  results: WriteOpResult[];
}

export interface ListOptions {
  namespace?: string | undefined;
  limit?: number | undefined;
  offset?: number | undefined;
}

export interface RecentOptions {
  namespace?: string | undefined;
  /** Only documents updated after this time (epoch ms). */
  since?: number | null | undefined;
  limit: number;
}

export interface CheckpointOptions {
  /** The high-water mark to record (default: the head now). A world records what it observed. */
  seq?: number | undefined;
  /** A caller-chosen id makes creation idempotent (a resumed commit). */
  id?: string | undefined;
}

export interface DiffOptions {
  /** Entries kept per namespace (counts stay exact). Default 100. */
  entriesPerNamespace?: number | undefined;
}

const PREVIEW_CHARS = 200;
const DEFAULT_KIND = 'note';

type DocRow = Pick<
  MemoryDocumentsTable,
  'namespace' | 'source_kind' | 'external_id' | 'title' | 'body' | 'metadata' | 'content_hash' | 'created_at' | 'updated_at' | 'deleted_at'
> & { id: number };

export class MemoryStore {
  readonly dialect: DialectName;
  private readonly db: Kysely<MemoryTables>;

  constructor(private readonly deps: MemoryStoreDeps) {
    this.db = deps.db;
    this.dialect = deps.dialect;
  }

  // ---- writes -----------------------------------------------------------------------------

  async storeDocument(input: DocumentInput, info: NamespaceInfo = {}): Promise<StoreDocumentResult> {
    const { namespace, ...doc } = input;
    const summary = await this.write(namespace, [{ op: 'put', doc }], info);
    const result = summary.results[0]!;
    return result.op === 'put' ? { id: result.id, created: result.created, changed: result.changed } : { id: 0, created: false, changed: false };
  }

  async deleteDocument(namespace: string, externalId: string): Promise<boolean> {
    const summary = await this.write(namespace, [{ op: 'delete', external_id: externalId }]);
    return summary.removed > 0;
  }

  /** Apply a batch of writes to one namespace in one transaction. */
  async write(namespace: string, ops: readonly WriteOp[], info: NamespaceInfo = {}): Promise<WriteSummary> {
    checkNamespace(namespace);
    const prepared = ops.map((op) => (op.op === 'put' ? { op, doc: normalize(op.doc) } : { op, doc: undefined }));
    for (const p of prepared) checkExternalId(p.op.op === 'move' ? p.op.to : p.op.op === 'put' ? p.op.doc.external_id : p.op.external_id);
    const now = this.deps.clock.now();
    const summary: WriteSummary = { added: 0, modified: 0, removed: 0, moved: 0, unchanged: 0, results: [] };
    await this.db.transaction().execute(async (trx) => {
      const seq = new SeqAllocator(trx, this.dialect);
      // Postgres: lock first, so two writers of the same new external id never both insert it.
      if (this.dialect === 'postgres') await seq.lock();
      let delta = 0;
      let changed = false;
      const touch = async () => {
        if (changed) return;
        changed = true;
        await trx
          .insertInto('memory_namespaces')
          .values({
            namespace,
            label: info.label ?? namespace,
            kind: info.kind ?? 'rpc',
            documents: 0,
            created_at: now,
            last_sync_at: null,
            last_change_at: null,
            last_error: null,
          })
          .onConflict((oc) => oc.column('namespace').doNothing())
          .execute();
      };
      for (const p of prepared) {
        const op = p.op;
        if (op.op === 'put') {
          const doc = p.doc!;
          const existing = await trx
            .selectFrom('memory_documents')
            .select(['id', 'content_hash', 'deleted_at', 'created_seq', 'change_seq'])
            .where('namespace', '=', namespace)
            .where('external_id', '=', doc.external_id)
            .executeTakeFirst();
          if (existing && existing.deleted_at === null && existing.content_hash === doc.content_hash) {
            summary.unchanged++;
            summary.results.push({ op: 'put', id: existing.id, created: false, changed: false });
            continue;
          }
          await touch();
          const s = await seq.next();
          const fields = {
            source_kind: doc.source_kind,
            title: doc.title,
            body: doc.body,
            metadata: JSON.stringify(doc.metadata),
            content_hash: doc.content_hash,
            updated_at: now,
            change_seq: s,
          };
          if (!existing) {
            const row = await trx
              .insertInto('memory_documents')
              .values({
                namespace,
                external_id: doc.external_id,
                ...fields,
                created_at: now,
                deleted_at: null,
                created_seq: s,
                prior_created_seq: null,
                prior_deleted_seq: null,
              })
              .returning('id')
              .executeTakeFirstOrThrow();
            delta++;
            summary.added++;
            summary.results.push({ op: 'put', id: Number(row.id), created: true, changed: true });
          } else if (existing.deleted_at !== null) {
            // A tombstone comes back: a new incarnation, remembering the last one for diffs.
            await trx
              .updateTable('memory_documents')
              .set({ ...fields, deleted_at: null, created_seq: s, prior_created_seq: existing.created_seq, prior_deleted_seq: existing.change_seq })
              .where('id', '=', existing.id)
              .execute();
            delta++;
            summary.added++;
            summary.results.push({ op: 'put', id: existing.id, created: true, changed: true });
          } else {
            await trx.updateTable('memory_documents').set(fields).where('id', '=', existing.id).execute();
            summary.modified++;
            summary.results.push({ op: 'put', id: existing.id, created: false, changed: true });
          }
        } else if (op.op === 'delete') {
          const existing = await trx
            .selectFrom('memory_documents')
            .select(['id'])
            .where('namespace', '=', namespace)
            .where('external_id', '=', op.external_id)
            .where('deleted_at', 'is', null)
            .executeTakeFirst();
          if (!existing) {
            summary.results.push({ op: 'delete', deleted: false });
            continue;
          }
          await touch();
          const s = await seq.next();
          // The tombstone keeps its title (a diff says what was removed) but not its body.
          await trx
            .updateTable('memory_documents')
            .set({ deleted_at: now, body: '', content_hash: '', change_seq: s, updated_at: now })
            .where('id', '=', existing.id)
            .execute();
          delta--;
          summary.removed++;
          summary.results.push({ op: 'delete', deleted: true });
        } else {
          const [from, to] = await Promise.all([
            trx
              .selectFrom('memory_documents')
              .select(['id', 'deleted_at'])
              .where('namespace', '=', namespace)
              .where('external_id', '=', op.from)
              .executeTakeFirst(),
            trx.selectFrom('memory_documents').select(['id']).where('namespace', '=', namespace).where('external_id', '=', op.to).executeTakeFirst(),
          ]);
          if (!from || from.deleted_at !== null || to) {
            summary.results.push({ op: 'move', moved: false });
            continue;
          }
          await trx.updateTable('memory_documents').set({ external_id: op.to }).where('id', '=', from.id).execute();
          summary.moved++;
          summary.results.push({ op: 'move', moved: true });
        }
      }
      await seq.save();
      if (changed) {
        await trx
          .updateTable('memory_namespaces')
          .set((eb) => ({ documents: eb('documents', '+', delta), last_change_at: now }))
          .where('namespace', '=', namespace)
          .execute();
      }
    });
    if (summary.added + summary.modified + summary.removed > 0) {
      this.deps.emit?.('memory.changed', { namespace, added: summary.added, modified: summary.modified, removed: summary.removed });
    }
    return summary;
  }

  /** Record a namespace (a configured source) with its label and kind, or update them. */
  async registerNamespace(namespace: string, info: { label: string; kind: string }): Promise<void> {
    checkNamespace(namespace);
    const row = await this.db.selectFrom('memory_namespaces').select(['label', 'kind']).where('namespace', '=', namespace).executeTakeFirst();
    if (!row) {
      await this.db
        .insertInto('memory_namespaces')
        .values({
          namespace,
          label: info.label,
          kind: info.kind,
          documents: 0,
          created_at: this.deps.clock.now(),
          last_sync_at: null,
          last_change_at: null,
          last_error: null,
        })
        .onConflict((oc) => oc.column('namespace').doUpdateSet({ label: info.label, kind: info.kind }))
        .execute();
    } else if (row.label !== info.label || row.kind !== info.kind) {
      await this.db.updateTable('memory_namespaces').set({ label: info.label, kind: info.kind }).where('namespace', '=', namespace).execute();
    }
  }

  /** A source finished a sync: its time, and its error (null when it went well). */
  async recordSync(namespace: string, error: string | null): Promise<void> {
    await this.db.updateTable('memory_namespaces').set({ last_sync_at: this.deps.clock.now(), last_error: error }).where('namespace', '=', namespace).execute();
  }

  // ---- reads ------------------------------------------------------------------------------

  async getDocument(namespace: string, externalId: string): Promise<MemoryDocument | undefined> {
    const row = await this.db
      .selectFrom('memory_documents')
      .select(['id', 'namespace', 'source_kind', 'external_id', 'title', 'body', 'metadata', 'content_hash', 'created_at', 'updated_at', 'deleted_at'])
      .where('namespace', '=', namespace)
      .where('external_id', '=', externalId)
      .executeTakeFirst();
    return row ? toDocument(row) : undefined;
  }

  /**
   * Live documents of one file-like key: the key itself and `key#…` (an mbox's messages).
   * One range scan on the (namespace, external_id) index.
   */
  async documentsUnder(namespace: string, key: string): Promise<{ external_id: string; content_hash: string }[]> {
    return this.db
      .selectFrom('memory_documents')
      .select(['external_id', 'content_hash'])
      .where('namespace', '=', namespace)
      .where('deleted_at', 'is', null)
      .where((eb) => eb.or([eb('external_id', '=', key), eb.and([eb('external_id', '>=', `${key}#`), eb('external_id', '<', `${key}$`)])]))
      .execute();
  }

  async listDocuments(opts: ListOptions = {}): Promise<{ documents: MemoryDocumentSummary[]; total: number }> {
    const limit = opts.limit ?? 100;
    const rows = await this.db
      .selectFrom('memory_documents')
      .select(['id', 'namespace', 'source_kind', 'external_id', 'title', 'body', 'metadata', 'content_hash', 'created_at', 'updated_at', 'deleted_at'])
      .where('deleted_at', 'is', null)
      .$if(opts.namespace !== undefined, (q) => q.where('namespace', '=', opts.namespace!))
      .orderBy('updated_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(opts.offset ?? 0)
      .execute();
    // The namespace counters, not a COUNT(*) over every document.
    const counts = await this.db
      .selectFrom('memory_namespaces')
      .select('documents')
      .$if(opts.namespace !== undefined, (q) => q.where('namespace', '=', opts.namespace!))
      .execute();
    const total = counts.reduce((n, r) => n + Number(r.documents), 0);
    return { documents: rows.map((r) => toSummary(toDocument(r))), total };
  }

  /** The most recently updated live documents (of one namespace, or all; optionally only those updated after `since`). */
  async recent(opts: RecentOptions): Promise<MemoryDocument[]> {
    const rows = await this.db
      .selectFrom('memory_documents')
      .select(['id', 'namespace', 'source_kind', 'external_id', 'title', 'body', 'metadata', 'content_hash', 'created_at', 'updated_at', 'deleted_at'])
      .where('deleted_at', 'is', null)
      .$if(opts.namespace !== undefined, (q) => q.where('namespace', '=', opts.namespace!))
      .$if(opts.since !== undefined && opts.since !== null, (q) => q.where('updated_at', '>', opts.since!))
      .orderBy('updated_at', 'desc')
      .orderBy('id', 'desc')
      .limit(Math.max(0, opts.limit))
      .execute();
    return rows.map(toDocument);
  }

  /** Full-text recall, ranked best first. Any text is a valid query; one with no words finds nothing. */
  recall(opts: { query: string; namespace?: string | undefined; limit?: number | undefined }): Promise<RecallHit[]> {
    return recall(this.db, this.dialect, { query: opts.query, namespace: opts.namespace, limit: opts.limit ?? 10 });
  }

  async namespaces(): Promise<MemoryNamespace[]> {
    const rows = await this.db.selectFrom('memory_namespaces').selectAll().orderBy('namespace').execute();
    return rows.map((r) => ({
      namespace: r.namespace,
      label: r.label,
      kind: r.kind,
      documents: Number(r.documents),
      last_sync_at: r.last_sync_at,
      last_change_at: r.last_change_at,
      last_error: r.last_error,
    }));
  }

  // ---- change tracking --------------------------------------------------------------------

  /** The change sequence's high-water mark: it moves on every real write and delete, and only then. */
  async head(): Promise<number> {
    const row = await this.db.selectFrom('memory_state').select('seq').where('id', '=', 1).executeTakeFirstOrThrow();
    return Number(row.seq);
  }

  /**
   * Has anything changed since sequence `seq`? One primary-key read; with `except`, changes to
   * that namespace do not count (a world that writes its own namespace, such as the conscious
   * loop's actionables): one range read on the change index, bounded by the changes since `seq`.
   */
  async changedSince(seq: number, opts: { except?: string | undefined } = {}): Promise<boolean> {
    if ((await this.head()) <= seq) return false;
    if (opts.except === undefined) return true;
    const row = await this.db
      .selectFrom('memory_documents')
      .select('id')
      .where('change_seq', '>', seq)
      .where('namespace', '!=', opts.except)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Record what every namespace holds now (or at `opts.seq`): one row, its high-water mark. */
  async createCheckpoint(label: string, opts: CheckpointOptions = {}): Promise<MemoryBaseline> {
    if (opts.id) {
      const existing = await this.getCheckpoint(opts.id);
      if (existing) return existing;
    }
    const head = await this.head();
    const seq = opts.seq ?? head;
    if (!Number.isInteger(seq) || seq < 0 || seq > head) {
      throw new SubconsciousError('invalid_params', `checkpoint sequence ${seq} is outside 0..${head}`);
    }
    const counts = await this.db.selectFrom('memory_namespaces').select(['namespace', 'documents']).execute();
    const row = { id: opts.id ?? this.deps.ids(), label, seq, created_at: this.deps.clock.now() };
    await this.db
      .insertInto('memory_checkpoints')
      .values({ ...row, namespaces: JSON.stringify(Object.fromEntries(counts.map((c) => [c.namespace, Number(c.documents)]))) })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return row;
  }

  async getCheckpoint(id: string): Promise<MemoryBaseline | undefined> {
    const row = await this.db.selectFrom('memory_checkpoints').select(['id', 'label', 'seq', 'created_at']).where('id', '=', id).executeTakeFirst();
    return row ? { id: row.id, label: row.label, seq: Number(row.seq), created_at: Number(row.created_at) } : undefined;
  }

  /** The newest checkpoint of a label (a world's baseline), or undefined. */
  async latestCheckpoint(label: string): Promise<MemoryBaseline | undefined> {
    const row = await this.db
      .selectFrom('memory_checkpoints')
      .select(['id', 'label', 'seq', 'created_at'])
      .where('label', '=', label)
      .orderBy('seq', 'desc')
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? { id: row.id, label: row.label, seq: Number(row.seq), created_at: Number(row.created_at) } : undefined;
  }

  /** Added, modified and removed documents per namespace since a checkpoint: O(changes). */
  async diffSinceCheckpoint(id: string, opts: DiffOptions = {}): Promise<MemoryDiff> {
    const cp = await this.getCheckpoint(id);
    if (!cp) throw new SubconsciousError('not_found', `No memory checkpoint "${id}".`, { hint: 'Create one with createCheckpoint(label) first.' });
    return this.diffSince(cp, opts);
  }

  /** The same diff from a checkpoint already read (or any sequence, as a pseudo-checkpoint). */
  diffSince(since: MemoryBaseline, opts: DiffOptions = {}): Promise<MemoryDiff> {
    return diffSince(this.db, since, opts.entriesPerNamespace ?? 100);
  }

  /**
   * Keep the `keep` newest checkpoints of a label (and any id in `protect`), delete the rest,
   * then drop tombstones no remaining checkpoint can see. Returns the checkpoints deleted.
   */
  async pruneCheckpoints(label: string, keep: number, protect: readonly string[] = []): Promise<number> {
    const rows = await this.db
      .selectFrom('memory_checkpoints')
      .select(['id'])
      .where('label', '=', label)
      .orderBy('seq', 'desc')
      .orderBy('created_at', 'desc')
      .execute();
    const doomed = rows
      .slice(Math.max(0, keep))
      .map((r) => r.id)
      .filter((id) => !protect.includes(id));
    if (doomed.length) await this.db.deleteFrom('memory_checkpoints').where('id', 'in', doomed).execute();
    await this.compactTombstones();
    return doomed.length;
  }

  /** Delete tombstones older than every checkpoint (no diff can report them any more). */
  async compactTombstones(): Promise<number> {
    const min = await this.db
      .selectFrom('memory_checkpoints')
      .select((eb) => eb.fn.min('seq').as('seq'))
      .executeTakeFirst();
    const floor = min?.seq === null || min?.seq === undefined ? await this.head() : Number(min.seq);
    const res = await this.db.deleteFrom('memory_documents').where('deleted_at', 'is not', null).where('change_seq', '<=', floor).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

/** Hands out change sequences inside one transaction and writes the high-water mark back once. */
class SeqAllocator {
  private current: number | null = null;
  private dirty = false;

  constructor(
    private readonly trx: Transaction<MemoryTables>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * Read the high-water mark; on Postgres with a row lock held until commit, which serialises
   * writers, so sequences follow commit order (a checkpoint never misses a write in flight).
   * SQLite's one connection serialises transactions already.
   */
  async lock(): Promise<void> {
    if (this.current !== null) return;
    const row = await this.trx
      .selectFrom('memory_state')
      .select('seq')
      .where('id', '=', 1)
      .$if(this.dialect === 'postgres', (q) => q.forUpdate())
      .executeTakeFirstOrThrow();
    this.current = Number(row.seq);
  }

  async next(): Promise<number> {
    await this.lock();
    this.dirty = true;
    return ++this.current!;
  }

  async save(): Promise<void> {
    if (this.dirty && this.current !== null) await this.trx.updateTable('memory_state').set({ seq: this.current }).where('id', '=', 1).execute();
  }
}

interface NormalizedDoc {
  external_id: string;
  source_kind: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
  content_hash: string;
}

/** Recall's match markers (private-use characters): a stored text never holds them, so a snippet's marks are always the engine's. */
const SNIPPET_MARKERS = /[\uE000\uE001]/g;

function normalize(doc: Omit<DocumentInput, 'namespace'>): NormalizedDoc {
  const metadata: Record<string, unknown> = { ...(doc.metadata ?? {}) };
  let body = doc.body.replace(SNIPPET_MARKERS, '');
  if (body.length > MAX_BODY_CHARS) {
    metadata.truncated_from_chars = body.length;
    body = body.slice(0, MAX_BODY_CHARS);
  }
  const collapsed = doc.title.replace(SNIPPET_MARKERS, '').replace(/\s+/g, ' ').trim();
  const title = (collapsed || '(untitled)').slice(0, MAX_TITLE_CHARS);
  const source_kind = doc.source_kind ?? DEFAULT_KIND;
  return { external_id: doc.external_id, source_kind, title, body, metadata, content_hash: documentHash({ source_kind, title, body, metadata }) };
}

function checkNamespace(namespace: string): void {
  if (!NAMESPACE_PATTERN.test(namespace)) {
    throw new SubconsciousError(
      'invalid_params',
      `namespace "${namespace.slice(0, 80)}" must be 1–64 letters, digits or _ . : @ - (starting with a letter or digit)`,
    );
  }
}

function checkExternalId(id: string): void {
  if (id.length === 0 || id.length > 512) throw new SubconsciousError('invalid_params', 'external_id must be 1–512 characters');
}

function toDocument(r: DocRow): MemoryDocument {
  return {
    id: Number(r.id),
    namespace: r.namespace,
    source_kind: r.source_kind,
    external_id: r.external_id,
    title: r.title,
    body: r.body,
    metadata: parseMetadata(r.metadata),
    content_hash: r.content_hash,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    deleted_at: r.deleted_at === null ? null : Number(r.deleted_at),
  };
}

function toSummary(d: MemoryDocument): MemoryDocumentSummary {
  const { body, ...rest } = d;
  const flat = body.replace(/\s+/g, ' ').trim();
  return { ...rest, preview: flat.length <= PREVIEW_CHARS ? flat : `${flat.slice(0, PREVIEW_CHARS - 1)}…`, body_chars: body.length };
}
