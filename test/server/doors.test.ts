/**
 * The HTTP doors of issue 9 §2–§3, in-process over real sockets: the Host check on every route
 * (DNS rebinding), the security headers, the body limit counted as bytes stream in (chunked
 * bodies too), the internal-error answer, the daemon's proof, and what changes when the daemon is
 * bound beyond loopback.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EventHistory } from '../../src/core/events.js';
import { RpcDispatcher, defineMethod } from '../../src/core/rpc.js';
import { CONTENT_SECURITY_POLICY } from '../../src/server/headers.js';
import { hostChecker, hostName, isLoopback } from '../../src/server/host.js';
import { createHttpApp, listen, type HttpDeps, type Listening } from '../../src/server/http.js';
import { daemonProof } from '../../src/server/token.js';

const TOKEN = 'doors-test-token-0123456789abcdefghijkl';
const SECRET = 'internal detail: /home/me/.ssh/id_rsa';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request with any Host header (fetch will not send a forged one). */
function raw(server: Listening, opts: { path: string; host?: string; method?: string; headers?: Record<string, string>; body?: string }): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: opts.path,
        method: opts.method ?? 'GET',
        agent: false,
        headers: { host: opts.host ?? `127.0.0.1:${server.port}`, ...opts.headers },
        setHost: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        // An SSE stream never ends: the status and headers are what these tests look at.
        if (res.headers['content-type']?.includes('text/event-stream')) {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
          req.destroy();
        }
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  return { log: pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }), lines };
}

let webRoot: string;
const logs = capturingLogger();

/** The doors need no events: an empty history. */
const noEvents: EventHistory = { head: 0, subscribe: () => () => undefined, replay: async () => ({ events: [], oldest: null, newest: null }) };

function deps(extra: Partial<HttpDeps> = {}): HttpDeps {
  const rpc = new RpcDispatcher([
    defineMethod('echo', z.object({ text: z.string() }).strict(), 'echo', ({ text }) => text),
    defineMethod('broken', z.object({}).strict(), 'a bug', () => {
      throw new Error(SECRET);
    }),
  ]);
  const metrics = new Registry();
  return { rpc, events: noEvents, token: TOKEN, metrics, webRoot, log: logs.log, health: async () => ({ worlds: ['tasks'], store: 'sqlite' }), ...extra };
}

let server: Listening;

beforeAll(async () => {
  webRoot = mkdtempSync(path.join(os.tmpdir(), 'subc-web-'));
  mkdirSync(path.join(webRoot, 'assets'));
  writeFileSync(path.join(webRoot, 'index.html'), '<!doctype html><title>page</title>');
  writeFileSync(path.join(webRoot, 'assets', 'app.js'), 'console.log(1)');
  server = await listen(createHttpApp(deps()), { host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await server.close();
  rmSync(webRoot, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${TOKEN}` };
const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'echo', params: { text: 'hi' } });

describe('Host check', () => {
  const routes = [
    { path: '/' },
    { path: '/assets/app.js' },
    { path: '/healthz' },
    { path: '/metrics' },
    { path: '/auth/proof?nonce=abcdefghijklmnopqrstuv' },
    { path: `/events?token=${TOKEN}` },
    { path: '/rpc', method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: rpcBody },
  ];

  it('refuses a foreign Host on every route with 403 and says which address to use', async () => {
    for (const host of ['evil.example:7777', 'evil.example', '0.0.0.0:7777', '192.0.2.7', 'localhost.evil.example', '127.0.0.1.nip.io', '']) {
      for (const route of routes) {
        const res = await raw(server, { ...route, host });
        expect(res.status, `${route.path} with Host ${host}`).toBe(403);
        expect(res.body).not.toContain('tasks');
        expect(JSON.parse(res.body)).toMatchObject({ error: 'forbidden_host' });
        const message: string = JSON.parse(res.body).message;
        // What to do: the address to open (with the port the request came to, when it named one), or -H on purpose.
        expect(message).toContain(`Open it as http://127.0.0.1:${host.endsWith(':7777') ? '7777' : '<port>'}/`);
        expect(message).toContain('restart it bound to that address with -H');
        expect(res.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      }
    }
    expect(logs.lines.some((l) => l.msg === 'refused a request for a foreign Host' && l.host === 'evil.example:7777')).toBe(true);
    // A Host Node's parser rejects never reaches a route either.
    expect((await raw(server, { path: '/healthz', host: 'a b' })).status).toBe(400);
  });

  it('answers loopback names and addresses on every route', async () => {
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `LOCALHOST.:${server.port}`, '127.0.0.2', `[::1]:${server.port}`]) {
      for (const route of routes) {
        const res = await raw(server, { ...route, host });
        expect(res.status, `${route.path} with Host ${host}`).toBe(200);
      }
    }
  });

  it('parses Host values strictly', () => {
    expect(hostName('Example.COM:80')).toBe('example.com');
    expect(hostName('[::1]:7777')).toBe('::1');
    expect(hostName('[::1')).toBeNull();
    expect(hostName('::1')).toBeNull(); // IPv6 needs brackets
    expect(hostName('a:b:c')).toBeNull();
    expect(hostName('host:port')).toBeNull();
    expect(isLoopback('127.9.9.9')).toBe(true);
    expect(isLoopback('[::ffff:127.0.0.1]')).toBe(true);
    expect(isLoopback('0:0:0:0:0:0:0:1')).toBe(true);
    expect(isLoopback('10.0.0.1')).toBe(false);
    expect(isLoopback('localhost.example')).toBe(false);
  });

  it('bound to an address, also answers that address; bound to every interface, this machine’s addresses but never 0.0.0.0', () => {
    const lan = hostChecker('192.0.2.10');
    expect(lan('192.0.2.10:7777')).toBe(true);
    expect(lan('192.0.2.11:7777')).toBe(false);
    expect(lan('localhost')).toBe(true);
    const all = hostChecker('0.0.0.0');
    const own = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (own) expect(all(`${own}:7777`)).toBe(true);
    expect(all('0.0.0.0:7777')).toBe(false);
    expect(all('[::]:7777')).toBe(false);
    expect(all('203.0.113.9')).toBe(false);
    expect(all('rebind.example')).toBe(false);
  });
});

