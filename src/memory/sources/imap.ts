/**
 * An IMAP account's folders as one namespace of email documents (imapflow).
 *
 * Each message is the document `<folder>#<uid>`. A sync, per folder: open it read-only, list the
 * UIDs present (one SEARCH), remove the documents whose UID is gone (expunged on the server: a
 * removal in the memory diff), then fetch the UIDs above the highest one synced, `batch_size` at
 * a time, each batch written and its high-water mark recorded before the next — so a 10,000-
 * message first sync runs in bounded memory, shows its progress, and resumes where it stopped.
 * A changed UIDVALIDITY (the server renumbered the folder) starts the folder over: every
 * message is fetched again and the documents of UIDs no longer present removed.
 *
 * The folder's state is a `memory_source_files` row (path = folder, size = UIDVALIDITY,
 * mtime_ms = highest UID synced); a message that cannot be read is a row `<folder>#<uid>` with
 * its reason (listed on the page, counted in the sync), and never stops the sync. A message
 * larger than `max_message_mb` is read up to that size, and a body longer than `max_body_chars`
 * is cut; the document says so either way.
 *
 * `watch()` keeps a second connection in IDLE on the first folder: new or expunged mail starts
 * a sync after `debounce_ms`. A dropped connection is opened again after the next good sync.
 *
 * Faults never throw out of `sync()`: a wrong password, an unreachable host, a TLS failure or a
 * missing folder is the result's `error` with its `failure` (what failed, what to do), and
 * nothing in memory changes.
 */
import { ImapFlow, type FetchMessageObject, type ImapFlowOptions } from 'imapflow';
import { describeError } from '../../core/errors.js';
import type { MemorySourceFailure } from '../../protocol/memory.js';
import type { WriteOp } from '../store.js';
import { cutText, Debounce, SourceBase, type SourceBaseDeps } from './base.js';
import { emailDocument } from './files.js';
import { parseEmail } from './email.js';
import type { SyncResult } from './folder.js';
import { ParseError } from './mime.js';
import { count } from './bookkeeping.js';
import { emptyResult, type MemorySource } from './source.js';
import { classifyFailure } from './failure.js';

/** What an imap source is given (every kind is given the same). */
export type ImapSourceDeps = SourceBaseDeps;

export interface ImapSourceOptions {
  namespace: string;
  label?: string | undefined;
  host: string;
  port?: number | undefined;
  tls: boolean;
  tlsVerify: boolean;
  user: string;
  auth: 'password' | 'oauth2';
  /** Read at each connection (a rotated token file is picked up). */
  secret: () => string;
  folders: readonly string[];
  debounceMs: number;
  batchSize: number;
  maxMessageBytes: number;
  maxBodyChars: number;
}

interface FolderState {
  validity: string;
  lastUid: number;
}

export class ImapSource extends SourceBase implements MemorySource {
  readonly kind = 'imap' as const;
  readonly location: string;
  private idler: ImapFlow | null = null;
  private wantWatch = false;
  private readonly debounce: Debounce;

  constructor(
    deps: SourceBaseDeps,
    private readonly opts: ImapSourceOptions,
  ) {
    super(deps, opts, 'newest');
    this.debounce = new Debounce(deps.clock, deps.log, this.namespace);
    this.location = `${opts.tls ? 'imaps' : 'imap'}://${encodeURIComponent(opts.user)}@${opts.host}:${this.port} (${opts.folders.join(', ')})`;
  }

  private get port(): number {
    return this.opts.port ?? (this.opts.tls ? 993 : 143);
  }

  get watching(): boolean {
    return this.idler !== null;
  }

  /** A client for this account (not connected). */
  client(): ImapFlow {
    const secret = this.opts.secret();
    const options: ImapFlowOptions = {
      host: this.opts.host,
      port: this.port,
      secure: this.opts.tls,
      auth: this.opts.auth === 'oauth2' ? { user: this.opts.user, accessToken: secret } : { user: this.opts.user, pass: secret },
      tls: { rejectUnauthorized: this.opts.tlsVerify },
      logger: false,
      // Our own IDLE connection follows new mail; a sync's connection does one job and logs out.
      disableAutoIdle: true,
      connectionTimeout: 30_000,
      greetingTimeout: 15_000,
    };
    const client = new ImapFlow(options);
    // imapflow emits socket errors as events: unhandled, they would end the process.
    client.on('error', (err: unknown) => this.deps.log.debug({ namespace: this.namespace, err: describeError(err) }, 'imap connection error'));
    return client;
  }

