/**
 * Which `Host` headers the daemon answers. A page on another site can make the browser talk to
 * 127.0.0.1 by DNS rebinding (its own name now resolves to 127.0.0.1), but the browser still
 * sends that site's name as `Host`: refusing every name but ours keeps such a page from reading
 * anything, even the routes that need no token (`/`, `/healthz`, `/metrics`, the proof).
 *
 * Allowed: `localhost`, any 127.0.0.0/8 address, `[::1]`, the address the daemon is bound to, and
 * when it is bound to every interface (`0.0.0.0`, `::`) the addresses of this machine's
 * interfaces. Never `0.0.0.0` itself (browsers have sent requests for 0.0.0.0 to local services).
 */
import { isIP } from 'node:net';
import os from 'node:os';

/** The host part of a `Host` header, lower-case, without port, brackets or a trailing dot; null when malformed. */
export function hostName(header: string | undefined): string | null {
  if (!header) return null;
  const value = header.trim().toLowerCase();
  let name: string;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return null;
    const rest = value.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return null;
    name = value.slice(1, end);
    if (isIP(name) !== 6) return null;
    return name;
  }
  const parts = value.split(':');
  if (parts.length > 2 || (parts.length === 2 && !/^\d{1,5}$/.test(parts[1]!))) return null;
  name = parts[0]!.replace(/\.$/, '');
  if (!/^[a-z0-9.-]{1,253}$/.test(name)) return null;
  return name;
}

/** An address a browser or client on this machine reaches only this machine through. */
export function isLoopback(host: string): boolean {
  const name = canonical(host);
  if (name === 'localhost' || name === '::1') return true;
  return isIP(name) === 4 && name.split('.')[0] === '127';
}

/** Lower-case, no brackets; IPv6 compressed, IPv4-mapped IPv6 as its IPv4 address. */
export function canonical(host: string): string {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (isIP(name) !== 6) return name;
  const v6 = new URL(`http://[${name}]`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (!mapped) return v6;
  const hi = parseInt(mapped[1]!, 16);
  const lo = parseInt(mapped[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export function isWildcard(host: string): boolean {
  const name = canonical(host);
  return name === '0.0.0.0' || name === '::' || name === '';
}

/** A checker for one bind address (`-H`): `(hostHeader) => allowed`. */
export function hostChecker(bindHost: string): (header: string | undefined) => boolean {
  const bound = canonical(bindHost);
  const wildcard = isWildcard(bound);
  return (header) => {
    const raw = hostName(header);
    if (raw === null) return false;
    const name = canonical(raw);
    if (isWildcard(name)) return false;
    if (isLoopback(name)) return true;
    if (!wildcard) return name === bound;
    return isIP(name) !== 0 && interfaceAddresses().has(name);
  };
}

function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.add(canonical(a.address.replace(/%.*$/, '')));
  return out;
}
