/**
 * The bearer token for `/rpc` and `/events`: created at first start in
 * `<workspace>/.subconscious/token` (the folder 0700, the file 0600), read back on later starts.
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
import { canonical } from './host.js';

export const PROOF_PATH = '/auth/proof';
/** A nonce is 16 to 128 URL-safe characters (the CLI sends 32 random bytes, base64url). */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

export function tokenPath(workspace: string): string {
  return path.join(workspace, '.subconscious', 'token');
}

export function ensureToken(workspace: string): string {
  const file = tokenPath(workspace);
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (token.length >= 32) {
      chmodSync(file, 0o600);
      return token;
    }
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
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
