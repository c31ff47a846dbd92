/**
 * The in-process event bus, typed by an event map (name → payload) from `protocol/`. The server
 * relays it to `GET /events` (SSE); the page, the CLI and tests subscribe. Each layer and module
 * is handed an `Emitter` of its own events only.
 */
import type { EventMap, WireEvent } from '../protocol/contract.js';

/** What a layer or module may do with the bus: send its own events. */
export interface Emitter<E extends EventMap> {
  emit<K extends keyof E & string>(type: K, data: E[K]): void;
}

/** Sending events by name, unchecked (see `EventBus.publish`). */
export interface Publisher {
  publish(type: string, data: Record<string, unknown>): void;
}

/** Listening to every event, whatever its type (the SSE relay). */
export interface Subscribable {
  subscribe(listener: (event: { type: string; at: number; data: Record<string, unknown> }) => void): () => void;
}

/** An event as listeners see it; without a map, any event. */
export type BusEvent<E extends EventMap = EventMap> = WireEvent<E>;
export type Listener<E extends EventMap = EventMap> = (event: BusEvent<E>) => void;

export class EventBus<E extends EventMap = EventMap> implements Emitter<E>, Publisher {
  private listeners = new Set<Listener<E>>();

  constructor(private readonly now: () => number = Date.now) {}

  emit<K extends keyof E & string>(type: K, data: E[K]): void {
    const event = { type, at: this.now(), data } as BusEvent<E>;
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A broken subscriber must never break the emitter (a tick, an RPC call).
      }
    }
  }

  /**
   * Send an event whose type is checked elsewhere: a module's events are checked against its own
   * contract (in `defineModule`), which the app's bus type cannot name.
   */
  publish(type: string, data: Record<string, unknown>): void {
    this.emit(type as keyof E & string, data as E[keyof E & string]);
  }

  subscribe(listener: Listener<E>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The next event of `type` whose payload passes `where` (tests wait on typed events rather than
   * polling). Rejects when `signal` aborts.
   */
  next<K extends keyof E & string>(type: K, where: (data: E[K]) => boolean = () => true, signal?: AbortSignal): Promise<{ type: K; at: number; data: E[K] }> {
    return new Promise((resolve, reject) => {
      const off = this.subscribe((event) => {
        if (event.type !== type) return;
        const data = event.data as E[K];
        if (!where(data)) return;
        off();
        signal?.removeEventListener('abort', onAbort);
        resolve({ type, at: event.at, data });
      });
      const onAbort = () => {
        off();
        reject(signal?.reason);
      };
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  get size(): number {
    return this.listeners.size;
  }
}

/** An event as the store keeps it: `id` is the SSE `id:`, the same on every worker of one database. */
export interface StoredEvent {
  id: number;
  type: string;
  at: number;
  data: Record<string, unknown>;
}

/**
 * Every worker's events, in id order (the `/events` relay): live ones, and the recent past from
 * the bounded store for a client that reconnects with `Last-Event-ID`.
 */
export interface EventHistory {
  /** The newest id delivered to subscribers (0 before any). */
  readonly head: number;
  /** Events in id order, each once, from every worker on the store. */
  subscribe(listener: (event: StoredEvent) => void): () => void;
  /** Stored events after `after` (at most `limit`), and the ids the store still keeps. */
  replay(after: number, limit: number): Promise<{ events: StoredEvent[]; oldest: number | null; newest: number | null }>;
}
