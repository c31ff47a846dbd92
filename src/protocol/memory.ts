/**
 * The memory module's contract: the memory store (documents, namespaces, recall) that any host
 * can push its sources into, and the memory world's outputs (notifications on the thread
 * `subconscious:user`, to-dos, goals, the diff since its baseline).
 *
 * Browser-safe: zod and other protocol files only. The wire types below are the rows as the
 * page and the CLI see them; the daemon's code imports them from here.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

// ---- wire types ---------------------------------------------------------------------------

/** A JSON object of document metadata (an email's sender and date, a file's path…). */
export type MemoryMetadata = Record<string, unknown>;

export interface MemoryDocument {
  id: number;
  /** One per connected source (a folder, a mailbox, a bot's notes). */
  namespace: string;
  /** What produced it: `email`, `file`, `note`, or whatever a pushing host says. */
  source_kind: string;
  /** The source's own id: storing the same one again updates the document in place. */
  external_id: string;
  title: string;
  body: string;
  metadata: MemoryMetadata;
  /** sha256 of title, body, metadata and source kind: an unchanged hash is not a change. */
  content_hash: string;
  created_at: number;
  updated_at: number;
  /** Set on a deleted document (kept as a tombstone so diffs can say "removed"). */
  deleted_at: number | null;
}

/** A document in a listing: its body cut to a short preview. */
export type MemoryDocumentSummary = Omit<MemoryDocument, 'body'> & { preview: string; body_chars: number };

export interface MemoryNamespace {
  namespace: string;
  /** A person's name for it (a source's `label`, else the namespace). */
  label: string;
  /** The kind of source that fills it: `folder`, `rpc`, `bots`, … */
  kind: string;
  /** Live documents (tombstones not counted). */
  documents: number;
  /** When its source last finished a sync (null: never synced, e.g. pushed over RPC). */
  last_sync_at: number | null;
  /** When a document in it last really changed. */
  last_change_at: number | null;
  /** The last sync's error, or null. */
  last_error: string | null;
}

export interface RecallHit {
  id: number;
  namespace: string;
  source_kind: string;
  external_id: string;
  title: string;
  /** The best passage of the body, matches marked `**like this**` (for terminals and prompts). */
  snippet: string;
  /** The same passage without marks: what a page shows, marking `highlights`. */
  snippet_text: string;
  /**
   * The matches in `snippet_text`: `[start, end)` offsets in UTF-16 code units, in order. Only
   * the engine's matches: a document's own `**` is text (the markers the engines use internally,
   * U+E000 and U+E001, are stripped from every stored title and body).
   */
  highlights: Array<[number, number]>;
  /** Higher is more relevant (comparable within one answer only). */
  score: number;
  updated_at: number;
  metadata: MemoryMetadata;
}

/** A configured source (`[[worlds.memory.sources]]`) as this daemon runs it. */
export interface MemorySourceStatus {
  namespace: string;
  label: string;
  /** `folder`, `imap`, … (older clients saw only `folder`). */
  kind: MemorySourceKind;
  /** Where its data lives: the folder (absolute path), `imaps://user@host:993 (INBOX, Sent)`, a URL. */
  path: string;
  /** It follows changes live: a folder watcher, IMAP IDLE (otherwise only the periodic sync sees changes). */
  watching: boolean;
  /** A sync is running now. */
  syncing: boolean;
  sync_interval_minutes: number;
  /** This process's last finished sync of it (null: none yet; `memory.namespaces` has its time). */
  last_sync: MemorySyncSummary | null;
  /** Every sync of this process together: how many, and the document changes they made. */
  since_start: { syncs: number; added: number; modified: number; removed: number };
  /** Files (or messages) skipped the last time they were read, and why (at most 20). */
  skipped: Array<{ path: string; reason: string }>;
  skipped_total: number;
  /** The running sync's progress: e.g. INBOX, 1,200 of 10,000 messages (null when none runs). */
  progress: { part: string; done: number; total: number } | null;
  /** When the next periodic sync (or, after a failure, the next try) is due; null when none is planned. */
  next_sync_at: number | null;
  /** Failed syncs in a row (the backoff grows with it); 0 after a good one. */
  failures: number;
  /** Paused by a person: no syncs, no follower; its documents stay. */
  paused: boolean;
  /** `config`: from subconscious.toml (remove it there); `added`: over RPC, the CLI or the page (memory.sources_remove). */
  origin: 'config' | 'added';
  /** Live documents in its namespace. */
  documents: number;
}

export type MemorySourceKind = 'folder' | 'imap' | 'ics' | 'caldav' | 'mcp';

