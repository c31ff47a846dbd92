/**
 * The in-process event bus. The server relays it to `GET /events` (SSE); the UI and tests
 * subscribe. Event names are dotted (`tick.started`, `tasks.log_changed`, …).
 */
export interface BusEvent {
  type: string;
  at: number;
  data: Record<string, unknown>;
}

export type Listener = (event: BusEvent) => void;

export class EventBus {
  private listeners = new Set<Listener>();

  constructor(private readonly now: () => number = Date.now) {}

  emit(type: string, data: Record<string, unknown> = {}): void {
    const event: BusEvent = { type, at: this.now(), data };
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A broken subscriber must never break the emitter (a tick, an RPC call).
      }
    }
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get size(): number {
    return this.listeners.size;
  }
}
