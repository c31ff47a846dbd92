/**
 * The `/events` stream. EventSource cannot send headers, so the token goes in `?token=`.
 * We run our own reconnect (exponential backoff, capped) instead of the browser's fixed retry,
 * so the page can say when the daemon is down and for how long it will wait. Each reconnect
 * sends the id of the last event seen (`?last_event_id=`): the daemon replays what was missed, in
 * order, so views stay as they are; when it says `events.gap` (what was missed is no longer kept)
 * every view reloads.
 */
import { getToken } from './token.js';
import type { LiveEvent } from './types.js';

export type LiveState = 'connecting' | 'open' | 'down';

export interface LiveSnapshot {
  state: LiveState;
  /** When down: epoch ms of the next attempt. */
  retryAt: number | null;
  attempts: number;
}

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 10_000;

type Handler = (e: LiveEvent) => void;

export class LiveEvents {
  private source: EventSource | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private snapshot: LiveSnapshot = { state: 'connecting', retryAt: null, attempts: 0 };
  private readonly handlers = new Set<Handler>();
  private readonly watchers = new Set<(s: LiveSnapshot) => void>();
  private stopped = true;
  /** The SSE id of the last event received: where a reconnect resumes. */
  private lastEventId: string | null = null;
  /** This connection resumes after `lastEventId` (its hello needs no reload). */
  private resuming = false;

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
    this.source?.close();
    this.source = null;
  }

  /** Try now instead of waiting out the backoff (a successful RPC says the daemon is back). */
  retryNow(): void {
    if (this.stopped || this.snapshot.state !== 'down') return;
    this.clearTimer();
    this.connect();
  }

  get state(): LiveSnapshot {
    return this.snapshot;
  }

  subscribe(fn: Handler): () => void {
    this.handlers.add(fn);
    return () => this.handlers.delete(fn);
  }

  watch(fn: (s: LiveSnapshot) => void): () => void {
    this.watchers.add(fn);
    return () => this.watchers.delete(fn);
  }

  private connect(): void {
    const token = getToken() ?? '';
    this.source?.close();
    if (this.snapshot.state !== 'down') this.set({ state: 'connecting', retryAt: null, attempts: this.snapshot.attempts });
    this.resuming = this.lastEventId !== null;
    const resume = this.lastEventId !== null ? `&last_event_id=${encodeURIComponent(this.lastEventId)}` : '';
    const es = new EventSource(`/events?token=${encodeURIComponent(token)}${resume}`);
    this.source = es;
    es.onopen = () => {
      if (this.source !== es) return;
      this.set({ state: 'open', retryAt: null, attempts: 0 });
    };
    // The server sends every event as a `message` whose JSON names its type.
    es.onmessage = (m: MessageEvent<string>) => {
      if (this.source !== es) return;
      if (m.lastEventId) this.lastEventId = m.lastEventId;
      this.dispatch(m.data);
    };
    es.onerror = () => {
      if (this.source !== es) return;
      es.close();
      this.source = null;
      this.scheduleRetry();
    };
  }

  private dispatch(raw: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return; // not one of ours
    }
    if (typeof parsed !== 'object' || parsed === null) return;
    const e = parsed as { type?: unknown; at?: unknown; data?: unknown };
    if (typeof e.type !== 'string') return;
    const data = typeof e.data === 'object' && e.data !== null ? e.data : {};
    // A resumed stream replays what was missed: its hello changes nothing. A first hello, or a
    // gap (what was missed is gone), makes every view reload.
    if (e.type === 'hello' && this.resuming) return;
    if (e.type === 'events.gap') this.emit({ type: 'hello', at: Date.now(), data: { reconnected: true } });
    // The wire boundary: the daemon sends only its contracts' events (ProductEvents), each payload
    // built from the typed map on its side, so the one assertion is here and nowhere downstream.
    this.emit({ type: e.type, at: typeof e.at === 'number' ? e.at : Date.now(), data } as LiveEvent);
  }

  private emit(e: LiveEvent): void {
    for (const fn of this.handlers) fn(e);
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    const attempts = this.snapshot.attempts + 1;
    const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempts - 1));
    this.set({ state: 'down', retryAt: Date.now() + delay, attempts });
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private set(s: LiveSnapshot): void {
    this.snapshot = s;
    for (const fn of this.watchers) fn(s);
  }
}
