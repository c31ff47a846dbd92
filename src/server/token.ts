/**
 * The bearer token for `/rpc` and `/events`: created at first start in
 * `<workspace>/.subconscious/token` with mode 0600, read back on later starts.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

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
  mkdirSync(path.dirname(file), { recursive: true });
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
