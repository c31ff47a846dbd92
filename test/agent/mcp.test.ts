import { getEventListeners } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { EventBus, FakeClock, isSubconsciousError } from '../../src/core/index.js';
import { McpManager, exposedToolName, type McpServerInput } from '../../src/agent/index.js';
import { filesystemServer, memoryServer, packageBin } from './harness.js';

let dir: string;
let clock: FakeClock;
let managers: McpManager[];

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'subc-mcp-'));
  clock = new FakeClock();
  managers = [];
});
afterEach(async () => {
  for (const m of managers) await m.close();
  rmSync(dir, { recursive: true, force: true });
});

function manager(servers: McpServerInput[]): McpManager {
  const m = new McpManager({ servers, clock });
  managers.push(m);
  return m;
}

const isCode = (code: string) => (e: unknown) => isSubconsciousError(e, code);

describe('McpManager config', () => {
  it('rejects bad [[mcp.servers]] entries with config_invalid naming the key', () => {
    const bad = (servers: unknown[]) => () => new McpManager({ servers: servers as McpServerInput[], clock });
    expect(bad([{ name: 'x' }])).toThrow(/mcp\.servers\.0\.command: set exactly one of `command`/);
    expect(bad([{ name: 'x', command: 'a', url: 'http://127.0.0.1:1/mcp' }])).toThrow(/mcp\.servers\.0\.url/);
    expect(bad([{ name: 'has space', command: 'a' }])).toThrow(/mcp\.servers\.0\.name/);
    expect(bad([{ name: 'x', command: 'a', tools: { t: { access: 'admin' } } }])).toThrow(/mcp\.servers\.0\.tools\.t\.access/);
    expect(bad([{ name: 'x', command: 'a', colour: 'red' }])).toThrow(/colour/);
    expect(bad([{ name: 'x', url: 'http://127.0.0.1:1/mcp', args: ['a'] }])).toThrow(/only apply to a stdio server/);
    expect(
      bad([
        { name: 'x', command: 'a' },
        { name: 'x', command: 'b' },
      ]),
    ).toThrow(/mcp\.servers\.1\.name: duplicate/);
    try {
      bad([{ name: 'x' }])();
    } catch (err) {
      expect(isSubconsciousError(err, 'config_invalid')).toBe(true);
    }
  });

  it('names tools <server>__<tool> within 64 characters', () => {
    expect(exposedToolName('fs', 'read_text_file')).toBe('fs__read_text_file');
    expect(exposedToolName('srv', 'weird.name/x')).toBe('srv__weird_name_x');
    expect(exposedToolName('s', 'x'.repeat(100))).toHaveLength(64);
  });
});