/** Why a source's sync (or its connection test) failed, and what to do. */
export interface MemorySourceFailure {
  /** The step that failed: `host` (unreachable), `tls`, `auth` (login refused), `folder` (missing), `other`. */
  kind: 'host' | 'tls' | 'auth' | 'folder' | 'other';
  message: string;
  hint: string;
}

export interface MemorySyncSummary {
  /** Supported files found. */
  files: number;
  added: number;
  modified: number;
  removed: number;
  renamed: number;
  /** Files (or mbox messages) skipped in this sync. */
  skipped: number;
  /** The whole sync failed (the folder is missing, the server refused the login): nothing more was changed. */
  error: string | null;
  /** What failed and what to do (sources with a server; null for a folder). */
  failure?: MemorySourceFailure | null;
  duration_ms: number;
}

export interface StoreDocumentResult {
  id: number;
  /** A new document (or one brought back from a tombstone). */
  created: boolean;
  /** False when the content hash was unchanged: nothing was written. */
  changed: boolean;
}

export type DiffChange = 'added' | 'modified' | 'removed';

export interface DiffTotals {
  added: number;
  modified: number;
  removed: number;
}

export interface MemoryBaseline {
  id: string;
  label: string;
  /** The change sequence it holds: everything up to here is "before". */
  seq: number;
  created_at: number;
}

export interface MemoryDiffResult {
  /** null: the memory world has no baseline yet (its first tick makes one). */
  baseline: MemoryBaseline | null;
  totals: DiffTotals;
  /** The rendered diff: a totals line, then one `### label (kind)` section per source. */
  text: string;
  /** The same per source, as data (what the page shows): at most 10 entries each. */
  sources: MemoryDiffSource[];
}

export interface MemoryDiffSource {
  namespace: string;
  label: string;
  kind: string;
  totals: DiffTotals;
  /** Added, then modified, then removed; each most recent first. */
  entries: Array<{ change: DiffChange; title: string; external_id: string; updated_at: number }>;
  /** Changes beyond `entries` ("…and K more"). */
  more: number;
}

export const NOTIFICATION_PRIORITIES = ['normal', 'important', 'critical'] as const;
export type NotificationPriority = (typeof NOTIFICATION_PRIORITIES)[number];
export const TODO_STATUSES = ['open', 'done', 'dropped'] as const;
export type TodoStatus = (typeof TODO_STATUSES)[number];
export const GOAL_STATUSES = ['active', 'achieved', 'dropped'] as const;
export type GoalStatus = (typeof GOAL_STATUSES)[number];

/** The thread the memory world's `notify_user` notifications carry: the Memory tab lists them; the bots host, when enabled, delivers them into its thread of this id (`SUBCONSCIOUS_THREAD_ID`). */
export const USER_THREAD = 'subconscious:user';

export interface MemoryNotification {
  id: string;
  thread: string;
  message: string;
  priority: NotificationPriority;
  /** The tick that raised it. */
  tick_id: string;
  created_at: number;
}

export interface MemoryTodo {
  id: string;
  title: string;
  note: string | null;
  status: TodoStatus;
  created_at: number;
  updated_at: number;
}

export interface MemoryGoal {
  id: string;
  title: string;
  description: string | null;
  status: GoalStatus;
  created_at: number;
  updated_at: number;
}

export const DELEGATION_STATUSES = ['pending', 'accepted', 'declined', 'failed'] as const;
export type DelegationStatus = (typeof DELEGATION_STATUSES)[number];

/**
 * The decision agent's `delegate`: a to-do it would hand to a bot. Nothing goes out by itself:
 * it waits `pending` until a person accepts it (then it becomes a task of that bot, through the
 * bots host, and `task_id` names it) or declines it.
 */
export interface MemoryDelegation {
  id: string;
  /** The to-do it hands over. */
  todo_id: string;
  todo_title: string;
  bot_id: string;
  /** The bot's name as the agent saw it (the bot may since have been renamed or deleted). */
  bot_name: string;
  /** What the bot is asked to do. */
  instruction: string;
  status: DelegationStatus;
  /** After acceptance: the bot's task and thread. */
  task_id: string | null;
  thread_id: string | null;
  /** Why acceptance failed (`failed`: the bot is gone, the bots host is off, …). */
  error: string | null;
  tick_id: string;
  created_at: number;
  updated_at: number;
}

// ---- events -------------------------------------------------------------------------------

