/**
 * One-shot commands talk to the running daemon when there is one (so its page sees the change
 * live over SSE), and open the store themselves when there is none. The daemon announces itself
 * in `<workspace>/.subconscious/daemon.json` (its URL and pid) while it runs.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { RpcError } from '../core/rpc.js';
import { tokenPath } from '../server/token.js';
import { rpcResult } from './rpc-result.js';

interface DaemonFile {
  url: string;
  pid: number;
}

export function daemonFilePath(workspace: string): string {
  return path.join(workspace, '.subconscious', 'daemon.json');
}

export function announceDaemon(workspace: string, url: string): () => void {
  const file = daemonFilePath(workspace);
  writeFileSync(file, JSON.stringify({ url, pid: process.pid } satisfies DaemonFile), { mode: 0o600 });
  return () => {
    const current = readDaemonFile(workspace);
    if (current?.pid === process.pid) rmSync(file, { force: true });
  };
}

function readDaemonFile(workspace: string): DaemonFile | undefined {
  try {
    const parsed = JSON.parse(readFileSync(daemonFilePath(workspace), 'utf8')) as Partial<DaemonFile>;
    return typeof parsed.url === 'string' && typeof parsed.pid === 'number' ? { url: parsed.url, pid: parsed.pid } : undefined;
  } catch {
    return undefined;
  }
}

/** Call `method` on the daemon serving `workspace`; `undefined` when no daemon answers. */
export async function callRunningDaemon(workspace: string, method: string, params: unknown): Promise<{ result: unknown } | undefined> {
  const daemon = readDaemonFile(workspace);
  const file = tokenPath(workspace);
  if (!daemon || !existsSync(file)) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  let res: Response;
  try {
    res = await fetch(`${daemon.url}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch {
    return undefined; // a stale file: nobody listens there any more
  }
  if (res.status === 401) return undefined; // something else answers on that port
  const body = (await res.json()) as { result?: unknown; error?: RpcError };
  return { result: rpcResult(method, body) };
}
