/** A configured source (`[[worlds.memory.sources]]`) as the object that syncs it. */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { resolveSourcePath, type McpSourceConfig, type MemorySourceConfig } from '../config.js';
import type { MemoryEmit, MemoryStore } from '../store.js';
import type { MemoryTables } from '../tables.js';
import { CaldavSource } from './caldav.js';
import { FolderSource } from './folder.js';
import { McpSource } from './mcp.js';
import { IcsSource } from './ics.js';
import { ImapSource } from './imap.js';
import { envSecret, readSecret, type SecretRef } from './secret.js';
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
  const resolve = (p: string) => resolveSourcePath(deps.workspace, p);
  /** The source's secret, read at each connection (a rotated token file is picked up). */
  const secret = (ref: SecretRef) => () => readSecret(ref, `${s.kind} source "${s.namespace}"`, resolve);
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
        secret: secret(s),
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
    case 'caldav':
      return new CaldavSource(base, {
        namespace: s.namespace,
        label: s.label,
        url: s.url,
        user: s.user,
        auth: s.auth,
        secret: secret(s),
        calendars: s.calendars,
        pastDays: s.past_days,
        futureDays: s.future_days,
        maxBodyChars: s.max_body_chars,
      });
    case 'mcp':
      return new McpSource(base, {
        namespace: s.namespace,
        label: s.label,
        server:
          s.url !== undefined
            ? { url: s.url, headers: () => mcpHeaders(secret({ password_env: s.token_env, password_file: s.token_file }), s) }
            : { command: s.command!, args: s.args, env: () => ({ ...s.env, ...mcpEnv(s) }), cwd: s.cwd && resolveSourcePath(deps.workspace, s.cwd) },
        include: s.include,
        documentKind: s.document_kind,
        maxResources: s.max_resources,
        maxBodyChars: s.max_body_chars,
        debounceMs: s.debounce_ms,
        rereadMs: s.reread_hours * 3_600_000,
        pollReads: s.poll_reads,
      });
  }
}

/** A stdio MCP server's secrets: its variables taken from the daemon's environment. */
function mcpEnv(s: McpSourceConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [theirs, ours] of Object.entries(s.env_from)) out[theirs] = envSecret(ours, `mcp source "${s.namespace}"`, `env_from.${theirs}`);
  return out;
}

/** A url MCP server's bearer token (token_env / token_file), when it has one. */
function mcpHeaders(token: () => string, s: McpSourceConfig): Record<string, string> {
  if (s.token_env === undefined && s.token_file === undefined) return {};
  return { authorization: `Bearer ${token()}` };
}

/** Whether the source follows changes live (a folder watcher, IMAP IDLE). */
export function watches(s: MemorySourceConfig): boolean {
  return s.kind === 'folder' || s.kind === 'mcp' ? s.watch : s.kind === 'imap' ? s.idle : false;
}
