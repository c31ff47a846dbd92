/**
 * Reading a request body with a byte limit counted as the bytes arrive (chunked bodies too, where
 * there is no Content-Length to check up front). Past the limit we stop reading at once: at most
 * `limit` bytes plus one chunk are ever held, and the caller answers 413 and closes the connection.
 */
import type { IncomingMessage } from 'node:http';

export type LimitedBody = { ok: true; bytes: Buffer } | { ok: false; reason: 'too_large' | 'aborted' };

/** Read from Node's request stream (the daemon's case): no Web stream adapter buffers in between. */
export function readNodeBody(incoming: IncomingMessage, limit: number): Promise<LimitedBody> {
  return new Promise((resolve) => {
    if (incoming.readableEnded) return resolve({ ok: true, bytes: Buffer.alloc(0) });
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: LimitedBody) => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Stop pulling: what the client still sends waits in the kernel until the 413 closes the socket.
        incoming.pause();
        chunks.length = 0;
        finish({ ok: false, reason: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish({ ok: true, bytes: Buffer.concat(chunks, size) });
    const onError = () => finish({ ok: false, reason: 'aborted' });
    const onClose = () => {
      if (!incoming.complete) finish({ ok: false, reason: 'aborted' });
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

/** The same over a Web stream (requests that did not come through Node's HTTP server, e.g. `app.request()`). */
export async function readWebBody(body: ReadableStream<Uint8Array> | null, limit: number): Promise<LimitedBody> {
  if (!body) return { ok: true, bytes: Buffer.alloc(0) };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        return { ok: false, reason: 'too_large' };
      }
      chunks.push(value);
    }
  } catch {
    return { ok: false, reason: 'aborted' };
  }
  return { ok: true, bytes: Buffer.concat(chunks, size) };
}
