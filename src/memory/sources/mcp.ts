/**
 * An MCP server's resources as one namespace of documents: how Notion, Slack, Google Drive and
 * other servers from the MCP registry reach memory. A sync lists the resources (`resources/list`,
 * following `nextCursor` page by page), reads each (`resources/read`: text contents, and blobs
 * whose MIME type is text), and writes what changed: a resource gone from the list is a removal
 * in the memory diff. A binary resource, or one that cannot be read, is skipped with its reason
 * (counted and listed) and never stops the sync; a text longer than `max_body_chars` is cut and
 * the document says so.
 *
 * The connection stays open between syncs (a stdio server is one child process): when the server
 * offers `resources.listChanged`, its `notifications/resources/list_changed` starts a sync after
 * `debounce_ms`; when it offers `resources.subscribe`, each listed resource is subscribed and
 * `notifications/resources/updated` does the same. A server that offers neither is followed by
 * the periodic sync (polling). A closed connection is opened again at the next sync.
 *
 * A sync lists every time but reads only what may have changed: a resource new to the list, one
 * the server said was updated, one whose list entry (name, title, MIME type, size, description,
 * annotations such as `lastModified`: its signature) differs from the last read, one whose last
 * read failed, and one read longer ago than `reread_hours` (what a server that says nothing
 * still gets; 0 reads everything every sync). A server that offers no `subscribe` and whose list
 * gives a resource no `lastModified` (Google Drive's) says nothing of an edit at all: of those
 * resources, each sync also reads the `poll_reads` read longest ago, so an edit reaches memory
 * within ceil(resources / poll_reads) polls, not after `reread_hours`; a read whose text is the
 * same writes nothing. The rest keep their documents untouched. Each
 * resource's state is a `memory_source_files` row: path = its URI, hash = its entry's
 * signature, mtime_ms = when it was read, error = why it was skipped.
 *
 * Each resource is the document `mcp#<uri>`, labelled with the source's `document_kind`
 * (`notes`, `chat`, `email`, `calendar`…) so the conscious loop sees what it is.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema, type Resource } from '@modelcontextprotocol/sdk/types.js';
import { SubconsciousError, describeError } from '../../core/errors.js';
import { sha256Hex } from '../hash.js';
import type { MemorySourceFailure } from '../../protocol/memory.js';
import type { WriteOp } from '../store.js';
import { cutText, Debounce, SourceBase, type SourceBaseDeps } from './base.js';
import { count } from './bookkeeping.js';
import { classifyFailure } from './failure.js';
import type { SyncResult } from './folder.js';
import { emptyResult, type MemorySource } from './source.js';

/** What an mcp source is given (every kind is given the same). */
export type McpSourceDeps = SourceBaseDeps;

export type McpSourceServer =
  /** `env` is read at each start (a missing secret fails that sync, not the daemon). */
  | { command: string; args: readonly string[]; env: () => Record<string, string>; cwd?: string | undefined }
  | { url: string; headers: () => Record<string, string> };

export interface McpSourceOptions {
  namespace: string;
  label?: string | undefined;
  server: McpSourceServer;
  /** Only resources whose URI starts with one of these (empty: all). */
  include: readonly string[];
  /** The documents' `source_kind`: what the conscious loop calls them. */
  documentKind: string;
  maxResources: number;
  maxBodyChars: number;
  debounceMs: number;
  /** Read a resource again after this long even when nothing says it changed (0: every sync). */
  rereadMs?: number | undefined;
  /** Of the resources nothing says the edits of, how many are read again each sync (oldest read first; default 25). */
  pollReads?: number | undefined;
}

const KEY = 'mcp';
const TEXT_MIME = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|toml|ld\+json|x-ndjson))|\+(json|xml)$/i;
const REQUEST_TIMEOUT_MS = 60_000;

type Put = Extract<WriteOp, { op: 'put' }>;

/** What the list says of a resource: when it changes, the resource is read again. */
function signature(r: Resource): string {
  return sha256Hex(JSON.stringify([r.name, r.title ?? null, r.mimeType ?? null, r.size ?? null, r.description ?? null, r.annotations ?? null]));
}

