/**
 * Memory sources as configured in `subconscious.toml` (the memory world's section holds them):
 *
 *   [[worlds.memory.sources]]
 *   kind = "folder"
 *   path = "~/Mail/export"        # absolute, ~/…, or relative to the workspace
 *   namespace = "mail"
 *   label = "Mail export"         # optional; shown in diffs and on the page
 *
 *   [[worlds.memory.sources]]
 *   kind = "imap"
 *   namespace = "gmail"
 *   host = "imap.gmail.com"       # port 993, TLS by default
 *   user = "ada@gmail.com"
 *   password_env = "GMAIL_APP_PASSWORD"   # or password_file = "~/.config/subconscious/gmail"
 *   folders = ["INBOX", "[Gmail]/Sent Mail"]
 *
 * A secret is never written in the TOML: `password = …` is refused with the way to do it.
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { NAMESPACE_PATTERN } from '../protocol/memory.js';

export const folderSourceSchema = z.strictObject({
  kind: z.literal('folder'),
  path: z.string().trim().min(1, 'must name a folder'),
  namespace: z.string().regex(NAMESPACE_PATTERN, 'must be 1–64 letters, digits or _ . : @ - (starting with a letter or digit)'),
  label: z.string().trim().min(1, 'must not be empty').max(100, 'at most 100 characters').optional(),
  /** Include sub-folders (hidden ones, starting with `.`, never). */
  recursive: z.boolean().default(true),
  /** Sync when files change (fs.watch), after `debounce_ms` of quiet. */
  watch: z.boolean().default(true),
  debounce_ms: z.number().int('must be whole milliseconds').min(100, 'must be at least 100').max(60_000, 'at most 60000').default(2_000),
  /** A full sync this often whatever the watcher saw (it misses changes on some file systems). */
  sync_interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440').default(15),
  /** Larger files are skipped with a reason. */
  max_file_mb: z.number().positive('must be positive').max(4096, 'at most 4096').default(256),
});

const namespaceSchema = folderSourceSchema.shape.namespace;
const labelSchema = folderSourceSchema.shape.label;

/** A secret's place: exactly one of an environment variable or a file. */
const secretFields = {
  password_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
    .optional(),
  password_file: z.string().trim().min(1, 'must name a file').optional(),
  /** Refused with the way to do it: a secret never sits in subconscious.toml. */
  password: z.never({ error: 'a password is never written in subconscious.toml: set password_env (an environment variable) or password_file' }).optional(),
};

function oneSecret(s: { password_env?: string | undefined; password_file?: string | undefined }, ctx: z.RefinementCtx): void {
  if ((s.password_env === undefined) === (s.password_file === undefined))
    ctx.addIssue({ code: 'custom', path: ['password_env'], message: 'set exactly one of password_env or password_file' });
}

export const imapSourceSchema = z
  .strictObject({
    kind: z.literal('imap'),
    namespace: namespaceSchema,
    label: labelSchema,
    host: z.string().trim().min(1, 'must name the IMAP server'),
    /** 993 with TLS, 143 without (STARTTLS is used when the server offers it). */
    port: z.number().int().min(1).max(65535).optional(),
    tls: z.boolean().default(true),
    /** Refuse a certificate that does not verify (false only for a self-signed server you trust). */
    tls_verify: z.boolean().default(true),
    user: z.string().trim().min(1, 'must name the account'),
    /** `password` (an app password) or `oauth2` (the secret is an OAuth2 access token: XOAUTH2). */
    auth: z.enum(['password', 'oauth2']).default('password'),
    ...secretFields,
    folders: z.array(z.string().min(1)).min(1, 'must follow at least one folder').default(['INBOX']),
    /** Follow the first folder with IMAP IDLE: new mail arrives in seconds (the others at each sync). */
    idle: z.boolean().default(true),
    debounce_ms: z.number().int().min(0).max(60_000).default(2_000),
    sync_interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440').default(15),
    /** Messages fetched per round trip: a large mailbox syncs in bounded steps. */
    batch_size: z.number().int().min(1).max(2000).default(200),
    /** A message's bytes read at most (larger ones are cut, and their body says so). */
    max_message_mb: z.number().positive().max(512).default(25),
    /** A document's body at most this many characters (the rest cut, and said). */
    max_body_chars: z.number().int().min(1000).max(5_000_000).default(200_000),
  })
  .superRefine(oneSecret);

/** A calendar as an .ics file or URL: events expanded from `past_days` ago to `future_days` ahead. */
export const icsSourceSchema = z.strictObject({
  kind: z.literal('ics'),
  namespace: namespaceSchema,
  label: labelSchema,
  /** A file (absolute, ~/…, or relative to the workspace) or an http(s) URL. */
  location: z.string().trim().min(1, 'must name an .ics file or URL'),
  past_days: z.number().int().min(0).max(3650).default(30),
  future_days: z.number().int().min(1).max(3650).default(180),
  sync_interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440').default(15),
});

