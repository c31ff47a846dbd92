/**
 * DESIGN.md's "Layers" and "Faces" as a test on the import graph: lower layers never import
 * higher ones; the engine knows no world and a world knows no other world; the page imports only
 * the protocol; the protocol imports nothing but zod; the server reads no table; the store knows
 * no module's tables; `bench/` imports nothing from `test/`; only `llm/` reaches a model provider.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { productModules } from '../src/app/modules.js';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SRC = path.join(ROOT, 'src');

/** Which top-level folders of src/ each folder may import (DESIGN.md "Layers"). */
const ALLOWED: Record<string, string[]> = {
  protocol: [],
  core: ['protocol'],
  store: ['core'],
  llm: ['core', 'store', 'protocol'],
  graph: ['core', 'store'],
  // Durable jobs, leases and the worker registry (pg-boss on Postgres, own tables on SQLite).
  coordination: ['core', 'store'],
  engine: ['core', 'coordination', 'store', 'graph', 'llm', 'protocol'],
  agent: ['core', 'store', 'llm', 'protocol'],
  // Hosts (no tick) use the same module front door as worlds, hence `engine`.
  bots: ['core', 'coordination', 'store', 'llm', 'engine', 'agent', 'memory', 'protocol'],
  memory: ['core', 'store', 'engine', 'protocol'],
  // External agent runtimes' bots on the heartbeat's API (a host module, like the bots host, beside it).
  runtimes: ['core', 'store', 'engine', 'agent', 'bots', 'protocol'],
  orchestration: ['core', 'store', 'llm', 'graph', 'engine', 'protocol'],
  worlds: ['core', 'coordination', 'store', 'llm', 'graph', 'engine', 'agent', 'bots', 'memory', 'orchestration', 'protocol'],
  app: ['core', 'coordination', 'store', 'llm', 'graph', 'engine', 'agent', 'bots', 'runtimes', 'memory', 'orchestration', 'worlds', 'protocol'],
  server: ['core', 'coordination', 'llm', 'protocol'],
  cli: ['core', 'coordination', 'engine', 'app', 'server', 'mcp', 'protocol'],
  // The MCP face speaks only the protocol (it calls RPC methods), like the page.
  mcp: ['core', 'protocol'],
  // The package's faces: the typed client runs in a browser too; the engine entry re-exports.
  client: ['protocol'],
  sdk: ['core', 'store', 'llm', 'engine', 'agent', 'bots', 'runtimes', 'memory', 'orchestration', 'app', 'cli', 'protocol'],
};

function files(dir: string, ext = /\.tsx?$/): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p, ext) : ext.test(e.name) ? [p] : [];
  });
}

interface Import {
  file: string;
  spec: string;
  typeOnly: boolean;
}

function imports(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'";]*?from\s+'([^']+)'/gms)) out.push({ file, spec: m[3]!, typeOnly: !!m[2] });
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push({ file, spec: m[1]!, typeOnly: false });
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) out.push({ file, spec: m[1]!, typeOnly: false });
  return out;
}

/** Relative imports of a file, resolved to absolute paths. */
function targets(file: string): Array<Import & { target: string }> {
  return imports(file)
    .filter((i) => i.spec.startsWith('.'))
    .map((i) => ({ ...i, target: path.resolve(path.dirname(file), i.spec) }));
}

const srcFiles = files(SRC);
const folderOf = (abs: string) => path.relative(SRC, abs).split(path.sep)[0]!;
const rel = (abs: string) => path.relative(ROOT, abs);