describe('McpManager with real MCP servers from npm', () => {
  it('decides read/write from the annotations, and a config override wins', async () => {
    const m = manager([
      filesystemServer(dir, { tools: { read_text_file: { access: 'write' }, write_file: { access: 'read' }, edit_file: { allow_automatically: true } } }),
      memoryServer(path.join(dir, 'memory.jsonl')),
    ]);
    expect(m.health().map((s) => s.status)).toEqual(['disconnected', 'disconnected']);
    const tools = await m.listTools();
    const access = Object.fromEntries(tools.map((t) => [t.exposedName, t.access]));
    expect(access).toMatchObject({
      fs__list_directory: 'read', // readOnlyHint: true
      fs__create_directory: 'write', // readOnlyHint: false, destructiveHint: false
      fs__move_file: 'write', // destructiveHint: true
      fs__read_text_file: 'write', // overridden
      fs__write_file: 'read', // overridden
      memory__read_graph: 'read',
      memory__create_entities: 'write',
    });
    expect(tools.find((t) => t.name === 'edit_file')!.allowAutomatically).toBe(true);
    expect(tools.find((t) => t.name === 'move_file')!.allowAutomatically).toBe(false);
    const health = m.health();
    expect(health.map((s) => [s.name, s.status])).toEqual([
      ['fs', 'connected'],
      ['memory', 'connected'],
    ]);
    expect(health[0]!.tools).toContain('read_text_file');
    expect(health[0]!.last_checked_at).toBe(clock.now());
    expect(health[0]!.pid).toBeGreaterThan(0);
  });

  it('calls tools, returns tool-level failures as results, and reuses one process', async () => {
    const m = manager([filesystemServer(dir), memoryServer(path.join(dir, 'memory.jsonl'))]);
    const wrote = await m.callTool('fs', 'write_file', { path: path.join(dir, 'a.txt'), content: 'alpha' });
    expect(wrote.isError).toBe(false);
    expect(readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('alpha');
    const pid = m.health()[0]!.pid;
    const read = await m.callTool('fs', 'read_text_file', { path: path.join(dir, 'a.txt') });
    expect(read).toMatchObject({ text: 'alpha', isError: false });
    expect(m.health()[0]!.pid).toBe(pid);

    const missing = await m.callTool('fs', 'read_text_file', { path: path.join(dir, 'missing.txt') });
    expect(missing.isError).toBe(true);
    expect(missing.text).toMatch(/ENOENT|no such file/i);
    const outside = await m.callTool('fs', 'read_text_file', { path: '/etc/hostname' });
    expect(outside.isError).toBe(true);

    await m.callTool('memory', 'create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['likes tea'] }] });
    const graph = await m.callTool('memory', 'read_graph', {});
    expect(graph.text).toContain('likes tea');

    await expect(m.callTool('nope', 'x', {})).rejects.toSatisfy(isCode('not_found'));
  });

  it('many calls under one long-lived signal leave no listener on it', async () => {
    const m = manager([filesystemServer(dir)]);
    const run = new AbortController();
    for (let i = 0; i < 15; i++) expect((await m.callTool('fs', 'list_directory', { path: dir }, run.signal)).isError).toBe(false);
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
  });

  it('restarts a server that died on its next use', async () => {
    const bus = new EventBus(() => clock.now());
    const changes: string[] = [];
    bus.subscribe((e) => e.type === 'mcp.changed' && changes.push(`${String(e.data.server)}:${String(e.data.status)}:${String(e.data.restarts)}`));
    const m = new McpManager({ servers: [filesystemServer(dir)], clock, events: bus });
    managers.push(m);
    await m.listTools();
    const first = m.health()[0]!;
    const exited = new Promise<void>((resolve) => {
      const poll = () => (m.health()[0]!.status === 'disconnected' ? resolve() : setImmediate(poll));
      poll();
    });
    process.kill(first.pid!, 'SIGKILL');
    await exited;
    expect(m.health()[0]).toMatchObject({ status: 'disconnected', restarts: 0 });
    expect(m.health()[0]!.error).toMatch(/stopped/);

    const res = await m.callTool('fs', 'list_directory', { path: dir });
    expect(res.isError).toBe(false);
    expect(m.health()[0]).toMatchObject({ status: 'connected', restarts: 1 });
    expect(m.health()[0]!.pid).not.toBe(first.pid);
    // Every status change is announced, so the Skills page follows it live.
    expect(changes).toEqual(['fs:starting:0', 'fs:connected:0', 'fs:disconnected:0', 'fs:starting:1', 'fs:connected:1']);
    await m.close();
    expect(changes.at(-1)).toBe('fs:disconnected:1');
  });

  it('a call cancelled while its server is still starting stops waiting at once; close() stops the starting process', async () => {
    const pidFile = path.join(dir, 'pid');
    // A server that starts but never answers the MCP handshake.
    const silent = `require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); process.stdin.resume();`;
    const m = new McpManager({ servers: [{ name: 'mute', command: process.execPath, args: ['-e', silent] }], clock, connectTimeoutMs: 600_000 });
    managers.push(m);
    const ctl = new AbortController();
    const call = m.callTool('mute', 'anything', {}, ctl.signal);
    await vi.waitFor(() => expect(existsSync(pidFile) && readFileSync(pidFile, 'utf8').length > 0).toBe(true), { timeout: 20_000, interval: 20 });
    ctl.abort();
    await expect(call).rejects.toSatisfy(isCode('cancelled'));
    expect(m.health()[0]!.status).toBe('starting');

    const pid = Number(readFileSync(pidFile, 'utf8'));
    await m.close();
    expect(m.health()[0]).toMatchObject({ status: 'disconnected' });
    await vi.waitFor(() => expect(processAlive(pid)).toBe(false), { timeout: 20_000, interval: 20 });
  });

  it('close() while a server is starting leaves it disconnected, not in error', async () => {
    const m = manager([filesystemServer(dir)]);
    const starting = m.listTools();
    expect(m.health()[0]!.status).toBe('starting');
    await m.close();
    await expect(starting).resolves.toEqual([]);
    expect(m.health()[0]).toMatchObject({ status: 'disconnected' });
    expect(m.health()[0]!.error).toBeUndefined();
  });

  it('a server that fails to start is left out, reported, and retried with backoff on the clock', async () => {
    const spawns = path.join(dir, 'spawns.log');
    // Fails on its first start, then becomes the real memory server.
    const script = `
      const fs = require('node:fs');
      fs.appendFileSync(${JSON.stringify(spawns)}, 'x');
      if (fs.readFileSync(${JSON.stringify(spawns)}, 'utf8').length === 1) { console.error('boom: missing API key'); process.exit(1); }
      import(${JSON.stringify(pathToFileURL(packageBin('@modelcontextprotocol/server-memory')).href)});
    `;
    const m = manager([
      filesystemServer(dir),
      { name: 'flaky', command: process.execPath, args: ['-e', script], env: { MEMORY_FILE_PATH: path.join(dir, 'm.jsonl') } },
    ]);

    const tools = await m.listTools();
    expect(tools.every((t) => t.server === 'fs')).toBe(true);
    const flaky = m.health()[1]!;
    expect(flaky.status).toBe('error');
    expect(flaky.error).toContain('could not start');
    expect(flaky.error).toContain('boom: missing API key');

    // Within the backoff window: no new process, a clear error.
    await expect(m.callTool('flaky', 'read_graph', {})).rejects.toThrow(/next retry in 1 s/);
    await m.listTools();
    expect(readFileSync(spawns, 'utf8')).toBe('x');

    await clock.advance(1000);
    const after = await m.listTools();
    expect(after.some((t) => t.exposedName === 'flaky__read_graph')).toBe(true);
    expect(m.health()[1]).toMatchObject({ status: 'connected', restarts: 1 });
    expect(m.health()[1]!.error).toBeUndefined();
  });

  it('check() pings the servers and close() stops them', async () => {
    const m = manager([filesystemServer(dir)]);
    const health = await m.check();
    expect(health[0]).toMatchObject({ status: 'connected', last_checked_at: clock.now() });
    const pid = health[0]!.pid!;
    clock.set(clock.now() + 60_000);
    expect((await m.check())[0]!.last_checked_at).toBe(clock.now());
    await m.close();
    expect(m.health()[0]!.status).toBe('disconnected');
    expect(processAlive(pid)).toBe(false);
    await expect(m.listTools()).resolves.toEqual([]);
  });
});

describe('McpManager over streamable HTTP', () => {
  let server: http.Server;
  let url: string;
  let calls: string[];

  beforeEach(async () => {
    calls = [];
    server = http.createServer(async (req, res) => {
      // Stateless: one MCP server and transport per request (the SDK's documented pattern).
      const mcp = new McpServer({ name: 'http-test', version: '1.0.0' });
      mcp.registerTool(
        'lookup',
        { description: 'Look a word up', inputSchema: { word: z.string() }, annotations: { readOnlyHint: true } },
        async ({ word }) => {
          calls.push(word);
          return { content: [{ type: 'text', text: `${word}: a test word` }] };
        },
      );
      mcp.registerTool('post', { description: 'Post a message', inputSchema: { text: z.string() } }, async () => ({
        content: [{ type: 'text', text: 'posted' }],
      }));
      // Contradictory hints: treated as writing, to be safe.
      mcp.registerTool('purge', { description: 'Purge the cache', annotations: { readOnlyHint: true, destructiveHint: true } }, async () => ({
        content: [{ type: 'text', text: 'purged' }],
      }));
      // Structured content only, no text block.
      mcp.registerTool('stats', { description: 'Counts', outputSchema: { count: z.number() }, annotations: { readOnlyHint: true } }, async () => ({
        content: [],
        structuredContent: { count: 7 },
      }));
      if (req.url === '/collide') {
        // Two names that read the same to the model once sanitised.
        mcp.registerTool('look.up', { description: 'Dotted twin', annotations: { readOnlyHint: true } }, async () => ({
          content: [{ type: 'text', text: 'dotted' }],
        }));
        mcp.registerTool('look_up', { description: 'Underscored twin' }, async () => ({ content: [{ type: 'text', text: 'underscored' }] }));
      }
      const transport = new StreamableHTTPServerTransport({}); // no session ids: the stateless mode
      res.on('close', () => void transport.close());
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('connects by url, lists tools with their access and calls them', async () => {
    const m = manager([{ name: 'web', url }]);
    const tools = await m.listTools();
    expect(Object.fromEntries(tools.map((t) => [t.exposedName, t.access]))).toEqual({
      web__lookup: 'read',
      web__post: 'write',
      web__purge: 'write',
      web__stats: 'read',
    });
    expect(await m.callTool('web', 'lookup', { word: 'ephemeral' })).toMatchObject({ text: 'ephemeral: a test word', isError: false });
    expect(await m.callTool('web', 'stats', {})).toEqual({ text: '{"count":7}', isError: false, structured: { count: 7 } });
    expect(calls).toEqual(['ephemeral']);
    expect(m.health()[0]).toMatchObject({ status: 'connected', pid: null });
  });

  it('logs a per-tool override that names no tool of the server (a typo does nothing silently)', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const m = new McpManager({ servers: [{ name: 'web', url, tools: { lookup: { access: 'write' }, pots: { allow_automatically: true } } }], clock, log });
    managers.push(m);
    const tools = await m.listTools();
    expect(tools.find((t) => t.name === 'lookup')!.access).toBe('write');
    const warnings = lines.map((l) => JSON.parse(l) as { msg: string; tools?: string[] });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.tools).toEqual(['pots']);
    expect(warnings[0]!.msg).toContain('tools.pots names no tool of this server');
  });

  it('two tools with one model-facing name: the first is kept, the second left out and logged', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const m = new McpManager({ servers: [{ name: 'web', url: url.replace(/\/mcp$/, '/collide') }], clock, log });
    managers.push(m);
    const tools = await m.listTools();
    const twins = tools.filter((t) => t.exposedName === 'web__look_up');
    expect(twins.map((t) => t.name)).toEqual(['look.up']);
    expect(tools.map((t) => t.exposedName).sort()).toEqual(['web__look_up', 'web__lookup', 'web__post', 'web__purge', 'web__stats']);
    expect(lines.map((l) => (JSON.parse(l) as { dropped?: string }).dropped)).toEqual(['web/look_up']);
  });

  it('a server that went away fails the call with mcp_unavailable, is reported, and is reconnected when back', async () => {
    const m = manager([{ name: 'web', url }]);
    await m.listTools();
    const { port } = server.address() as AddressInfo;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));

    await expect(m.callTool('web', 'lookup', { word: 'gone' })).rejects.toSatisfy(isCode('mcp_unavailable'));
    expect(m.health()[0]).toMatchObject({ status: 'disconnected', restarts: 0 });
    expect(calls).toEqual([]);

    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
    expect(await m.callTool('web', 'lookup', { word: 'back' })).toMatchObject({ text: 'back: a test word', isError: false });
    expect(m.health()[0]).toMatchObject({ status: 'connected', restarts: 1 });
    expect(calls).toEqual(['back']);
  });
});

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Keep the helpers honest: the bin scripts really exist.
it('resolves the npm MCP servers’ bin scripts', () => {
  expect(existsSync(packageBin('@modelcontextprotocol/server-filesystem'))).toBe(true);
  expect(existsSync(packageBin('@modelcontextprotocol/server-memory'))).toBe(true);
});
