/**
 * Who owns a row that outlives a process (a tick lease, a pending approval): `host:pid[:tag]`.
 * On this host we can tell whether the owner still runs, so a restarted daemon reclaims what a
 * killed one left at once instead of waiting for a timeout. Owners on other hosts are trusted.
 */
import os from 'node:os';

export function processOwner(tag?: string): string {
  return tag === undefined ? `${os.hostname()}:${process.pid}` : `${os.hostname()}:${process.pid}:${tag}`;
}

/** True when `owner` names this very process (whatever its tag). */
export function ownedByThisProcess(owner: string | null): boolean {
  const parsed = parseOwner(owner);
  return !!parsed && parsed.host === os.hostname() && parsed.pid === process.pid;
}

/** True when `owner` is a process on this host that no longer exists. */
export function ownerIsGone(owner: string | null): boolean {
  const parsed = parseOwner(owner);
  return !!parsed && parsed.host === os.hostname() && parsed.pid !== process.pid && !processAlive(parsed.pid);
}

function parseOwner(owner: string | null): { host: string; pid: number } | null {
  if (!owner) return null;
  const [host, pidText] = owner.split(':');
  const pid = Number(pidText);
  return host && Number.isInteger(pid) && pid > 0 ? { host, pid } : null;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
