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

export const memorySourceSchema = z.discriminatedUnion('kind', [folderSourceSchema, imapSourceSchema, icsSourceSchema], {
  error: (issue) => (issue.code === 'invalid_union' ? 'kind must be "folder", "imap" or "ics"' : undefined),
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
export type MemorySourceConfig = z.output<typeof memorySourceSchema>;

/** A source path as an absolute path: `~` is the home folder, a relative path is under the workspace. */
export function resolveSourcePath(workspace: string, p: string): string {
  if (p === '~' || p.startsWith('~/')) return path.join(os.homedir(), p.slice(1));
  return path.resolve(workspace, p);
}
