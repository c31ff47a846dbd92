/**
 * The bearer token for `/rpc` and `/events`, one for the cluster (`resolveToken`), first found of:
 * 1. `SUBCONSCIOUS_TOKEN` (at least 32 characters, no spaces);
 * 2. `SUBCONSCIOUS_TOKEN_FILE` (a file holding it);
 * 3. on Postgres, the database (`shared_secrets`): the first worker stores one, every worker on
 *    that database uses it (a workspace that already had a token file offers that one);
 * 4. `<workspace>/.subconscious/token` (the folder 0700, the file 0600), created at first start.
 * The token in use is also written to the workspace's token file, where this workspace's CLI
 * reads it.
 *
 * The daemon's proof: before a client sends the token to an address found in `daemon.json`, it
 * asks that address to prove it holds the token, without sending it: `GET /auth/proof?nonce=N`
 * answers `HMAC-SHA256(token, "subconscious-daemon-proof/1\n<address>\n<port>\n<N>")`, where
 * address and port are the local end of the connection the daemon was asked on. The client
 * computes the same with its own copy of the token and the address it connected to, and sends the
 * token only if they match. A stale `daemon.json` pointing at some other program (after a crash)
 * gets no token; neither does one that relays the nonce to the real daemon on another address or
 * port, since the real daemon then proves a different address.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SubconsciousError } from '../core/errors.js';
import { canonical } from './host.js';

export const PROOF_PATH = '/auth/proof';
/** A nonce is 16 to 128 URL-safe characters (the CLI sends 32 random bytes, base64url). */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

export function tokenPath(workspace: string): string {
  return path.join(workspace, '.subconscious', 'token');
}

export type TokenSource = 'SUBCONSCIOUS_TOKEN' | 'SUBCONSCIOUS_TOKEN_FILE' | 'database' | 'workspace';

export interface ResolveTokenOptions {
  env?: NodeJS.ProcessEnv;
  /** On Postgres: the value kept in the database, storing `initial` when there is none. */
  shared?: ((initial: string) => Promise<string>) | undefined;
}

/** The cluster's token and where it came from (see the file comment for the order). */
export async function resolveToken(workspace: string, opts: ResolveTokenOptions = {}): Promise<{ token: string; source: TokenSource }> {
  const env = opts.env ?? process.env;
  const given = env.SUBCONSCIOUS_TOKEN?.trim();
  if (given) return { token: keep(workspace, checked(given, 'SUBCONSCIOUS_TOKEN')), source: 'SUBCONSCIOUS_TOKEN' };
  const file = env.SUBCONSCIOUS_TOKEN_FILE?.trim();
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new SubconsciousError('config_invalid', `SUBCONSCIOUS_TOKEN_FILE: cannot read ${file}: ${(err as Error).message}`, {
        hint: 'Point it at a readable file that holds the token (32 characters or more), or unset it.',
      });
    }
    return { token: keep(workspace, checked(text.trim(), `the file ${file} (SUBCONSCIOUS_TOKEN_FILE)`)), source: 'SUBCONSCIOUS_TOKEN_FILE' };
  }
  if (opts.shared) return { token: keep(workspace, checked(await opts.shared(readToken(workspace) ?? newToken()), 'the database')), source: 'database' };
  return { token: ensureToken(workspace), source: 'workspace' };
}

export function ensureToken(workspace: string): string {
  return readToken(workspace) ?? keep(workspace, newToken());
}

/** The workspace's token file, when it holds a token (tightened to 0600). */
function readToken(workspace: string): string | null {
  const file = tokenPath(workspace);
  if (!existsSync(file)) return null;
  const token = readFileSync(file, 'utf8').trim();
  if (token.length < MIN_TOKEN_CHARS) return null;
  chmodSync(file, 0o600);
  return token;
}

/** Write `token` to the workspace's token file (unless it holds it already); returns it. */
function keep(workspace: string, token: string): string {
  if (readToken(workspace) === token) return token;
  const file = tokenPath(workspace);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}

const MIN_TOKEN_CHARS = 32;

function newToken(): string {
  return randomBytes(24).toString('base64url');
}

function checked(token: string, from: string): string {
  if (token.length < MIN_TOKEN_CHARS || /\s/.test(token)) {
    throw new SubconsciousError('config_invalid', `The token from ${from} must be at least ${MIN_TOKEN_CHARS} characters with no spaces.`, {
      hint: 'Make one with `openssl rand -base64 32` (or unset it: the daemon then makes its own).',
    });
  }
  return token;
}

export function tokenMatches(expected: string, given: string | null | undefined): boolean {
  if (!given) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The proof for one nonce on one connection end (`address` as seen by the daemon, or as connected to by the client). */
export function daemonProof(token: string, end: { address: string; port: number }, nonce: string): string {
  return createHmac('sha256', token)
    .update(`subconscious-daemon-proof/1\n${canonical(end.address)}\n${end.port}\n${nonce}`)
    .digest('hex');
}

export function proofMatches(token: string, end: { address: string; port: number }, nonce: string, given: unknown): boolean {
  if (typeof given !== 'string' || !/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(daemonProof(token, end, nonce), 'hex'), Buffer.from(given, 'hex'));
}

export function newNonce(): string {
  return randomBytes(32).toString('base64url');
}
