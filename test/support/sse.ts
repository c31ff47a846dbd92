/**
 * A `/events` client for tests: reads the SSE stream message by message (`id:` and the JSON
 * `data:`), as an EventSource would, with `Last-Event-ID` when resuming.
 */
export interface SseMessage {
  id: number;
  type: string;
  at: number;
  data: Record<string, unknown>;
}

export interface SseClient {
  status: number;
  /** The next message whose type passes `where` (messages before it are kept in `seen`). */
  next(where?: (m: SseMessage) => boolean): Promise<SseMessage>;
  /** Every message read so far, in order. */
  seen: SseMessage[];
  close(): void;
}

export async function openEvents(baseUrl: string, token: string, lastEventId?: number): Promise<SseClient> {
  const controller = new AbortController();
  const res = await fetch(`${baseUrl}/events`, {
    headers: { authorization: `Bearer ${token}`, ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}) },
    signal: controller.signal,
  });
  const seen: SseMessage[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let read = 0;
  const more = async (): Promise<void> => {
    const { value, done } = await reader.read();
    if (done) throw new Error('the event stream ended');
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: ?(.*)$/m.exec(block)?.[1];
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.replace(/^data: ?/, ''))
        .join('\n');
      if (id === undefined || !data) continue; // a keepalive comment
      const parsed = JSON.parse(data) as Omit<SseMessage, 'id'>;
      seen.push({ id: Number(id), ...parsed });
    }
  };
  return {
    status: res.status,
    seen,
    async next(where = () => true) {
      for (;;) {
        while (read < seen.length) {
          const m = seen[read++]!;
          if (where(m)) return m;
        }
        await more();
      }
    },
    close: () => controller.abort(),
  };
}