describe('security headers', () => {
  it('every response carries CSP (self only, no framing), X-Frame-Options, nosniff and no-referrer', async () => {
    const cases = [
      await raw(server, { path: '/' }),
      await raw(server, { path: '/assets/app.js' }),
      await raw(server, { path: '/assets/missing.js' }),
      await raw(server, { path: '/healthz' }),
      await raw(server, { path: '/rpc', method: 'POST', body: rpcBody }),
      await raw(server, { path: '/rpc', method: 'POST', headers: auth, body: rpcBody }),
    ];
    expect(cases.map((c) => c.status)).toEqual([200, 200, 404, 200, 401, 200]);
    for (const res of cases) {
      expect(res.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
  });
});

describe('body limit', () => {
  /** Send `total` bytes as a chunked body (no Content-Length); report the answer, what was sent, and whether the daemon then closed the connection. */
  function chunked(total: number): Promise<{ status: number; sent: number; closed: boolean }> {
    return new Promise((resolve, reject) => {
      let sent = 0;
      let status = 0;
      const req = http.request({
        host: '127.0.0.1',
        port: server.port,
        path: '/rpc',
        method: 'POST',
        agent: false,
        headers: { ...auth, 'transfer-encoding': 'chunked' },
      });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (sent < total && status === 0) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        if (status === 0) req.end();
      };
      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        // Keep sending as a careless client would: the daemon reads a little more, then cuts the connection.
        const keepSending = setInterval(() => req.write(chunk, () => undefined), 5);
        const timeout = setTimeout(() => finish(false), 10_000);
        const finish = (closed: boolean) => {
          clearInterval(keepSending);
          clearTimeout(timeout);
          resolve({ status, sent, closed });
        };
        res.socket.once('close', () => finish(true));
      });
      req.on('error', (err) => (status ? undefined : reject(err)));
      pump();
    });
  }

  it('answers 413 to a chunked body past the limit, stops reading and closes the connection', async () => {
    const res = await chunked(50 * 1024 * 1024);
    expect(res.status).toBe(413);
    expect(res.sent).toBeLessThan(20 * 1024 * 1024); // the client was stopped long before 50 MB
    expect(res.closed).toBe(true);
  });

  it('answers 413 at once to a declared Content-Length past the limit', async () => {
    const res = await raw(server, { path: '/rpc', method: 'POST', headers: { ...auth, 'content-length': '5000000' } }).catch(() => null);
    expect(res?.status).toBe(413);
    expect(JSON.parse(res!.body).error.message).toMatch(/Request body over 1,000,000 bytes\. Send smaller requests/);
  });

  it('reads a chunked body under the limit', async () => {
    const small = await new Promise<Raw>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: server.port, path: '/rpc', method: 'POST', agent: false, headers: { ...auth, 'transfer-encoding': 'chunked' } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.write(rpcBody.slice(0, 10));
      req.end(rpcBody.slice(10));
    });
    expect(small.status).toBe(200);
    expect(JSON.parse(small.body)).toEqual({ jsonrpc: '2.0', id: 1, result: 'hi' });
  });

  it('refuses a body one byte over a small limit, and reads one at the limit', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'echo', params: { text: 'x'.repeat(100) } });
    const small = await listen(createHttpApp(deps({ maxBodyBytes: Buffer.byteLength(body) })), { host: '127.0.0.1', port: 0 });
    try {
      expect((await raw(small, { path: '/rpc', method: 'POST', headers: auth, body })).status).toBe(200);
      expect((await raw(small, { path: '/rpc', method: 'POST', headers: auth, body: `${body} ` })).status).toBe(413);
    } finally {
      await small.close();
    }
  });
});

