/**
 * Starts the real daemon (`subconscious start`) as a child process on a temporary workspace,
 * the way a person would, and waits for it to print its page URL. `restart()` reuses the port
 * (a page left open reconnects to the same origin); `kill()` is a SIGKILL for crash tests.
 * `startInProcessDaemon` runs the same daemon in the test's process on a fake clock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { App } from '../../src/app/app.js';
import type { FakeClock } from '../../src/core/clock.js';
import { CLI, ROOT } from './cli.js';

export interface TestDaemon {
  url: string;
  /** The page URL with the token, as `start` prints it. */
  pageUrl: string;
  token: string;
  port: number;
  workspace: string;
  /** Everything the process printed so far (stdout + stderr). */
  output(): string;
  /** JSON-RPC call with the token; throws on an RPC error. */
  rpc<T = unknown>(method: string, params?: unknown): Promise<T>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit (no cleanup runs in the daemon). */
  kill(): Promise<void>;
  /** Start again on the same workspace and port. */
  restart(): Promise<void>;
  /** Stop (if running) and delete the workspace (unless `keepWorkspace`). */
  dispose(): Promise<void>;
}

export interface StartDaemonOptions {
  workspace?: string;
  /** Extra environment (e.g. SUBCONSCIOUS_LOCAL_BASE_URL of a scripted model server). */
  env?: Record<string, string>;
  /** Written to `<workspace>/subconscious.toml` before start. */
  config?: string;
  port?: number;
  keepWorkspace?: boolean;
}

export async function startDaemon(opts: StartDaemonOptions = {}): Promise<TestDaemon> {
  const workspace = opts.workspace ?? mkdtempSync(path.join(os.tmpdir(), 'subc-daemon-'));
  if (opts.config !== undefined) writeFileSync(path.join(workspace, 'subconscious.toml'), opts.config);
  let child: ChildProcess | null = null;
  let log = '';
  let port = opts.port ?? 0;
  let url = '';
  let token = '';

  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const proc = spawn(process.execPath, ['--enable-source-maps', CLI, 'start', '--workspace', workspace, '--port', String(port)], {
        cwd: ROOT,
        env: { ...process.env, SUBCONSCIOUS_LOG_LEVEL: process.env.SUBCONSCIOUS_LOG_LEVEL ?? 'warn', ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = proc;
      const timer = setTimeout(() => reject(new Error(`daemon did not start within 30 s:\n${log}`)), 30_000);
      const onData = (chunk: Buffer) => {
        log += chunk.toString();
        const m = /open (http:\/\/[^/\s]+)\/\?token=([\w-]+)/.exec(log);
        if (m && !url) {
          url = m[1]!;
          token = m[2]!;
          port = Number(new URL(url).port);
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', (c: Buffer) => (log += c.toString()));
      proc.once('exit', (code) => {
        clearTimeout(timer);
        if (!url) reject(new Error(`daemon exited with ${code} before starting:\n${log}`));
      });
    });

  const waitExit = (proc: ChildProcess) =>
    new Promise<number | null>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
      proc.once('exit', (code) => resolve(code));
    });

  await launch();

  const daemon: TestDaemon = {
    get url() {
      return url;
    },
    get pageUrl() {
      return `${url}/?token=${token}`;
    },
    get token() {
      return token;
    },
    get port() {
      return port;
    },
    workspace,
    output: () => log,
    rpc: (method, params) => rpcOver(url, token, method, params),
    async stop() {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return proc?.exitCode ?? null;
      proc.kill('SIGTERM');
      return waitExit(proc);
    },
    async kill() {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGKILL');
      await waitExit(proc);
    },
    async restart() {
      await daemon.stop();
      url = '';
      await launch();
    },
    async dispose() {
      await daemon.stop();
      if (!opts.keepWorkspace && !opts.workspace) rmSync(workspace, { recursive: true, force: true });
    },
  };
  return daemon;
}

/** One JSON-RPC call over a daemon's `/rpc` with its token; throws on an RPC error. */
async function rpcOver<T>(url: string, token: string, method: string, params: unknown = {}): Promise<T> {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export interface InProcessDaemon extends Pick<TestDaemon, 'url' | 'pageUrl' | 'token' | 'port' | 'workspace' | 'rpc' | 'dispose'> {
  /** The app behind it (registry, services, store), in this process. */
  app: App;
  /** The clock it runs on: time moves only when the test moves it (`advance`). */
  clock: FakeClock;
  /** Move the clock `ms` on in steps of `stepMs` (default 15 s, the shortest heartbeat tick); after each, the ticks it started run to their end. */
  advance(ms: number, stepMs?: number): Promise<void>;
  /** Move the clock on a step at a time until `done()` holds (asked before each step); fails past `maxMs`. Returns the time moved. */
  advanceUntil(done: () => Promise<boolean>, maxMs: number, stepMs?: number): Promise<number>;
  /** A world's ticks so far (quiet ones too). */
  ticks(world: string): Promise<number>;
}

const STEP_MS = 15_000;
const SETTLE_TIMEOUT_MS = 30_000;

/**
 * Until the app's scheduler has nothing of its own going: no tick running or waiting to write its
 * next time, and no pass of its loop since the last look, on three looks in a row (a pass the
 * clock woke fires its ticks after a read).
 */
async function settled(app: App): Promise<void> {
  const { scheduler } = app.registry;
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let passes = -1;
  for (let calm = 0; calm < 3;) {
    await new Promise((r) => setTimeout(r, 10));
    const idle = scheduler.inFlight() === 0 && !app.registry.list().some((i) => i.running) && scheduler.passes === passes;
    calm = idle ? calm + 1 : 0;
    passes = scheduler.passes;
    if (Date.now() > deadline) throw new Error(`the daemon's ticks did not settle within ${SETTLE_TIMEOUT_MS / 1000} s`);
  }
}

export async function startInProcessDaemon(opts: Omit<StartDaemonOptions, 'port' | 'keepWorkspace'> & { clock: FakeClock }): Promise<InProcessDaemon> {
  const workspace = opts.workspace ?? mkdtempSync(path.join(os.tmpdir(), 'subc-daemon-'));
  if (opts.config !== undefined) writeFileSync(path.join(workspace, 'subconscious.toml'), opts.config);
  // Imported here: the child daemon's users never load the app's modules.
  const { startDaemon: startCliDaemon } = await import('../../src/cli/daemon.js');
  const daemon = await startCliDaemon({ workspace, port: 0, env: { ...process.env, ...opts.env }, clock: opts.clock });
  const { url } = daemon.http;
  const { clock } = opts;
  const advance = async (ms: number, stepMs = STEP_MS) => {
    for (let moved = 0; moved < ms; moved += stepMs) {
      await clock.advance(Math.min(stepMs, ms - moved));
      await settled(daemon.app);
    }
  };
  return {
    url,
    pageUrl: daemon.pageUrl,
    token: daemon.token,
    port: daemon.http.port,
    workspace,
    app: daemon.app,
    clock,
    rpc: (method, params) => rpcOver(url, daemon.token, method, params),
    advance,
    async advanceUntil(done, maxMs, stepMs = STEP_MS) {
      for (let moved = 0; ; moved += stepMs) {
        if (await done()) return moved;
        if (moved >= maxMs) throw new Error(`not done after ${maxMs / 1000} s on the daemon's clock`);
        await advance(stepMs, stepMs);
      }
    },
    ticks: async (world) => (await daemon.app.registry.get(world).status()).total_ticks,
    async dispose() {
      await daemon.stop();
      if (!opts.workspace) rmSync(workspace, { recursive: true, force: true });
    },
  };
}
