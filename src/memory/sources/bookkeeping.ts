/**
 * The sync bookkeeping every source kind shares: the last result and the totals since start,
 * counting a write's summary into a result, finishing a sync (its time recorded on the
 * namespace, `memory.synced` emitted), and the per-item rows of `memory_source_files` (a
 * folder's files, an IMAP folder's high-water mark, a skipped message with its reason).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.js';
import type { MemoryEmit, MemoryStore, WriteOp, WriteSummary } from '../store.js';
import type { MemoryTables } from '../tables.js';
import type { SkippedFile, SyncResult } from './folder.js';

export interface BookkeepingDeps {
  store: MemoryStore;
  db: Kysely<MemoryTables>;
  clock: Clock;
  emit?: MemoryEmit | undefined;
}

export type Totals = { syncs: number; added: number; modified: number; removed: number };

/** Add a write's summary to a sync result. */
export function count(result: SyncResult, s: Pick<WriteSummary, 'added' | 'modified' | 'removed' | 'unchanged'>): void {
  result.added += s.added;
  result.modified += s.modified;
  result.removed += s.removed;
  result.unchanged += s.unchanged;
}

/**
 * A source that reads everything each sync (a calendar, an MCP server's resources): write the
 * documents it has now under `key`, and remove the ones under `key` it no longer has — except
 * those in `keep` (what an item that could not be read this time had before).
 */
export async function writeSnapshot(
  store: MemoryStore,
  namespace: string,
  key: string,
  puts: readonly Extract<WriteOp, { op: 'put' }>[],
  info: { label: string; kind: string },
  result: SyncResult,
  keep: ReadonlySet<string> = new Set(),
): Promise<void> {
  const ops: WriteOp[] = [...puts];
  const wanted = new Set([...puts.map((o) => o.doc.external_id), ...keep]);
  for (const d of await store.documentsUnder(namespace, key)) if (!wanted.has(d.external_id)) ops.push({ op: 'delete', external_id: d.external_id });
  for (let i = 0; i < ops.length; i += 500) count(result, await store.write(namespace, ops.slice(i, i + 500), info));
}

export class SyncBookkeeping {
  private lastResult: SyncResult | null = null;
  private readonly sinceStart: Totals = { syncs: 0, added: 0, modified: 0, removed: 0 };

  constructor(
    private readonly deps: BookkeepingDeps,
    private readonly namespace: string,
    /** How skipped rows are listed: by path (a folder) or newest first (messages). */
    private readonly skippedOrder: 'path' | 'newest' = 'path',
  ) {}

  get last(): SyncResult | null {
    return this.lastResult;
  }

  get totals(): Totals {
    return { ...this.sinceStart };
  }

  /** Close a sync: its duration, the namespace's sync time and error, the totals, the event. */
  async finish(result: SyncResult, started: number): Promise<SyncResult> {
    result.duration_ms = this.deps.clock.now() - started;
    await this.deps.store.recordSync(this.namespace, result.error);
    this.lastResult = result;
    this.sinceStart.syncs++;
    this.sinceStart.added += result.added;
    this.sinceStart.modified += result.modified;
    this.sinceStart.removed += result.removed;
    this.deps.emit?.('memory.synced', {
      namespace: this.namespace,
      added: result.added,
      modified: result.modified,
      removed: result.removed,
      renamed: result.renamed,
      skipped: result.skipped.length,
      error: result.error,
    });
    return result;
  }

  /** Items skipped the last time they were read, with their reasons; `limit` caps the list. */
  async skippedFiles(limit?: number): Promise<SkippedFile[]> {
    const rows = await this.deps.db
      .selectFrom('memory_source_files')
      .select(['path', 'error'])
      .where('namespace', '=', this.namespace)
      .where('error', 'is not', null)
      .$if(this.skippedOrder === 'path', (q) => q.orderBy('path'))
      .$if(this.skippedOrder === 'newest', (q) => q.orderBy('updated_at', 'desc'))
      .$if(limit !== undefined, (q) => q.limit(limit!))
      .execute();
    return rows.map((r) => ({ path: r.path, reason: r.error! }));
  }

  async skippedCount(): Promise<number> {
    const row = await this.deps.db
      .selectFrom('memory_source_files')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('namespace', '=', this.namespace)
      .where('error', 'is not', null)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Upsert one item's row (`error` set: skipped with that reason). */
  async record(path: string, row: { size: number; mtime_ms: number; hash: string; error: string | null }): Promise<void> {
    const values = { ...row, updated_at: this.deps.clock.now() };
    await this.deps.db
      .insertInto('memory_source_files')
      .values({ namespace: this.namespace, path, ...values })
      .onConflict((oc) => oc.columns(['namespace', 'path']).doUpdateSet(values))
      .execute();
  }

  async forget(paths: readonly string[]): Promise<void> {
    for (let i = 0; i < paths.length; i += 500)
      await this.deps.db
        .deleteFrom('memory_source_files')
        .where('namespace', '=', this.namespace)
        .where('path', 'in', paths.slice(i, i + 500))
        .execute();
  }

  /** Every row of the namespace (a resync starts from none). */
  async forgetAll(): Promise<void> {
    await this.deps.db.deleteFrom('memory_source_files').where('namespace', '=', this.namespace).execute();
  }
}