describe('internal errors', () => {
  it('an RPC bug answers "internal error" with an id, and the log line has that id and the real message', async () => {
    const res = await raw(server, { path: '/rpc', method: 'POST', headers: auth, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'broken' }) });
    expect(res.status).toBe(200);
    expect(res.body).not.toContain('id_rsa');
    const { error } = JSON.parse(res.body) as { error: { code: number; data: { error_id: string } } };
    expect(error.code).toBe(-32603);
    const line = logs.lines.find((l) => l.error_id === error.data.error_id);
    expect(JSON.stringify(line)).toContain('id_rsa');
  });

  it('a failing HTTP handler answers 500 "internal error" with an id the log line carries', async () => {
    const { log, lines } = capturingLogger();
    const failing = await listen(
      createHttpApp(
        deps({
          log,
          health: async () => {
            throw new Error(SECRET);
          },
        }),
      ),
      { host: '127.0.0.1', port: 0 },
    );
    try {
      const res = await raw(failing, { path: '/healthz' });
      expect(res.status).toBe(500);
      expect(res.body).not.toContain('id_rsa');
      const body = JSON.parse(res.body) as { error: string; error_id: string; message: string };
      expect(body.error).toBe('internal');
      expect(body.message).toContain(`error id ${body.error_id}`);
      const line = lines.find((l) => l.error_id === body.error_id);
      expect(line?.msg).toBe('http handler failed');
      expect(JSON.stringify(line)).toContain('id_rsa');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    } finally {
      await failing.close();
    }
  });
});

describe('the daemon’s proof', () => {
  it('answers HMAC(token, address, port, nonce) without the token, and refuses a malformed nonce', async () => {
    const nonce = 'n0nce-of-the-client_123456';
    const res = await raw(server, { path: `/auth/proof?nonce=${nonce}` });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const { proof } = JSON.parse(res.body) as { proof: string };
    expect(proof).toBe(daemonProof(TOKEN, { address: '127.0.0.1', port: server.port }, nonce));
    expect(proof).not.toBe(daemonProof(TOKEN, { address: '127.0.0.1', port: server.port + 1 }, nonce));
    expect(proof).not.toBe(daemonProof('another-token-0123456789abcdefghijklmn', { address: '127.0.0.1', port: server.port }, nonce));
    expect(res.body).not.toContain(TOKEN);
    expect((await raw(server, { path: '/auth/proof?nonce=short' })).status).toBe(400);
    expect((await raw(server, { path: '/auth/proof' })).status).toBe(400);
  });
});

describe('bound beyond loopback', () => {
  it('/metrics needs the token and /healthz tells strangers only that it is up', async () => {
    const exposed = await listen(createHttpApp(deps({ bindHost: '0.0.0.0' })), { host: '127.0.0.1', port: 0 });
    try {
      expect((await raw(exposed, { path: '/metrics' })).status).toBe(401);
      expect((await raw(exposed, { path: '/metrics', headers: auth })).status).toBe(200);
      expect(JSON.parse((await raw(exposed, { path: '/healthz' })).body)).toEqual({ ok: true });
      expect(JSON.parse((await raw(exposed, { path: '/healthz', headers: auth })).body)).toEqual({ ok: true, worlds: ['tasks'], store: 'sqlite' });
    } finally {
      await exposed.close();
    }
    // On loopback both stay open (a local Prometheus scrapes without the token).
    expect((await raw(server, { path: '/metrics' })).status).toBe(200);
  });
});
