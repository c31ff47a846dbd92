/**
 * One `/events` connection. Every event goes out as an SSE `message` whose `id:` is the store's
 * event id (monotonic, the same on every worker of one database) and whose data is
 * `{type, at, data}`.
 *
 * - First a `hello` (`data.last_event_id`: where this stream starts; its SSE id says the same).
 * - A client that reconnects with `Last-Event-ID: N` (or `?last_event_id=N`, for an EventSource
 *   opened anew) gets every stored event after N, in order, then the live ones, each once.
 * - When some of what it missed is no longer kept (older than the store keeps, or the store was
 *   reset), it gets `events.gap` instead (`last_event_id`, `oldest_id` kept, `head_id`) and the
 *   stream goes on from the head: the client reloads what it shows.
 * - A client that stops reading never grows memory: past a backlog, live events are dropped and
 *   read back from the store when it catches up (or it is told of a gap).
 */
import type { SSEStreamingApi } from 'hono/streaming';
import type { EventHistory, StoredEvent } from '../core/events.js';
import type { Presence } from '../core/presence.js';

const KEEPALIVE_MS = 15_000;
const MAX_BACKLOG = 1_000;
const REPLAY_PAGE = 500;

/** The id a client resumes after: a whole number, none, or not one (a 400). */
export function lastEventId(raw: string | undefined): number | null | 'invalid' {
  if (raw === undefined || raw.trim() === '') return null;
  return /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : 'invalid';
}

/** `now`: the app's clock, which stamps `hello` and `events.gap` as it stamps every event. */
export async function relayEvents(
  stream: SSEStreamingApi,
  events: EventHistory,
  resume: number | null,
  presence?: Presence,
  now: () => number = Date.now,
): Promise<void> {
  const queue: StoredEvent[] = [];
  let behind = resume !== null;
  let wake: (() => void) | null = null;
  const leave = presence?.attach();
  const unsubscribe = events.subscribe((event) => {
    if (queue.length >= MAX_BACKLOG) {
      queue.length = 0;
      behind = true; // read them back from the store instead of holding them
    } else queue.push(event);
    wake?.();
  });
  const stop = () => {
    unsubscribe();
    leave?.();
    wake?.();
  };
  stream.onAbort(stop);
  let sent = resume ?? events.head;
  const send = (id: number, type: string, at: number, data: Record<string, unknown>) =>
    stream.writeSSE({ event: 'message', id: String(id), data: JSON.stringify({ type, at, data }) });
  await send(sent, 'hello', now(), { last_event_id: sent });
  while (!stream.aborted && !stream.closed) {
    if (behind) {
      behind = false;
      const page = await events.replay(sent, REPLAY_PAGE);
      const newest = page.newest ?? 0;
      const oldest = page.oldest ?? newest + 1;
      if (sent < oldest - 1 || sent > newest) {
        await send(newest, 'events.gap', now(), { last_event_id: sent, oldest_id: oldest, head_id: newest });
        sent = newest;
        continue;
      }
      for (const event of page.events) {
        await send(event.id, event.type, event.at, event.data);
        sent = event.id;
      }
      if (page.events.length === REPLAY_PAGE) behind = true;
      continue;
    }
    while (queue.length && !behind) {
      const event = queue.shift()!;
      if (event.id <= sent) continue; // already replayed
      await send(event.id, event.type, event.at, event.data);
      sent = event.id;
    }
    if (behind) continue;
    await new Promise<void>((resolve) => {
      wake = resolve;
      const t = setTimeout(resolve, KEEPALIVE_MS);
      t.unref?.();
    });
    wake = null;
    if (!queue.length && !behind && !stream.aborted) await stream.write(': keepalive\n\n');
  }
  stop();
}
