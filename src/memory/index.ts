/**
 * The memory layer (issue 13): documents per namespace, full-text recall, folder sources, and
 * change tracking (checkpoints and diffs). Worlds get a `MemoryStore` from the composition root.
 *
 *   await applyMigrations(db, dialect, memoryMigrations);
 *   const memory = new MemoryStore({ db: tablesView<MemoryTables>(db), dialect, clock, ids, emit, log });
 *   const sources = new MemorySources({ store: memory, db, clock, log, emit, workspace, sources: config.sources });
 *   await sources.start();                             // the daemon; a world's observe awaits sources.ready()
 *   dispatcher.add(...implement(…, memoryStoreHandlers(memory)))   // via the memory module's contract
 *
 * What it provides to other modules:
 *   memory.recall({ query, namespace?, limit })        ranked hits with snippets
 *   memory.recent({ namespace?, since?, limit })       latest documents (the conscious loop's per-namespace recall)
 *   memory.head() / memory.changedSince(seq)           O(1) "did anything change?" (quiet ticks, fingerprints)
 *   memory.createCheckpoint(label) / diffSinceCheckpoint(id) / diffSince(baseline) + renderDiff(diff)
 *   memory.storeDocument / deleteDocument / write(namespace, ops)   (bots' MEMORY: notes via noteDocument)
 *   recentMemory(memory)                               the tasks world's MemorySource
 *
 * Services (`services.ts`): `MemoryStoreKey` (the store), `MemorySyncKey` (`ready()`: the
 * sources' first sync; await it in observe so a one-shot `tick` reads the folders first) and
 * `MemoryNotificationsKey` (the memory world's notifications, for the bots host's thread).
 * The memory module (`src/worlds/memory/module.ts`) creates the store and the sources and
 * provides all three.
 */
export { MemoryStore } from './store.js';
export type {
  MemoryStoreDeps,
  MemoryEmit,
  DocumentInput,
  NamespaceInfo,
  WriteOp,
  WriteOpResult,
  WriteSummary,
  ListOptions,
  RecentOptions,
  CheckpointOptions,
  DiffOptions,
} from './store.js';
export { renderDiff, totalChanges, emptyTotals, RENDER_LINES_PER_SOURCE, type MemoryDiff, type NamespaceDiff, type DiffEntry } from './diff.js';
export { parseQuery, fts5Match, isEmptyQuery, MAX_QUERY_TERMS, type ParsedQuery } from './query.js';
export { sqliteRecallSql, readSnippet, MATCH_OPEN, MATCH_CLOSE, SNIPPET_OPEN, SNIPPET_CLOSE } from './recall.js';
export { documentHash, canonicalJson, sha256Hex } from './hash.js';
export { memoryMigrations, MEMORY_STORE_TABLES, PG_INDEXED_BODY_CHARS } from './migrations.js';
export type * from './tables.js';
export {
  memorySourcesSchema,
  memorySourceSchema,
  folderSourceSchema,
  imapSourceSchema,
  icsSourceSchema,
  caldavSourceSchema,
  mcpSourceSchema,
  resolveSourcePath,
  type MemorySourceConfig,
  type FolderSourceConfig,
  type ImapSourceConfig,
  type IcsSourceConfig,
  type CaldavSourceConfig,
  type McpSourceConfig,
} from './config.js';
export { FolderSource, type FolderSourceDeps, type FolderSourceOptions, type SyncResult, type SkippedFile } from './sources/folder.js';
export { MemorySources, RETRY_MIN_MS, type MemorySourcesDeps } from './sources/manager.js';
export { IcsSource, type IcsSourceDeps, type IcsSourceOptions } from './sources/ics.js';
export { CaldavSource, type CaldavSourceDeps, type CaldavSourceOptions } from './sources/caldav.js';
export { discoverCalendars, calendarObjects, type DavAuth, type DavCalendar, type DavObject } from './sources/dav.js';
export { McpSource, type McpSourceDeps, type McpSourceOptions, type McpSourceServer } from './sources/mcp.js';
export { SyncBookkeeping, writeSnapshot } from './sources/bookkeeping.js';
export { calendarDocuments, type CalendarDocument } from './sources/calendar.js';
export { ImapSource, type ImapSourceDeps, type ImapSourceOptions } from './sources/imap.js';
export { SyncGate, type MemorySource, type SourceKind, type SyncProgress } from './sources/source.js';
export { createSource } from './sources/create.js';
export { classifyFailure } from './sources/failure.js';
export { readSecret, type SecretRef } from './sources/secret.js';
export { parseFile, isSupported, SUPPORTED_EXTENSIONS, type ParsedFile, type ParsedFileDocument } from './sources/files.js';
export { parseEmail, type ParsedEmail } from './sources/email.js';
export { splitMbox, type MboxMessage } from './sources/mbox.js';
export { ParseError } from './sources/mime.js';
export { htmlToText } from './sources/html.js';
export { memoryStoreHandlers, memorySourcesHandlers, type MemoryStoreHandlers } from './rpc.js';
export { recentMemory, noteDocument, type RecentMemoryItem } from './adapters.js';
export { MemoryNotificationsKey, MemoryStoreKey, MemorySyncKey, type MemoryNotificationFeed, type MemorySync } from './services.js';