export class McpSource extends SourceBase implements MemorySource {
  readonly kind = 'mcp' as const;
  readonly location: string;
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private subscribed = new Set<string>();
  /** URIs the server said were updated since they were last read (→ the notification's number). */
  private readonly updated = new Map<string, number>();
  private notices = 0;
  private wantWatch = false;
  private readonly debounce: Debounce;

  constructor(
    deps: SourceBaseDeps,
    private readonly opts: McpSourceOptions,
  ) {
    super(deps, opts);
    this.location = 'url' in opts.server ? opts.server.url : `stdio: ${[opts.server.command, ...opts.server.args].join(' ')}`;
    this.debounce = new Debounce(deps.clock, deps.log, this.namespace);
  }

  /** Live: connected to a server that notifies (list changes or subscriptions). */
  get watching(): boolean {
    const caps = this.client?.getServerCapabilities()?.resources;
    return this.wantWatch && this.client !== null && Boolean(caps?.listChanged || caps?.subscribe);
  }

  /** Resources the server said were updated that no sync has read yet. */
  get pendingUpdates(): number {
    return this.updated.size;
  }

  /** Follow the server's notifications (the connection is made by the next sync if none is open). */
  watch(): () => void {
    this.wantWatch = true;
    return () => this.unwatch();
  }

  /** Stop following and close the connection (a stdio server's process ends). */
  unwatch(): void {
    this.wantWatch = false;
    this.debounce.cancel();
    void this.close();
  }

  /** The open connection (made when none is): the server this source reads, for diagnostics. */
  async connection(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.subscribed = new Set();
    await client?.close().catch(() => undefined);
  }

  /** Start the server (or reach it), initialize and list one page: what failed, or null. */
  async testConnection(): Promise<MemorySourceFailure | null> {
    const fresh = this.client === null;
    try {
      const client = await this.connection();
      if (!client.getServerCapabilities()?.resources)
        return {
          kind: 'other',
          message: `${this.location} offers no resources (only tools or prompts)`,
          hint: 'Choose an MCP server that serves resources; tool servers belong under [[mcp.servers]].',
        };
      await client.listResources({}, { timeout: REQUEST_TIMEOUT_MS });
      return null;
    } catch (err) {
      return this.failure(err);
    } finally {
      if (fresh && !this.wantWatch) await this.close();
    }
  }

  /** A server notification: sync once they have been quiet for `debounceMs`. */
  schedule(): void {
    if (!this.wantWatch) return;
    this.debounce.schedule(this.opts.debounceMs, () => this.sync());
  }

  /** `notifications/resources/updated`: that resource is read at the (debounced) sync. */
  private onUpdated(uri: string): void {
    this.updated.set(uri, ++this.notices);
    this.schedule();
  }

