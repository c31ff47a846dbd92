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

/**
 * Follow the daemon's `/events` (SSE) and hand each event to `listener`; resolves to "stop" once
 * the stream is open, or undefined when no daemon answers.
 */
export async function daemonEvents(
  workspace: string,
  listener: (event: { type: string; at: number; data: Record<string, unknown> }) => void,
): Promise<(() => void) | undefined> {
  const daemon = readDaemonFile(workspace);
  const file = tokenPath(workspace);
  if (!daemon || !existsSync(file)) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  const controller = new AbortController();
  let res: Response;
  try {
    res = await fetch(`${daemon.url}/events`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  } catch {
    return undefined;
  }
  if (!res.ok || !res.body) return undefined;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          if (!data) continue;
          try {
            const event = JSON.parse(data) as { type: string; at: number; data: Record<string, unknown> };
            if (typeof event.type === 'string') listener(event);
          } catch {
            // not one of ours
          }
        }
      }
    } catch {
      // aborted, or the daemon went away
    }
  })();
  return () => controller.abort();
}
