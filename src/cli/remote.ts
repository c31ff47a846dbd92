/**
 * One-shot commands talk to the running daemon when there is one (so its page sees the change
 * live over SSE), and open the store themselves when there is none. The daemon announces itself
 * in `<workspace>/.subconscious/daemon.json` (its URL and pid, mode 0600) while it runs.
 *
 * That file outlives a crash, and another program may listen on its port afterwards. So the
 * token goes only to an address that has first proved it holds the token (server/token.ts):
 * `GET /auth/proof?nonce=…` must answer the HMAC of our nonce and of the address and port we
 * actually connected to. Anything else — nobody listening, a refusal, a wrong or missing proof —
 * and the command runs on the store itself, as if no daemon were running.
 */
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { RpcError } from '../core/rpc.js';
import { PROOF_PATH, newNonce, proofMatches, tokenPath } from '../server/token.js';
import { rpcResult } from './rpc-result.js';

interface DaemonFile {
  url: string;
  pid: number;
}

const PROOF_TIMEOUT_MS = 3_000;
const CALL_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export function daemonFilePath(workspace: string): string {
  return path.join(workspace, '.subconscious', 'daemon.json');
}

export function announceDaemon(workspace: string, url: string): () => void {
  const file = daemonFilePath(workspace);
  // Written beside and renamed: a reader never sees half a file, and the mode is 0600 even when
  // an older file with looser bits was there (writeFileSync's mode applies only to new files).
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify({ url, pid: process.pid } satisfies DaemonFile), { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, file);
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

export interface RemoteOptions {
  /** Told when something answers at daemon.json's address but cannot prove it is this workspace's daemon. */
  warn?: (line: string) => void;
}

/** Call `method` on the daemon serving `workspace`; `undefined` when no daemon answers (or none proves itself). */
export async function callRunningDaemon(
  workspace: string,
  method: string,
  params: unknown,
  opts: RemoteOptions = {},
): Promise<{ result: unknown } | undefined> {
  const daemon = readDaemonFile(workspace);
  const file = tokenPath(workspace);
  if (!daemon || !existsSync(file)) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  let base: URL;
  try {
    base = new URL(daemon.url);
  } catch {
    return undefined;
  }
  if (base.protocol !== 'http:') return undefined;

  const proved = await proveDaemon(base, token);
  if (!proved.ok) {
    if (proved.answered) {
      (opts.warn ?? ((l) => process.stderr.write(`${l}\n`)))(
        `subconscious: ${daemon.url} (from .subconscious/daemon.json) did not prove it is this workspace's daemon, so the token was not sent; running without it. ` +
          'If the daemon crashed, this file is stale and the next `subconscious start` replaces it.',
      );
    }
    return undefined;
  }
  // Talk to the address that proved itself, not to a name that might resolve elsewhere now.
  const res = await request({
    ...proved.end,
    path: '/rpc',
    method: 'POST',
    timeoutMs: CALL_TIMEOUT_MS,
    token,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  if (!res || res.status === 401) return undefined;
  let body: { result?: unknown; error?: RpcError };
  try {
    body = JSON.parse(res.body) as typeof body;
  } catch {
    return undefined;
  }
  return { result: rpcResult(method, body) };
}

type Proof = { ok: true; end: { address: string; port: number } } | { ok: false; answered: boolean };

async function proveDaemon(base: URL, token: string): Promise<Proof> {
  const nonce = newNonce();
  const res = await request({
    host: base.hostname.replace(/^\[|\]$/g, ''),
    port: Number(base.port || 80),
    path: `${PROOF_PATH}?nonce=${nonce}`,
    method: 'GET',
    timeoutMs: PROOF_TIMEOUT_MS,
  });
  if (!res) return { ok: false, answered: false };
  let proof: unknown;
  try {
    proof = (JSON.parse(res.body) as { proof?: unknown }).proof;
  } catch {
    proof = undefined;
  }
  if (res.status !== 200 || !res.remote || !proofMatches(token, res.remote, nonce, proof)) return { ok: false, answered: true };
  return { ok: true, end: res.remote };
}

interface Answer {
  status: number;
  body: string;
  /** The address and port this request actually reached. */
  remote: { address: string; port: number } | null;
}

/** One HTTP request without keep-alive; null when nothing answered in time. */
function request(opts: {
  host?: string;
  address?: string;
  port: number;
  path: string;
  method: 'GET' | 'POST';
  timeoutMs: number;
  token?: string;
  body?: string;
}): Promise<Answer | null> {
  const host = opts.address ?? opts.host ?? '127.0.0.1';
  return new Promise((resolve) => {
    const req = http.request(
      {
        host,
        port: opts.port,
        path: opts.path,
        method: opts.method,
        agent: false,
        timeout: opts.timeoutMs,
        headers: {
          ...(opts.body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(opts.body) } : {}),
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        },
      },
      (res) => {
        const socket = res.socket;
        const remote = socket.remoteAddress && socket.remotePort ? { address: socket.remoteAddress, port: socket.remotePort } : null;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) return req.destroy();
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), remote }));
        res.on('error', () => resolve(null));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.end(opts.body);
  });
}

/**
 * Follow the daemon's `/events` (SSE) and hand each event to `listener`; resolves to "stop" once
 * the stream is open, or undefined when no daemon answers. The token goes only to a daemon that
 * proved itself, at the address that proved it.
 */
export async function daemonEvents(
  workspace: string,
  listener: (event: { type: string; at: number; data: Record<string, unknown> }) => void,
): Promise<(() => void) | undefined> {
  const daemon = readDaemonFile(workspace);
  const file = tokenPath(workspace);
  if (!daemon || !existsSync(file)) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  let base: URL;
  try {
    base = new URL(daemon.url);
  } catch {
    return undefined;
  }
  const proved = await proveDaemon(base, token);
  if (!proved.ok) return undefined;
  const host = proved.end.address.includes(':') ? `[${proved.end.address}]` : proved.end.address;
  const controller = new AbortController();
  let res: Response;
  try {
    res = await fetch(`http://${host}:${proved.end.port}/events`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
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
          const data = buffer
            .slice(0, end)
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          buffer = buffer.slice(end + 2);
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