describe('architecture', () => {
  it('every src folder is a known layer', () => {
    expect(new Set(srcFiles.map(folderOf))).toEqual(new Set(Object.keys(ALLOWED)));
  });

  it('lower layers never import higher ones', () => {
    const violations: string[] = [];
    for (const file of srcFiles) {
      const from = folderOf(file);
      for (const imp of targets(file)) {
        if (!imp.target.startsWith(SRC + path.sep)) continue;
        const to = folderOf(imp.target);
        if (to !== from && !ALLOWED[from]!.includes(to)) violations.push(`${rel(file)} imports ${to}/ (${imp.spec})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('a world imports no other world, and neither the engine nor app/ (but its module list) names a world', () => {
    const violations: string[] = [];
    const worldsDir = path.join(SRC, 'worlds');
    for (const file of srcFiles.filter((f) => folderOf(f) === 'worlds')) {
      const world = path.relative(worldsDir, file).split(path.sep)[0];
      for (const imp of targets(file)) {
        const parts = path.relative(worldsDir, imp.target).split(path.sep);
        if (!parts[0]!.startsWith('..') && parts.length > 1 && parts[0] !== world) violations.push(`${rel(file)} imports world ${parts[0]}`);
      }
    }
    const kinds = productModules.map((m) => m.kind);
    // app/ builds everything from the module list: only that list (modules.ts) may name a world.
    const MODULE_LIST = path.join(SRC, 'app', 'modules.ts');
    const noWorlds = ['engine', 'coordination', 'store', 'llm', 'server', 'graph', 'core', 'protocol', 'app'];
    for (const file of srcFiles.filter((f) => noWorlds.includes(folderOf(f)) && f !== MODULE_LIST)) {
      const text = readFileSync(file, 'utf8');
      if (/\bworlds\//.test(text)) violations.push(`${rel(file)} names worlds/`);
      if (folderOf(file) !== 'protocol') {
        // A world's name as a string literal in a lower layer is per-world code (the engine used to name 'tasks').
        for (const kind of kinds) if (new RegExp(`['"\`]${kind}['"\`]`).test(text)) violations.push(`${rel(file)} names the world "${kind}"`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('the protocol imports nothing but zod and itself (the page can import it)', () => {
    const protocol = srcFiles.filter((f) => folderOf(f) === 'protocol');
    const outside = protocol.flatMap((f) =>
      imports(f)
        .filter((i) => (i.spec.startsWith('.') ? folderOf(path.resolve(path.dirname(f), i.spec)) !== 'protocol' : i.spec !== 'zod'))
        .map((i) => `${rel(f)}: ${i.spec}`),
    );
    expect(protocol.length).toBeGreaterThan(0);
    expect(outside).toEqual([]);
  });

  it('the client imports nothing but the protocol and no Node module (it runs in a browser)', () => {
    const client = srcFiles.filter((f) => folderOf(f) === 'client');
    const outside = client.flatMap((f) =>
      imports(f)
        .filter((i) => (i.spec.startsWith('.') ? !['client', 'protocol'].includes(folderOf(path.resolve(path.dirname(f), i.spec))) : true))
        .map((i) => `${rel(f)}: ${i.spec}`),
    );
    expect(client.length).toBeGreaterThan(0);
    expect(outside).toEqual([]);
  });

  it('the page imports nothing from src/ but the protocol', () => {
    const web = files(path.join(ROOT, 'web', 'src'));
    const violations = web.flatMap((f) =>
      targets(f)
        .filter((i) => i.target.startsWith(SRC + path.sep) && folderOf(i.target) !== 'protocol')
        .map((i) => `${rel(f)}: ${i.spec}`),
    );
    expect(web.length).toBeGreaterThan(0);
    expect(violations).toEqual([]);
  });

  it('the server reads no table, and neither the store nor app/ knows a module’s tables', () => {
    const violations: string[] = [];
    for (const file of srcFiles.filter((f) => folderOf(f) === 'server')) {
      if (/\b(selectFrom|insertInto|updateTable|deleteFrom)\s*\(|from 'kysely'/.test(readFileSync(file, 'utf8')))
        violations.push(`${rel(file)} queries the database`);
    }
    const moduleTables = productModules.flatMap((m) => m.tables?.names ?? []);
    expect(moduleTables.length).toBeGreaterThan(0);
    // Nor does app/: a module declares its tables (and the names it shipped before modules).
    for (const file of srcFiles.filter((f) => folderOf(f) === 'store' || folderOf(f) === 'app')) {
      const text = readFileSync(file, 'utf8');
      for (const table of moduleTables) if (text.includes(table)) violations.push(`${rel(file)} names the table ${table}`);
    }
    expect(violations).toEqual([]);
  });

  it('bench/ imports nothing from test/', () => {
    const bench = files(path.join(ROOT, 'bench'));
    const violations = bench.flatMap((f) =>
      targets(f)
        .filter((i) => i.target.startsWith(path.join(ROOT, 'test') + path.sep))
        .map((i) => `${rel(f)}: ${i.spec}`),
    );
    expect(bench.length).toBeGreaterThan(0);
    expect(violations).toEqual([]);
  });

  it('only llm/ reaches a model provider (every call goes through the ledger)', () => {
    const providers = srcFiles.flatMap((f) =>
      imports(f)
        .filter((i) => i.spec.startsWith('@ai-sdk/'))
        .map((i) => path.relative(SRC, i.file)),
    );
    expect(providers.length).toBeGreaterThan(0);
    expect(providers.filter((f) => !f.startsWith(`llm${path.sep}`))).toEqual([]);
    // The AI SDK's call functions are used only by the model layer and by the agent runner, which
    // receives its model from `llm.languageModel()` (metered).
    const callers = srcFiles
      .filter((f) => /\b(generateText|streamText|generateObject|streamObject)\s*\(/.test(readFileSync(f, 'utf8')))
      .map((f) => folderOf(f));
    expect(new Set(callers)).toEqual(new Set(['llm', 'agent']));
    const agentModels = files(path.join(SRC, 'agent')).filter((f) => /\b(streamText|generateText)\s*\(/.test(readFileSync(f, 'utf8')));
    for (const f of agentModels) expect(readFileSync(f, 'utf8')).toMatch(/languageModel\(/);
  });
});
