/**
 * Is anybody there to answer? Attached clients (a page or a CLI following `/events`) are counted
 * by the faces that serve them; an approval that nobody can answer fails fast instead of waiting
 * out its expiry (issue 11 §4).
 */
import { serviceKey } from './services.js';

export class Presence {
  private clients = 0;

  /** A client attached; call the returned function when it leaves. */
  attach(): () => void {
    this.clients++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.clients--;
    };
  }

  get attached(): boolean {
    return this.clients > 0;
  }

  get count(): number {
    return this.clients;
  }
}

export const PresenceKey = serviceKey<Presence>('app.presence');