  private failure(err: unknown): MemorySourceFailure {
    if (err instanceof SubconsciousError) return { kind: 'auth', message: err.message, hint: err.hint ?? "Check the source's settings." };
    if ('url' in this.opts.server) {
      const u = new URL(this.opts.server.url);
      return classifyFailure((err as { cause?: unknown }).cause ?? err, { host: u.hostname, port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80) });
    }
    const message = describeError(err);
    return /ENOENT|spawn/i.test(message)
      ? {
          kind: 'host',
          message: `cannot start ${this.location}: ${message}`,
          hint: 'Check the command and that it is installed (npx needs the package or network access).',
        }
      : {
          kind: 'other',
          message: `${this.location}: ${message}`,
          hint: "See the daemon log and the server's own output; the source tries again with backoff.",
        };
  }

  private async connect(): Promise<Client> {
    const server = this.opts.server;
    const client = new Client({ name: 'subconscious-memory', version: '1' }, { capabilities: {} });
    const transport =
      'url' in server
        ? new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers() } })
        : new StdioClientTransport({
            command: server.command,
            args: [...server.args],
            env: { ...getDefaultEnvironment(), ...server.env() },
            ...(server.cwd !== undefined && { cwd: server.cwd }),
            stderr: 'ignore',
          });
    client.onclose = () => {
      if (this.client === client) {
        this.client = null;
        this.subscribed = new Set();
      }
    };
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.schedule());
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => this.onUpdated(n.params.uri));
    await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
    this.client = client;
    return client;
  }

  /** Every resource, page by page (at most `maxResources`; the rest counted as skipped). */
  private async list(client: Client, result: SyncResult): Promise<Resource[]> {
    const all: Resource[] = [];
    let cursor: string | undefined;
    const seenCursors = new Set<string>();
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor }, { timeout: REQUEST_TIMEOUT_MS });
      for (const r of page.resources) {
        if (this.opts.include.length && !this.opts.include.some((p) => r.uri.startsWith(p))) continue;
        if (all.length >= this.opts.maxResources) {
          result.skipped.push({ path: r.uri, reason: `beyond max_resources (${this.opts.maxResources})` });
          continue;
        }
        all.push(r);
      }
      cursor = page.nextCursor;
      // A server that hands back a cursor it gave before would loop forever.
      if (cursor !== undefined && seenCursors.has(cursor)) break;
      if (cursor !== undefined) seenCursors.add(cursor);
    } while (cursor !== undefined);
    return all;
  }

  protected async syncOnce(): Promise<SyncResult> {
    const { store, clock, log } = this.deps;
    const started = clock.now();
    const result = emptyResult(this.namespace);
    const info = { label: this.label, kind: 'mcp' };
    await store.registerNamespace(this.namespace, info);
    try {
      const client = await this.connection();
      const resources = await this.list(client, result);
      result.files = resources.length;
      const known = await this.rows();
      const notified = new Map(this.updated);
      const rereadMs = this.opts.rereadMs ?? 24 * 3_600_000;
      const todo = resources.filter((r) => {
        const row = known.get(r.uri);
        return !row || row.hash !== signature(r) || notified.has(r.uri) || rereadMs === 0 || clock.now() - row.mtime_ms >= rereadMs;
      });
      todo.push(...this.pollSlice(client, resources, new Set(todo.map((r) => r.uri)), known));
      // A resource that cannot be read keeps its document (and is tried again); one that reads as
      // binary or empty has none.
      const reads: { r: Resource; doc: Put | { skip: string; failed: boolean } }[] = [];
      for (const [i, r] of todo.entries()) {
        this.progressed({ part: 'resources', done: i, total: todo.length });
        result.read++;
        const doc = await this.read(client, r).catch((err: unknown) => ({ skip: `cannot read: ${describeError(err)}`, failed: true }));
        if (!('skip' in doc)) result.parsed++;
        reads.push({ r, doc });
      }
      const listed = new Set(resources.map((r) => r.uri));
      const empty = new Set(reads.flatMap(({ r, doc }) => ('skip' in doc && !doc.failed ? [`${KEY}#${r.uri}`] : [])));
      const ops: WriteOp[] = reads.flatMap(({ doc }) => ('skip' in doc ? [] : [doc]));
      for (const d of await store.documentsUnder(this.namespace, KEY))
        if (!listed.has(d.external_id.slice(KEY.length + 1)) || empty.has(d.external_id)) ops.push({ op: 'delete', external_id: d.external_id });
      for (let i = 0; i < ops.length; i += 500) count(result, await store.write(this.namespace, ops.slice(i, i + 500), info));
      result.unchanged += resources.length - todo.length;
      for (const { r, doc } of reads) {
        // A failed read keeps the document it had and is tried again next sync (no signature kept).
        const skip = 'skip' in doc ? doc : null;
        if (skip) result.skipped.push({ path: r.uri, reason: skip.skip });
        await this.book.record(r.uri, { size: r.size ?? 0, mtime_ms: clock.now(), hash: skip?.failed ? '' : signature(r), error: skip?.skip ?? null });
        // An update said while it was being read is read again next time.
        if (!skip?.failed && this.updated.get(r.uri) === notified.get(r.uri)) this.updated.delete(r.uri);
      }
      await this.book.forget([...known.keys()].filter((uri) => !listed.has(uri)));
      if (this.wantWatch) await this.subscribe(client, resources);
      else await this.close();
    } catch (err) {
      this.failed(result, this.failure(err), 'mcp sync failed; nothing changed');
      await this.close();
    } finally {
      this.progressed(null);
    }
    for (const s of result.skipped) log.warn({ namespace: this.namespace, ...s }, 'mcp resource skipped');
    return this.book.finish(result, started);
  }

  /**
   * The resources whose edits nothing would tell (no subscribe on the server, no `lastModified`
   * in their list entry) not already being read: the `pollReads` read longest ago.
   */
  private pollSlice(client: Client, resources: readonly Resource[], reading: ReadonlySet<string>, known: Map<string, { mtime_ms: number }>): Resource[] {
    const n = this.opts.pollReads ?? 25;
    if (n === 0 || client.getServerCapabilities()?.resources?.subscribe) return [];
    return resources
      .filter((r) => !reading.has(r.uri) && r.annotations?.lastModified === undefined && known.has(r.uri))
      .sort((a, b) => known.get(a.uri)!.mtime_ms - known.get(b.uri)!.mtime_ms || (a.uri < b.uri ? -1 : 1))
      .slice(0, n);
  }

  /** The resources read before: URI → their row. */
  private async rows(): Promise<Map<string, { hash: string; mtime_ms: number }>> {
    const rows = await this.deps.db.selectFrom('memory_source_files').select(['path', 'hash', 'mtime_ms']).where('namespace', '=', this.namespace).execute();
    return new Map(rows.map((r) => [r.path, { hash: r.hash, mtime_ms: Number(r.mtime_ms) }]));
  }

  private async read(client: Client, r: Resource): Promise<Put | { skip: string; failed: boolean }> {
    const res = await client.readResource({ uri: r.uri }, { timeout: REQUEST_TIMEOUT_MS });
    const texts: string[] = [];
    const binary: string[] = [];
    for (const c of res.contents) {
      const mime = c.mimeType ?? r.mimeType ?? '';
      if ('text' in c && typeof c.text === 'string') texts.push(c.text);
      else if ('blob' in c && typeof c.blob === 'string' && TEXT_MIME.test(mime)) texts.push(Buffer.from(c.blob, 'base64').toString('utf8'));
      else binary.push(mime || 'unknown type');
    }
    if (texts.length === 0)
      return { skip: binary.length ? `binary content (${binary.join(', ')}): only text is kept` : 'the server sent no content', failed: false };
    const { text: body, note } = cutText(texts.join('\n\n'), this.opts.maxBodyChars);
    const metadata: Record<string, unknown> = { uri: r.uri };
    if (r.mimeType) metadata.mime_type = r.mimeType;
    if (r.description) metadata.description = r.description;
    if (r.annotations?.lastModified) metadata.date = r.annotations.lastModified;
    if (note) metadata.cut = note;
    const title = (r.title ?? r.name ?? r.uri).trim().slice(0, 500) || r.uri;
    return { op: 'put', doc: { external_id: `${KEY}#${r.uri}`, title, body, metadata, source_kind: this.opts.documentKind } };
  }

  /** Subscribe to each listed resource once, where the server offers it. */
  private async subscribe(client: Client, resources: Resource[]): Promise<void> {
    if (!client.getServerCapabilities()?.resources?.subscribe) return;
    for (const r of resources) {
      if (this.subscribed.has(r.uri)) continue;
      try {
        await client.subscribeResource({ uri: r.uri }, { timeout: REQUEST_TIMEOUT_MS });
        this.subscribed.add(r.uri);
      } catch (err) {
        this.deps.log.debug({ namespace: this.namespace, uri: r.uri, err: describeError(err) }, 'mcp subscribe refused; list changes and polling follow it');
      }
    }
  }
}