/** A CalDAV account: the calendars at `url` (a calendar, or the calendar home holding several). */
export const caldavSourceSchema = z
  .strictObject({
    kind: z.literal('caldav'),
    namespace: namespaceSchema,
    label: labelSchema,
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL of a calendar or of the calendar home' }),
    user: z.string().trim().min(1, 'must name the account'),
    /** `basic` (a password or app password) or `bearer` (the secret is an OAuth2 access token). */
    auth: z.enum(['basic', 'bearer']).default('basic'),
    ...secretFields,
    /** Calendar names or paths to follow; empty: every calendar under `url`. */
    calendars: z.array(z.string().min(1)).default([]),
    past_days: z.number().int().min(0).max(3650).default(30),
    future_days: z.number().int().min(1).max(3650).default(180),
    sync_interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440').default(15),
    max_body_chars: z.number().int().min(1000).max(5_000_000).default(200_000),
  })
  .superRefine(oneSecret);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * An MCP server's resources (Notion, Slack, Google Drive… through their servers): started as a
 * child process (`command`, stdio) or reached at `url` (streamable HTTP). Its secrets come from
 * the daemon's environment (`env_from`: the server's variable → ours) or, for `url`, a bearer
 * token from `token_env` / `token_file`: never written in the TOML.
 */
export const mcpSourceSchema = z
  .strictObject({
    kind: z.literal('mcp'),
    namespace: namespaceSchema,
    label: labelSchema,
    command: z.string().trim().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** Plain settings for the server's environment (no secrets: use env_from). */
    env: z.record(z.string().regex(ENV_NAME, 'must be an environment variable name'), z.string()).default({}),
    /** The server's variable ← the daemon's: `env_from = { NOTION_TOKEN = "MY_NOTION_TOKEN" }`. */
    env_from: z
      .record(z.string().regex(ENV_NAME, 'must be an environment variable name'), z.string().regex(ENV_NAME, 'must be an environment variable name'))
      .default({}),
    cwd: z.string().trim().min(1).optional(),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL of a streamable HTTP MCP server' }).optional(),
    token_env: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    token_file: z.string().trim().min(1, 'must name a file').optional(),
    /** Only resources whose URI starts with one of these (empty: all). */
    include: z.array(z.string().min(1)).default([]),
    /** What the documents are for the conscious loop: notes, chat, email, calendar, docs… */
    document_kind: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be 1–32 lower-case letters, digits, _ or -')
      .default('notes'),
    /** Follow list_changed and subscriptions (when the server offers them). */
    watch: z.boolean().default(true),
    debounce_ms: z.number().int().min(0).max(60_000).default(2_000),
    sync_interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440').default(15),
    max_resources: z.number().int().min(1).max(100_000).default(5_000),
    max_body_chars: z.number().int().min(1000).max(5_000_000).default(200_000),
    /** Read a resource again after this many hours even when nothing says it changed (0: every sync). */
    reread_hours: z.number().min(0).max(8760).default(24),
    /**
     * Resources that nothing says the edits of (a server with no subscribe whose list gives no
     * lastModified, such as Google Drive's) read again each sync, those read longest ago first:
     * an edit reaches memory within ceil(resources / poll_reads) syncs (0: only after reread_hours).
     */
    poll_reads: z.number().int().min(0).max(10_000).default(25),
  })
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined))
      ctx.addIssue({ code: 'custom', path: ['command'], message: 'set exactly one of command (a stdio server) or url (streamable HTTP)' });
    if (s.url !== undefined && (s.args.length || Object.keys(s.env).length || Object.keys(s.env_from).length || s.cwd))
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'args, env, env_from and cwd only apply to a stdio server (command)' });
    if (s.command !== undefined && (s.token_env !== undefined || s.token_file !== undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['token_env'],
        message: 'token_env and token_file only apply to a url server; give a stdio server its secrets with env_from',
      });
    if (s.token_env !== undefined && s.token_file !== undefined)
      ctx.addIssue({ code: 'custom', path: ['token_env'], message: 'set at most one of token_env or token_file' });
  });

export const memorySourceSchema = z.discriminatedUnion('kind', [folderSourceSchema, imapSourceSchema, icsSourceSchema, caldavSourceSchema, mcpSourceSchema], {
  error: (issue) => (issue.code === 'invalid_union' ? 'kind must be "folder", "imap", "ics", "caldav" or "mcp"' : undefined),
});

export const memorySourcesSchema = z
  .array(memorySourceSchema)
  .default([])
  .superRefine((sources, ctx) => {
    const seen = new Set<string>();
    sources.forEach((s, i) => {
      if (seen.has(s.namespace))
        ctx.addIssue({ code: 'custom', path: [i, 'namespace'], message: `"${s.namespace}" is used by another source: one namespace per source` });
      seen.add(s.namespace);
    });
  });

export type FolderSourceConfig = z.output<typeof folderSourceSchema>;
export type ImapSourceConfig = z.output<typeof imapSourceSchema>;
export type IcsSourceConfig = z.output<typeof icsSourceSchema>;
export type CaldavSourceConfig = z.output<typeof caldavSourceSchema>;
export type McpSourceConfig = z.output<typeof mcpSourceSchema>;
export type MemorySourceConfig = z.output<typeof memorySourceSchema>;

/** A source path as an absolute path: `~` is the home folder, a relative path is under the workspace. */
export function resolveSourcePath(workspace: string, p: string): string {
  if (p === '~' || p.startsWith('~/')) return path.join(os.homedir(), p.slice(1));
  return path.resolve(workspace, p);
}
