/**
 * The memory store's tables (both dialects; conventions of `src/store/schema.ts`).
 *
 * Change tracking: `memory_state.seq` is a counter bumped by every real write (a changed hash, a
 * delete). Each document row carries the sequence of its last change (`change_seq`) and of its
 * current incarnation's creation (`created_seq`), so a checkpoint is one row holding a high-water
 * mark and a diff is one indexed range query over `change_seq` — O(changes), not O(documents).
 * Deletes keep the row as a tombstone (`deleted_at`, body emptied) so a diff can say "removed".
 *
 * Full-text search lives beside the table: SQLite an FTS5 external-content table `memory_fts`
 * kept in step by triggers (in the writing transaction); Postgres a generated `tsvector` column
 * `search` with a GIN index. Neither is declared here: only raw SQL in `recall.ts` touches them.
 */
import type { ColumnType, Generated } from 'kysely';

export interface MemoryDocumentsTable {
  id: Generated<number>;
  namespace: string;
  source_kind: string;
  external_id: string;
  title: string;
  body: string;
  /** JSON object. */
  metadata: string;
  content_hash: string;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
  /** The sequence at which this incarnation was created (a revived tombstone gets a new one). */
  created_seq: number;
  /** The sequence of the last real change (write or delete). */
  change_seq: number;
  /** A revived tombstone: when its previous incarnation was created and deleted (else null). */
  prior_created_seq: number | null;
  prior_deleted_seq: number | null;
}

export interface MemoryNamespacesTable {
  namespace: string;
  label: string;
  kind: string;
  /** Live documents, maintained in the writing transaction. */
  documents: ColumnType<number, number | undefined, number>;
  last_sync_at: number | null;
  last_change_at: number | null;
  last_error: string | null;
  created_at: number;
}

/** One row (id = 1): the change sequence's high-water mark. */
export interface MemoryStateTable {
  id: number;
  seq: number;
}

export interface MemoryCheckpointsTable {
  id: string;
  label: string;
  /** Everything with `change_seq <= seq` is in the checkpoint. */
  seq: number;
  created_at: number;
  /** JSON `{ namespace: live documents }` when it was made (for people; diffs use `seq`). */
  namespaces: string;
}

/** What a folder source last saw of each file: a sync stats first and hashes only what changed. */
export interface MemorySourceFilesTable {
  namespace: string;
  /** Relative to the source's folder, `/`-separated. */
  path: string;
  size: number;
  mtime_ms: number;
  /** sha256 of the file's bytes. */
  hash: string;
  /** Why the file was skipped the last time it was read, or null. */
  error: string | null;
  updated_at: number;
}

export interface MemoryTables {
  memory_documents: MemoryDocumentsTable;
  memory_namespaces: MemoryNamespacesTable;
  memory_state: MemoryStateTable;
  memory_checkpoints: MemoryCheckpointsTable;
  memory_source_files: MemorySourceFilesTable;
}