export type MemoryEvents = {
  /** Documents of a namespace really changed (a sync, an RPC write or delete). */
  'memory.changed': { namespace: string; added: number; modified: number; removed: number };
  /** A source finished a sync (also when nothing changed, so the page can show "last sync"). */
  'memory.synced': { namespace: string; added: number; modified: number; removed: number; renamed: number; skipped: number; error: string | null };
  /** A running sync read more (an IMAP folder's messages, a calendar, resources): at most one every half second per source. */
  'memory.sync_progress': { namespace: string; part: string; done: number; total: number };
  /** The memory world's `notify_user`: a notification row on the thread `subconscious:user` (the Memory tab lists it; the bots host delivers it into its Subconscious thread). */
  'memory.notification': { id: string; thread: string; message: string; priority: NotificationPriority };
  'memory.todos_changed': { ids: string[] };
  'memory.goals_changed': { ids: string[] };
  /** Delegations were proposed, accepted, declined or failed. */
  'memory.delegations_changed': { ids: string[] };
};

// ---- params -------------------------------------------------------------------------------

export const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$/;
export const MAX_TITLE_CHARS = 500;
export const MAX_BODY_CHARS = 1_000_000;
export const MAX_METADATA_CHARS = 16_000;
export const MAX_RECALL_LIMIT = 100;

const namespace = z.string().regex(NAMESPACE_PATTERN, 'must be 1–64 letters, digits or _ . : @ - (starting with a letter or digit)');
const externalId = z.string().min(1, 'must not be empty').max(512, 'at most 512 characters');
const metadata = z
  .record(z.string(), z.unknown())
  .refine((m) => JSON.stringify(m).length <= MAX_METADATA_CHARS, `must serialise to at most ${MAX_METADATA_CHARS} characters`);
const kind = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be 1–32 lower-case letters, digits, _ or -');

export const storeDocumentParams = z.strictObject({
  namespace,
  external_id: externalId,
  title: z.string().trim().min(1, 'must not be empty').max(MAX_TITLE_CHARS, `at most ${MAX_TITLE_CHARS} characters`),
  body: z.string().max(MAX_BODY_CHARS, `at most ${MAX_BODY_CHARS} characters`),
  metadata: metadata.optional(),
  source_kind: kind.optional(),
  /** The namespace's label and kind, recorded when it is first seen. */
  namespace_label: z.string().trim().min(1).max(100).optional(),
  namespace_kind: kind.optional(),
});

export const recallParams = z.strictObject({
  query: z.string().max(1000, 'at most 1000 characters'),
  namespace: namespace.optional(),
  limit: z.number().int().min(1).max(MAX_RECALL_LIMIT, `at most ${MAX_RECALL_LIMIT}`).optional(),
});

/** A source as in `[[worlds.memory.sources]]`; the daemon validates it against the kind's schema. */
const sourceConfig = z.looseObject({
  kind: z.string({ error: 'must name the kind: folder, imap, caldav, ics or mcp' }),
  namespace: z.string({ error: 'must name the namespace its documents go to' }),
});

const listLimit = z.number().int().min(1).max(1000, 'at most 1000').optional();
const outputId = z.string().min(1, 'must not be empty').max(100, 'at most 100 characters');

// ---- the contract -------------------------------------------------------------------------

/** The memory store's methods: any host may push and read documents. */
export const memoryStoreMethods = {
  'memory.store_document': method(
    storeDocumentParams,
    'Store a document: {namespace, external_id, title, body, metadata?, source_kind?}. The same external id updates it; unchanged content writes nothing. The namespace of a configured folder source is forbidden: edit its files.',
  ).returns<StoreDocumentResult>(),
  'memory.delete_document': method(
    z.strictObject({ namespace, external_id: externalId }),
    'Delete a document by {namespace, external_id} (kept as a tombstone for diffs). deleted: false when there was none. The namespace of a configured folder source is forbidden: remove its file.',
  ).returns<{ deleted: boolean }>(),
  'memory.get_document': method(z.strictObject({ namespace, external_id: externalId }), 'One document with its body, or not_found.').returns<MemoryDocument>(),
  'memory.list_documents': method(
    z.strictObject({ namespace: namespace.optional(), limit: listLimit, offset: z.number().int().min(0).optional() }),
    'List live documents, most recently updated first: {namespace?, limit? (default 100), offset?}.',
  ).returns<{ documents: MemoryDocumentSummary[]; total: number }>(),
  'memory.recall': method(recallParams, 'Full-text recall, ranked: {query, namespace?, limit? (default 10)}. Any text is a valid query.').returns<{
    hits: RecallHit[];
  }>(),
  'memory.namespaces': method(z.strictObject({}), 'Namespaces with document counts and last sync.').returns<MemoryNamespace[]>(),
} as const;

