/** A configured source (`[[worlds.memory.sources]]`) as the object that syncs it. */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { resolveSourcePath, type MemorySourceConfig } from '../config.js';
import type { MemoryEmit, MemoryStore } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { FolderSource } from './folder.js';
import { IcsSource } from './ics.js';
import { ImapSource } from './imap.js';
import { readSecret } from './secret.js';
import type { MemorySource } from './source.js';

export interface SourceDeps {
  store: MemoryStore;
  db: Kysely<MemoryTables>;
  clock: Clock;
  log: Logger;
  emit?: MemoryEmit | undefined;
  workspace: string;
  fsNow?: (() => number) | undefined;
}

export function createSource(deps: SourceDeps, s: MemorySourceConfig): MemorySource {
  const base = { store: deps.store, db: deps.db, clock: deps.clock, log: deps.log, emit: deps.emit };
  switch (s.kind) {
    case 'folder':
      return new FolderSource(
        { ...base, fsNow: deps.fsNow },
        {
          namespace: s.namespace,
          root: resolveSourcePath(deps.workspace, s.path),
          label: s.label,
          recursive: s.recursive,
          maxFileBytes: s.max_file_mb * 1024 * 1024,
          debounceMs: s.debounce_ms,
        },
      );
    case 'imap':
      return new ImapSource(base, {
        namespace: s.namespace,
        label: s.label,
        host: s.host,
        port: s.port,
        tls: s.tls,
        tlsVerify: s.tls_verify,
        user: s.user,
        auth: s.auth,
        secret: () => readSecret(s, `imap source "${s.namespace}"`, (p) => resolveSourcePath(deps.workspace, p)),
        folders: s.folders,
        debounceMs: s.debounce_ms,
        batchSize: s.batch_size,
        maxMessageBytes: Math.round(s.max_message_mb * 1024 * 1024),
        maxBodyChars: s.max_body_chars,
      });
    case 'ics':
      return new IcsSource(base, {
        namespace: s.namespace,
        label: s.label,
        location: /^https?:\/\//i.test(s.location) ? s.location : resolveSourcePath(deps.workspace, s.location),
        pastDays: s.past_days,
        futureDays: s.future_days,
      });
  }
}

/** Whether the source follows changes live (a folder watcher, IMAP IDLE). */
export function watches(s: MemorySourceConfig): boolean {
  return s.kind === 'folder' ? s.watch : s.kind === 'imap' ? s.idle : false;
}
