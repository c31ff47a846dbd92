/**
 * The real MCP servers the tests run (from npm, started with `process.execPath`, no shell), as
 * `[[mcp.servers]]` entries. Apart from the agent harness so that a test that only names a
 * server (a daemon's config) does not load the agent runtime.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { McpServerInput } from '../../src/agent/index.js';

const require = createRequire(import.meta.url);

/** The absolute path of an npm package's bin script (run with `process.execPath`, no shell). */
export function packageBin(pkg: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = require(manifestPath) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!;
  return path.join(path.dirname(manifestPath), bin);
}

export function filesystemServer(dir: string, extra: Partial<McpServerInput> = {}): McpServerInput {
  return { name: 'fs', command: process.execPath, args: [packageBin('@modelcontextprotocol/server-filesystem'), dir], ...extra };
}

export function memoryServer(file: string): McpServerInput {
  return { name: 'memory', command: process.execPath, args: [packageBin('@modelcontextprotocol/server-memory')], env: { MEMORY_FILE_PATH: file } };
}