/** The configured sources (`[[worlds.memory.sources]]`): what they are, how their syncs went, sync now. */
export const memorySourceMethods = {
  'memory.sources': method(z.strictObject({}), 'The configured memory sources: folder, watcher, last sync and skipped files.').returns<MemorySourceStatus[]>(),
  'memory.sync': method(
    z.strictObject({ namespace: namespace.optional() }),
    'Sync configured sources now (one by {namespace}, or all) and return at once; memory.synced tells how each went.',
  ).returns<{ started: string[]; message: string }>(),
  'memory.sources_test': method(
    z
      .strictObject({ namespace: namespace.optional(), source: sourceConfig.optional() })
      .refine((p) => (p.namespace === undefined) !== (p.source === undefined), 'give exactly one of namespace (a source that exists) or source (a new one)'),
    'Test connection: {namespace} of a source, or {source} (a new source as in [[worlds.memory.sources]]): connect, log in, open its folders or calendars. ok, or failure {kind: host | tls | auth | folder | other, message, hint}.',
  ).returns<{ ok: boolean; failure: MemorySourceFailure | null; message: string }>(),
  'memory.sources_add': method(
    z.strictObject({ source: sourceConfig, force: z.boolean().optional() }),
    'Add a source: {source (as in [[worlds.memory.sources]]; secrets by password_env / password_file / env_from, never inline), force?}. Its connection is tested first; a failure refuses it (source_unreachable, details.failure) unless force. Kept across restarts; syncs at once.',
  ).returns<{ namespace: string; failure: MemorySourceFailure | null; message: string }>(),
  'memory.sources_pause': method(
    z.strictObject({ namespace, paused: z.boolean() }),
    'Pause a source (no syncs, no follower; its documents stay) or resume it (paused: false: a sync now). Kept across restarts.',
  ).returns<{ namespace: string; paused: boolean; message: string }>(),
  'memory.sources_resync': method(
    z.strictObject({ namespace }),
    'Forget what a source has synced and read it all again (in the background); what is gone on the server becomes a removal.',
  ).returns<{ namespace: string; message: string }>(),
  'memory.sources_remove': method(
    z.strictObject({ namespace, keep_documents: z.boolean().optional() }),
    'Remove an added source: its documents are deleted (removals in the memory diff), or kept as a plain namespace with keep_documents. A source from subconscious.toml is forbidden: delete its entry there.',
  ).returns<{ namespace: string; removed_documents: number; kept_documents: number; message: string }>(),
} as const;

/** The memory world's methods: its outputs and the diff since its baseline. */
export const memoryWorldMethods = {
  'memory.diff': method(z.strictObject({}), "What changed in memory since the memory world's baseline, rendered.").returns<MemoryDiffResult>(),
  'memory.notifications_list': method(
    z.strictObject({ limit: listLimit }),
    'The memory world’s notifications on the thread subconscious:user, newest first: {limit? (default 50)}.',
  ).returns<MemoryNotification[]>(),
  'memory.todos_list': method(z.strictObject({ status: z.enum(TODO_STATUSES).optional() }), 'The memory world’s to-dos: {status?}, open first.').returns<
    MemoryTodo[]
  >(),
  'memory.goals_list': method(z.strictObject({ status: z.enum(GOAL_STATUSES).optional() }), 'The memory world’s goals: {status?}, active first.').returns<
    MemoryGoal[]
  >(),
  'memory.todos_update': method(
    z.strictObject({ id: outputId, status: z.enum(TODO_STATUSES) }),
    'A person settles a to-do: {id, status: open | done | dropped}.',
  ).returns<MemoryTodo>(),
  'memory.goals_update': method(
    z.strictObject({ id: outputId, status: z.enum(GOAL_STATUSES) }),
    'A person updates a goal: {id, status: active | achieved | dropped}.',
  ).returns<MemoryGoal>(),
  'memory.delegations_list': method(
    z.strictObject({ status: z.enum(DELEGATION_STATUSES).optional() }),
    'The to-dos the memory world proposes to hand to a bot: {status?}, pending first.',
  ).returns<MemoryDelegation[]>(),
  'memory.delegation_accept': method(
    z.strictObject({ id: outputId }),
    'A person accepts a pending delegation: the bot gets it as a new task in its direct thread (through the bots host). Only a pending one; twice is a conflict.',
  ).returns<MemoryDelegation>(),
  'memory.delegation_decline': method(z.strictObject({ id: outputId }), 'A person declines a pending delegation: nothing is sent.').returns<MemoryDelegation>(),
} as const;

export const memoryContract = defineContract<MemoryEvents>()({
  methods: { ...memoryStoreMethods, ...memorySourceMethods, ...memoryWorldMethods },
  events: [
    'memory.changed',
    'memory.synced',
    'memory.sync_progress',
    'memory.notification',
    'memory.todos_changed',
    'memory.goals_changed',
    'memory.delegations_changed',
  ],
});

export type MemoryContract = typeof memoryContract;
export type MemoryMethods = MemoryContract['methods'];
export type MemoryStoreMethods = typeof memoryStoreMethods;
export type MemorySourceMethods = typeof memorySourceMethods;
export type MemoryWorldMethods = typeof memoryWorldMethods;