  /** Connect, log in and open each folder, then log out: what failed, or null when all is well. */
  async testConnection(): Promise<MemorySourceFailure | null> {
    let client: ImapFlow | null = null;
    let folder: string | undefined;
    try {
      client = this.client();
      await client.connect();
      for (folder of this.opts.folders) await client.status(folder, { messages: true, uidValidity: true }).then(assertFolder(folder));
      folder = undefined;
      return null;
    } catch (err) {
      return classifyFailure(err, { host: this.opts.host, port: this.port, user: this.opts.user, folder, tls: this.opts.tls });
    } finally {
      await client?.logout().catch(() => client?.close());
    }
  }

  /** Follow the first folder with IDLE: new and expunged mail start a (debounced) sync. */
  watch(): () => void {
    this.wantWatch = true;
    if (!this.idler) void this.startIdle();
    return () => this.unwatch();
  }

  unwatch(): void {
    this.wantWatch = false;
    this.debounce.cancel();
    const idler = this.idler;
    this.idler = null;
    if (idler) void idler.logout().catch(() => idler.close());
  }

  private async startIdle(): Promise<void> {
    let client: ImapFlow;
    try {
      client = this.client();
    } catch (err) {
      this.deps.log.warn({ namespace: this.namespace, err: describeError(err) }, 'imap idle not started');
      return;
    }
    this.idler = client;
    client.on('exists', () => this.schedule());
    client.on('expunge', () => this.schedule());
    client.on('close', () => {
      if (this.idler === client) this.idler = null;
    });
    try {
      await client.connect();
      await client.mailboxOpen(this.opts.folders[0]!, { readOnly: true });
      if (this.idler !== client) return void client.logout().catch(() => client.close());
      // imapflow's idle() resolves when another command breaks it; keep it going while wanted.
      void (async () => {
        while (this.idler === client && client.usable) await client.idle().catch(() => undefined);
      })();
    } catch (err) {
      if (this.idler === client) this.idler = null;
      client.close();
      this.deps.log.warn({ namespace: this.namespace, err: describeError(err) }, 'imap idle not started; periodic syncs continue');
    }
  }

  /** A server notification: sync once they have been quiet for `debounceMs`. */
  schedule(): void {
    this.debounce.schedule(this.opts.debounceMs, () => this.sync());
  }

  protected async syncOnce(): Promise<SyncResult> {
    const { store, clock } = this.deps;
    const started = clock.now();
    const result = emptyResult(this.namespace);
    await store.registerNamespace(this.namespace, { label: this.label, kind: 'imap' });
    let client: ImapFlow | null = null;
    let folder: string | undefined;
    try {
      client = this.client();
      await client.connect();
      for (folder of this.opts.folders) await this.syncFolder(client, folder, result);
      folder = undefined;
    } catch (err) {
      const failure = classifyFailure(err, { host: this.opts.host, port: this.port, user: this.opts.user, folder, tls: this.opts.tls });
      this.failed(result, failure, 'imap sync failed; what was written before stays');
    } finally {
      this.progressed(null);
      await client?.logout().catch(() => client?.close());
    }
    if (!result.error && this.wantWatch && !this.idler) void this.startIdle();
    return this.book.finish(result, started);
  }

  private async syncFolder(client: ImapFlow, folder: string, result: SyncResult): Promise<void> {
    const { store } = this.deps;
    const lock = await client.getMailboxLock(folder, { readOnly: true });
    try {
      const box = client.mailbox;
      if (!box) throw new Error(`cannot open ${folder}`);
      const validity = String(box.uidValidity);
      const state = await this.folderState(folder);
      const lastUid = state && state.validity === validity ? state.lastUid : 0;
      if (state && state.validity !== validity)
        this.deps.log.info({ namespace: this.namespace, folder, from: state.validity, to: validity }, 'imap UIDVALIDITY changed: the folder is read again');
      const present = box.exists > 0 ? (await client.search({ all: true }, { uid: true })) || [] : [];
      result.files += present.length;

      // Expunged on the server (or renumbered): their documents are removals.
      const presentSet = new Set(present);
      const gone = (await store.documentsUnder(this.namespace, folder)).filter((d) => !presentSet.has(uidOf(d.external_id)));
      for (let i = 0; i < gone.length; i += 500) {
        const ops: WriteOp[] = gone.slice(i, i + 500).map((d) => ({ op: 'delete', external_id: d.external_id }));
        count(result, await store.write(this.namespace, ops));
      }
      await this.forgetSkipped(folder, presentSet, lastUid === 0);

      const todo = present.filter((uid) => uid > lastUid).sort((a, b) => a - b);
      this.progressed({ part: folder, done: 0, total: todo.length });
      for (let i = 0; i < todo.length; i += this.opts.batchSize) {
        const batch = todo.slice(i, i + this.opts.batchSize);
        const messages = await client.fetchAll(
          batch.join(','),
          { uid: true, size: true, internalDate: true, source: { start: 0, maxLength: this.opts.maxMessageBytes } },
          { uid: true },
        );
        await this.apply(folder, messages, result);
        await this.saveState(folder, { validity, lastUid: batch[batch.length - 1]! });
        this.progressed({ part: folder, done: Math.min(todo.length, i + batch.length), total: todo.length });
      }
      if (todo.length === 0) await this.saveState(folder, { validity, lastUid: Math.max(lastUid, ...present.slice(-1)) });
    } finally {
      lock.release();
    }
  }

