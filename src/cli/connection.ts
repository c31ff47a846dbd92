/**
 * What a one-shot command talks to: the running daemon when there is one (so its page sees the
 * change live), else the store itself through an app opened in this process for the command's
 * length. Either way calls and their errors read the same (`rpc-result.ts`), and events come
 * from the daemon's `/events` or from this process's bus.
 */
import type { App } from '../app/app.js';
import { createApp } from '../app/app.js';
import type { WorldModule } from '../engine/index.js';
import { silentLogger } from '../core/logger.js';
import { callRunningDaemon, daemonEvents } from './remote.js';
import { callInProcess } from './rpc-result.js';

type EventListener = (event: { type: string; at: number; data: Record<string, unknown> }) => void;

export class CliConnection {
  private app: Promise<App> | null = null;
  private daemonSeen = false;

  constructor(
    private readonly workspace: () => string,
    private readonly modules?: readonly WorldModule[],
  ) {}

  async call(method: string, params: Record<string, unknown>): Promise<unknown> {
    if (!this.app) {
      const viaDaemon = await callRunningDaemon(this.workspace(), method, params);
      if (viaDaemon) {
        this.daemonSeen = true;
        return viaDaemon.result;
      }
    }
    return callInProcess((await this.open()).rpc, method, params);
  }

  /** Events as they happen: from the daemon that answered, else from this process. */
  async subscribe(listener: EventListener): Promise<() => void> {
    if (this.daemonSeen || (!this.app && (await callRunningDaemon(this.workspace(), 'rpc.methods', {})))) {
      const stop = await daemonEvents(this.workspace(), listener);
      if (stop) return stop;
    }
    const app = await this.open();
    return app.events.subscribe((event) => listener(event));
  }

  /** Does a running daemon answer for this workspace (rather than this process opening the store)? */
  async daemonRunning(): Promise<boolean> {
    if (this.daemonSeen) return true;
    if (this.app) return false;
    this.daemonSeen = (await callRunningDaemon(this.workspace(), 'rpc.methods', {})) !== undefined;
    return this.daemonSeen;
  }

  /** Close the in-process app, if one was opened. */
  async close(): Promise<void> {
    const app = this.app;
    this.app = null;
    if (app) await (await app).close();
  }

  private open(): Promise<App> {
    this.app ??= createApp({ workspace: this.workspace(), log: silentLogger, ...(this.modules ? { modules: this.modules } : {}) });
    return this.app;
  }
}
