/**
 * Issue 9 §3–§4 with the real command: the CLI sends the token only to a daemon that has proved
 * it holds it (a stale daemon.json after a crash pointed `tasks list` at whatever listened on the
 * old port), `start` tightens a loose `.subconscious/` with a log line per file, and binding
 * beyond loopback prints a warning and puts /metrics behind the token.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonFilePath } from '../../src/cli/remote.js';
import { ensureToken } from '../../src/server/token.js';
import { runCli } from '../support/cli.js';
import { startDaemon } from '../support/daemon.js';

const NO_MODEL = { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' };

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A server that records every request whole; `answer` decides the reply (default: a plausible RPC result). */
async function impostor(answer?: (req: Seen, res: http.ServerResponse) => void): Promise<{ port: number; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(record);
      if (answer) return answer(record, res);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url?.startsWith('/auth/proof') ? JSON.stringify({ proof: '0'.repeat(64) }) : JSON.stringify({ jsonrpc: '2.0', id: 1, result: [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const leaked = (seen: Seen[], token: string) => seen.filter((s) => JSON.stringify(s).includes(token));

describe('the CLI asks a daemon for its proof before it sends the token', () => {
  let workspace: string;
  let token: string;
  beforeAll(() => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-stale-'));
    token = ensureToken(workspace);
  });
  afterAll(() => rmSync(workspace, { recursive: true, force: true }));

  it('a stale daemon.json pointing at another program: that program never sees the token, the command runs on the store', async () => {
    const fake = await impostor();
    try {
      writeFileSync(daemonFilePath(workspace), JSON.stringify({ url: `http://127.0.0.1:${fake.port}`, pid: 999_999 }));
      const res = await runCli(['tasks', 'list', '--json'], workspace, NO_MODEL);
      expect(res.code, res.err).toBe(0);
      expect(fake.seen.length).toBeGreaterThan(0); // it was asked for the proof…
      expect(leaked(fake.seen, token)).toEqual([]); // …and got nothing it could use
      expect(fake.seen.every((s) => s.method === 'GET' && s.url.startsWith('/auth/proof?nonce='))).toBe(true);
      // The tasks came from the store itself: the impostor's empty list was not believed.
      expect((JSON.parse(res.out) as { id: string }[]).length).toBeGreaterThan(0);
      expect(res.err).toMatch(/did not prove it is this workspace's daemon, so the token was not sent/);
    } finally {
      await fake.close();
    }
  });

  it('an impostor that answers 404 or garbage gets no token either', async () => {
    for (const answer of [
      (_: Seen, res: http.ServerResponse) => res.writeHead(404).end('not here'),
      (_: Seen, res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"proof":42}'),
    ]) {
      const fake = await impostor(answer);
      try {
        writeFileSync(daemonFilePath(workspace), JSON.stringify({ url: `http://127.0.0.1:${fake.port}`, pid: 999_999 }));
        const res = await runCli(['tasks', 'list', '--json'], workspace, NO_MODEL);
        expect(res.code, res.err).toBe(0);
        expect(leaked(fake.seen, token)).toEqual([]);
      } finally {
        await fake.close();
      }
    }
  });

  it('an impostor relaying the nonce to the real daemon gets no token: the proof names the daemon’s own port', async () => {
    const daemon = await startDaemon({ env: NO_MODEL });
    const realPort = daemon.port;
    // Forward every request to the real daemon, headers and all, and pass its answer back.
    const relay = await impostor((seen, res) => {
      const forward = http.request(
        { host: '127.0.0.1', port: realPort, path: seen.url, method: seen.method, headers: { ...seen.headers, host: `127.0.0.1:${realPort}` } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.end(seen.body);
    });
    try {
      const daemonToken = daemon.token;
      writeFileSync(daemonFilePath(daemon.workspace), JSON.stringify({ url: `http://127.0.0.1:${relay.port}`, pid: process.pid }));
      const res = await runCli(['tasks', 'list', '--json'], daemon.workspace, NO_MODEL);
      expect(res.code, res.err).toBe(0);
      expect(relay.seen.some((s) => s.url.startsWith('/auth/proof'))).toBe(true);
      expect(leaked(relay.seen, daemonToken)).toEqual([]);

      // Pointed at the daemon itself, the same command goes through it (the proof holds).
      writeFileSync(daemonFilePath(daemon.workspace), JSON.stringify({ url: daemon.url, pid: process.pid }));
      const added = await runCli(['tasks', 'add', 'Check the proof path', '--json'], daemon.workspace, NO_MODEL);
      expect(added.code, added.err).toBe(0);
      expect(added.err).toBe('');
      const tasks = await daemon.rpc<{ title: string }[]>('subconscious.tasks_list');
      expect(tasks.map((t) => t.title)).toContain('Check the proof path');
    } finally {
      await relay.close();
      await daemon.dispose();
    }
  });
});

describe('subconscious start', () => {
  it('tightens a loose .subconscious/ with a log line per file, and warns when bound beyond loopback (/metrics then needs the token)', async () => {
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-loose-'));
    const dir = path.join(workspace, '.subconscious');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    writeFileSync(path.join(dir, 'token'), `${'t'.repeat(40)}\n`);
    chmodSync(path.join(dir, 'token'), 0o644);
    const daemon = await startDaemon({ workspace, env: NO_MODEL, config: '[server]\nhost = "0.0.0.0"\n' });
    try {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(path.join(dir, 'token')).mode & 0o777).toBe(0o600);
      expect(statSync(path.join(dir, 'subconscious.db')).mode & 0o777).toBe(0o600);
      expect(statSync(daemonFilePath(workspace)).mode & 0o777).toBe(0o600);
      // Log lines (stderr) may trail the page URL (stdout) a little.
      for (let i = 0; i < 100 && !/tightened .*token/.test(daemon.output()); i++) await new Promise((r) => setTimeout(r, 50));
      const out = daemon.output();
      expect(out).toMatch(/tightened .*\.subconscious from mode 0755 to 0700/);
      expect(out).toMatch(/tightened .*token from mode 0644 to 0600/);

      expect(out).toMatch(/^WARNING: bound to 0\.0\.0\.0, beyond this machine/m);
      // The printed URL and daemon.json name loopback: a browser would be refused Host 0.0.0.0.
      expect(daemon.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((JSON.parse(readFileSync(daemonFilePath(workspace), 'utf8')) as { url: string }).url).toBe(daemon.url);
      expect((await fetch(`${daemon.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${daemon.token}` } })).status).toBe(200);
      expect(await (await fetch(`${daemon.url}/healthz`)).json()).toEqual({ ok: true });
    } finally {
      await daemon.dispose();
      rmSync(workspace, { recursive: true, force: true });
    }
  });
});