  /** One fetched batch as documents (a message that cannot be read is skipped with its reason). */
  private async apply(folder: string, messages: FetchMessageObject[], result: SyncResult): Promise<void> {
    const ops: WriteOp[] = [];
    const skipped: { path: string; reason: string }[] = [];
    for (const m of messages) {
      const id = `${folder}#${m.uid}`;
      result.read++;
      if (!m.source) {
        skipped.push({ path: id, reason: 'the server sent no message body' });
        continue;
      }
      const cutBytes = m.size !== undefined && m.size > m.source.length ? m.size : null;
      try {
        const email = parseEmail(m.source.toString('latin1'), { textAttachments: true });
        result.parsed++;
        const doc = emailDocument(email, '', id, 'imap');
        let body = doc.body;
        const notes: string[] = [];
        if (cutBytes !== null) notes.push(`the message is ${formatBytes(cutBytes)}; only its first ${formatBytes(m.source.length)} were read (max_message_mb)`);
        const cut = cutText(body, this.opts.maxBodyChars);
        if (cut.note) notes.push(cut.note);
        if (notes.length) body = `${body.slice(0, this.opts.maxBodyChars)}\n\n[cut: ${notes.join('; ')}]`;
        const metadata: Record<string, unknown> = { ...doc.metadata, folder, uid: m.uid };
        delete metadata.path;
        if (notes.length) metadata.cut = notes.join('; ');
        ops.push({ op: 'put', doc: { external_id: id, title: doc.title, body, metadata, source_kind: 'email' } });
      } catch (err) {
        if (!(err instanceof ParseError)) throw err;
        skipped.push({ path: id, reason: err.message });
      }
    }
    if (ops.length) count(result, await this.deps.store.write(this.namespace, ops, { label: this.label, kind: 'imap' }));
    for (const s of skipped) {
      result.skipped.push(s);
      this.deps.log.warn({ namespace: this.namespace, ...s }, 'imap message skipped');
      await this.record(s.path, 0, 0, s.reason);
    }
  }

  private async folderState(folder: string): Promise<FolderState | null> {
    const row = await this.deps.db
      .selectFrom('memory_source_files')
      .select(['size', 'mtime_ms'])
      .where('namespace', '=', this.namespace)
      .where('path', '=', folder)
      .executeTakeFirst();
    return row ? { validity: String(row.size), lastUid: Number(row.mtime_ms) } : null;
  }

  private saveState(folder: string, state: FolderState): Promise<void> {
    return this.record(folder, Number(state.validity), state.lastUid, null);
  }

  private record(path: string, size: number, mtime: number, error: string | null): Promise<void> {
    return this.book.record(path, { size, mtime_ms: mtime, hash: 'imap', error });
  }

  /** Skip records of messages gone from the folder (or all of them when the folder starts over). */
  private async forgetSkipped(folder: string, present: Set<number>, all: boolean): Promise<void> {
    const rows = await this.deps.db
      .selectFrom('memory_source_files')
      .select('path')
      .where('namespace', '=', this.namespace)
      .where('path', '>=', `${folder}#`)
      .where('path', '<', `${folder}$`)
      .execute();
    await this.book.forget(rows.map((r) => r.path).filter((p) => all || !present.has(uidOf(p))));
  }
}

function uidOf(externalId: string): number {
  return Number(externalId.slice(externalId.lastIndexOf('#') + 1));
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(n / 1024)} KB`;
}

function assertFolder(folder: string) {
  return (status: unknown) => {
    if (!status) throw Object.assign(new Error(`Mailbox doesn't exist: ${folder}`), { code: 'NONEXISTENT' });
  };
}
