/**
 * A failed connection to a source's server as what a person can act on: which step failed
 * (host, tls, auth, folder, other), the server's own words, and what to do. "Test connection"
 * and every failed sync say it the same way.
 */
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { MemorySourceFailure } from '../../protocol/memory.js';

export interface FailureContext {
  host: string;
  port: number;
  user?: string | undefined;
  /** The folder or calendar being opened when it failed. */
  folder?: string | undefined;
  tls?: boolean | undefined;
}

const HOST_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'CONNECT_TIMEOUT',
  'GREETING_TIMEOUT',
  'NoConnection',
  'ETIMEOUT',
]);

export function classifyFailure(err: unknown, ctx: FailureContext): MemorySourceFailure {
  // Our own (a secret that cannot be read): it already says what to do.
  if (err instanceof SubconsciousError) return { kind: 'auth', message: err.message, hint: err.hint ?? "Check the source's settings." };
  const e = (err ?? {}) as {
    code?: unknown;
    authenticationFailed?: unknown;
    responseText?: unknown;
    serverResponseCode?: unknown;
    status?: unknown;
    message?: unknown;
  };
  const code = typeof e.code === 'string' ? e.code : '';
  const said = typeof e.responseText === 'string' && e.responseText ? e.responseText : describeError(err);
  const where = `${ctx.host}:${ctx.port}`;
  if (e.authenticationFailed === true || e.status === 401 || e.status === 403 || e.serverResponseCode === 'AUTHENTICATIONFAILED')
    return {
      kind: 'auth',
      message: `${where} refused the login${ctx.user ? ` of ${ctx.user}` : ''}: ${said}`,
      hint: 'Check the user and the secret in password_env / password_file (Gmail and Fastmail need an app password, or an OAuth2 token with auth = "oauth2").',
    };
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(code) || /\b(SSL|TLS) |wrong version number|certificate/i.test(said))
    return {
      kind: 'tls',
      message: `TLS with ${where} failed: ${said}`,
      hint:
        ctx.tls === false
          ? 'The server expects TLS on this port: set tls = true (port 993 for IMAP).'
          : 'Check the port (IMAP over TLS is 993; 143 is STARTTLS: set tls = false), or set tls_verify = false only for a self-signed server you trust.',
    };
  if (HOST_CODES.has(code) || /connect|timed? ?out|socket|closed/i.test(code))
    return {
      kind: 'host',
      message: `cannot reach ${where}: ${said}`,
      hint: 'Check the host and port, and that the server is up and reachable from this machine; the source tries again with backoff.',
    };
  if (
    ctx.folder !== undefined &&
    (e.serverResponseCode === 'NONEXISTENT' || code === 'NONEXISTENT' || /doesn.t exist|not exist|unknown mailbox|no such/i.test(said) || e.status === 404)
  )
    return {
      kind: 'folder',
      message: `${where} has no folder "${ctx.folder}": ${said}`,
      hint: 'Check the folder name and its case (Gmail: "[Gmail]/Sent Mail"); the server lists them in the source\'s test connection.',
    };
  return { kind: 'other', message: `${where}: ${said}`, hint: 'See the daemon log for details; the source tries again with backoff.' };
}
