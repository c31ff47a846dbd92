/**
 * The load rig's heavy client on a thread of its own (status-under-load.ts). The rig's server
 * runs in the process that measures it; a client sending a hundred `usage.summary` calls and
 * reading their 10 MB of answers on the server's event loop had its own HTTP work and garbage
 * measured as the server's latency (a real client is another process). Here it runs beside the
 * server, on another thread: it still takes the machine's CPU, as another process would, but
 * not the server's event loop. Only `subconscious.status`, the call being measured, is asked
 * from the main thread.
 *
 * The thread's code is a short plain-JS string (`eval: true`), as in store/read-worker.ts, so it
 * runs the same under tsx and vitest.
 */
import { Worker } from 'node:worker_threads';

export interface BatchCounts {
  status: number;
  bytes: number;
  /** Answers in the batch's answer, errors among them, and of those the `over_budget` ones. */
  answers: number;
  errors: number;
  overBudget: number;
}

export interface LoadClient {
  /** POST `body` (JSON text) to `url`; the answer is read to its end and counted, never parsed. */
  post(url: string, token: string, body: string): Promise<BatchCounts>;
  /** The thread's id in the kernel (Linux; null elsewhere), so a bench can tell its CPU from the server's. */
  threadId: Promise<number | null>;
  close(): Promise<void>;
}

const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
let tid = null;
try { tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()); } catch {}
parentPort.postMessage({ tid });
const markers = { answers: '"jsonrpc":"2.0"', errors: '"error":{', overBudget: '"code":"over_budget"' };
const keep = Math.max(...Object.values(markers).map((m) => m.length)) - 1;
parentPort.on('message', async ({ id, url, token, body }) => {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token }, body });
    const counts = { status: res.status, bytes: 0, answers: 0, errors: 0, overBudget: 0 };
    let tail = '';
    const decoder = new TextDecoder();
    // Counted chunk by chunk, each joined to the last few characters before it (a marker may
    // straddle two chunks); a marker wholly inside the kept tail was counted with the chunk before.
    const scan = (text) => {
      const window = tail + text;
      for (const k of Object.keys(markers)) {
        for (let at = window.indexOf(markers[k]); at !== -1; at = window.indexOf(markers[k], at + 1)) if (at + markers[k].length > tail.length) counts[k]++;
      }
      tail = window.slice(-keep);
    };
    for await (const chunk of res.body) {
      counts.bytes += chunk.byteLength;
      scan(decoder.decode(chunk, { stream: true }));
    }
    scan(decoder.decode());
    parentPort.postMessage({ id, counts });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

export function startLoadClient(): LoadClient {
  const worker = new Worker(THREAD_SOURCE, { eval: true });
  const pending = new Map<number, { resolve: (c: BatchCounts) => void; reject: (e: Error) => void }>();
  let next = 0;
  let told: (tid: number | null) => void = () => undefined;
  const threadId = new Promise<number | null>((resolve) => (told = resolve));
  worker.on('message', ({ id, counts, error, tid }: { id?: number; counts?: BatchCounts; error?: string; tid?: number | null }) => {
    if (id === undefined) return told(tid ?? null);
    const p = pending.get(id);
    pending.delete(id);
    if (error !== undefined) p?.reject(new Error(`load client: ${error}`));
    else p?.resolve(counts!);
  });
  worker.on('error', (err) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  });
  return {
    threadId,
    post: (url, token, body) =>
      new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, url, token, body });
      }),
    close: async () => {
      await worker.terminate();
    },
  };
}
