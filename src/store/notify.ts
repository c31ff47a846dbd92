/**
 * Postgres `LISTEN/NOTIFY` for one store. NOTIFY is database-wide, so every channel is scoped to
 * the store's schema (two deployments or test runs on one database never hear each other).
 * One dedicated connection listens (a pooled one would be handed to other queries); when it
 * drops it is opened again with back-off and `onReconnect` runs, so a listener catches up on
 * what it may have missed while deaf. Payloads stay small on purpose (an id): NOTIFY refuses
 * 8000 bytes and more, so senders notify an id and listeners read the row.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';

export interface Notifications {
  /** `name` scoped to this store: the channel to `pg_notify` on and to listen to. */
  channel(name: string): string;
  /** Listen to `channel` until the returned function is called. */
  listen(channel: string, handlers: { onNotify: (payload: string) => void; onReconnect?: () => void }): Promise<() => Promise<void>>;
  /** Stop every listener (the store closes). */
  close(): Promise<void>;
}

const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5_000;

export function pgNotifications(opts: { connectionString: string; schema?: string | undefined; scope: string }): Notifications {
  const suffix = createHash('sha256').update(opts.scope).digest('hex').slice(0, 12);
  const listeners = new Set<() => Promise<void>>();
  return {
    channel: (name) => `${name}_${suffix}`,
    async listen(channel, handlers) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
      let client: pg.Client | null = null;
      let stopped = false;
      let delay = RETRY_FIRST_MS;
      let timer: NodeJS.Timeout | null = null;
      const connect = async (): Promise<void> => {
        const c = new pg.Client({ connectionString: opts.connectionString, ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}) });
        c.on('notification', (n) => {
          if (n.channel === channel) handlers.onNotify(n.payload ?? '');
        });
        c.on('error', () => reconnect(c));
        c.on('end', () => reconnect(c));
        await c.connect();
        await c.query(`LISTEN ${channel}`);
        client = c;
        delay = RETRY_FIRST_MS;
      };
      const reconnect = (dead: pg.Client) => {
        if (stopped || client !== dead) return;
        client = null;
        void dead.end().catch(() => undefined);
        const attempt = () => {
          timer = null;
          if (stopped) return;
          connect().then(
            () => handlers.onReconnect?.(),
            () => {
              delay = Math.min(RETRY_MAX_MS, delay * 2);
              timer = setTimeout(attempt, delay);
              timer.unref();
            },
          );
        };
        timer = setTimeout(attempt, delay);
        timer.unref();
      };
      await connect();
      const stop = async () => {
        stopped = true;
        listeners.delete(stop);
        if (timer) clearTimeout(timer);
        const c = client;
        client = null;
        await c?.end().catch(() => undefined);
      };
      listeners.add(stop);
      return stop;
    },
    async close() {
      await Promise.all([...listeners].map((stop) => stop()));
    },
  };
}
