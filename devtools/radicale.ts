/**
 * A real Radicale CalDAV server (Debian's `radicale`) for a test: its own config, htpasswd users
 * and collections in a temp folder, on a free loopback port, started as a child process and
 * stopped by `dispose()`. Calendars are made with MKCALENDAR, events PUT and DELETEd over HTTP
 * as a calendar app would.
 *
 *   const dav = await startRadicale({ users: { ada: 'secret' } });
 *   const cal = await dav.mkcalendar('ada', 'work');          // the calendar's URL
 *   await dav.put('ada', cal, 'standup.ics', icsText);
 *   await dav.dispose();
 *
 * Under CI=true a missing Radicale fails the test (scripts/ensure-mail-servers.sh installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './dovecot.js';

export const RADICALE = '/usr/bin/radicale';

export interface Radicale {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  dir: string;
  /** Make a calendar `/<user>/<name>/`; returns its URL. */
  mkcalendar(user: string, name: string): Promise<string>;
  put(user: string, calendar: string, file: string, ics: string): Promise<void>;
  remove(user: string, calendar: string, file: string): Promise<void>;
  /** Stop the server (a source then sees it down); `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

export function radicaleAvailable(): boolean {
  const ok = existsSync(RADICALE);
  if (!ok && process.env.CI === 'true') throw new Error(`${RADICALE} is missing: run scripts/ensure-mail-servers.sh (apt-get install -y radicale)`);
  return ok;
}

export async function startRadicale(opts: { users: Record<string, string> }): Promise<Radicale> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-radicale-'));
  const port = await freePort();
  const users = path.join(dir, 'users');
  writeFileSync(
    users,
    Object.entries(opts.users)
      .map(([u, p]) => `${u}:${p}\n`)
      .join(''),
  );
  mkdirSync(path.join(dir, 'collections'));
  const config = path.join(dir, 'config');
  writeFileSync(
    config,
    [
      '[server]',
      `hosts = 127.0.0.1:${port}`,
      '[auth]',
      'type = htpasswd',
      `htpasswd_filename = ${users}`,
      'htpasswd_encryption = plain',
      // Radicale waits a second after a failed login by default: a test of a wrong password need not.
      'delay = 0',
      '[rights]',
      'type = owner_only',
      '[storage]',
      `filesystem_folder = ${path.join(dir, 'collections')}`,
      '[logging]',
      'level = warning',
      '',
    ].join('\n'),
  );
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  let stderr = '';
  const auth = (user: string) => `Basic ${Buffer.from(`${user}:${opts.users[user]}`).toString('base64')}`;
  const call = async (user: string, method: string, target: string, body?: string, headers: Record<string, string> = {}) => {
    const res = await fetch(new URL(target, url), { method, headers: { authorization: auth(user), ...headers }, body: body ?? null });
    if (!res.ok) throw new Error(`${method} ${target}: HTTP ${res.status} ${await res.text()}`);
  };

  const start = async () => {
    stderr = '';
    const proc = spawn(RADICALE, ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, HOME: dir } });
    child = proc;
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`radicale exited ${proc.exitCode}: ${stderr}`);
      try {
        await fetch(`${url}/.web/`, { signal: AbortSignal.timeout(1000) });
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`radicale did not start on ${url}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const stop = async () => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
  };
  await start();
  return {
    url,
    port,
    dir,
    async mkcalendar(user, name) {
      const target = `/${user}/${name}/`;
      // The principal's own collection first (Radicale makes it on first login; an explicit one is harmless).
      await fetch(new URL(`/${user}/`, url), { method: 'PROPFIND', headers: { authorization: auth(user), depth: '0' } });
      await call(
        user,
        'MKCALENDAR',
        target,
        `<?xml version="1.0" encoding="utf-8"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>${name}</D:displayname></D:prop></D:set></C:mkcalendar>`,
        { 'content-type': 'application/xml' },
      );
      return new URL(target, url).toString();
    },
    put: (user, calendar, file, ics) => call(user, 'PUT', new URL(file, calendar).toString(), ics, { 'content-type': 'text/calendar; charset=utf-8' }),
    remove: (user, calendar, file) => call(user, 'DELETE', new URL(file, calendar).toString()),
    stop,
    start,
    async dispose() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
