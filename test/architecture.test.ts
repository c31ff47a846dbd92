/**
 * DESIGN.md's layers and invariant 7 as a test: lower layers never import higher ones, a world
 * knows no other world, the engine knows no world, and only `llm/` talks to a model provider
 * (so every model call lands in the ledger). The page imports daemon code only as types.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SRC = path.join(ROOT, 'src');

/** Which top-level folders of src/ each folder may import. */
const ALLOWED: Record<string, string[]> = {
  core: [],
  store: ['core'],
  llm: ['core', 'store'],
  graph: ['core', 'store'],
  engine: ['core', 'store', 'graph', 'llm'],
  agent: ['core', 'store', 'llm'],
  worlds: ['core', 'store', 'llm', 'engine', 'agent', 'worlds'],
  app: ['core', 'store', 'llm', 'graph', 'engine', 'agent', 'worlds'],
  server: ['core', 'store', 'llm', 'engine', 'app'],
  cli: ['core', 'store', 'llm', 'engine', 'agent', 'worlds', 'app', 'server'],
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
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) out.push({ file, spec: m[1]!, typeOnly: false });
  return out;
}

const srcFiles = files(SRC);
const folderOf = (abs: string) => path.relative(SRC, abs).split(path.sep)[0]!;

describe('architecture', () => {
  it('every src folder is a known layer', () => {
    expect(new Set(srcFiles.map(folderOf))).toEqual(new Set(Object.keys(ALLOWED)));
  });

  it('lower layers never import higher ones', () => {
    const violations: string[] = [];
    for (const file of srcFiles) {
      const from = folderOf(file);
      for (const imp of imports(file)) {
        if (!imp.spec.startsWith('.')) continue;
        const target = path.resolve(path.dirname(file), imp.spec);
        if (!target.startsWith(SRC + path.sep)) continue;
        const to = folderOf(target);
        if (to !== from && !ALLOWED[from]!.includes(to)) violations.push(`${path.relative(ROOT, file)} imports ${to}/ (${imp.spec})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('a world knows no other world, and the engine knows no world by name', () => {
    const violations: string[] = [];
    for (const file of srcFiles.filter((f) => folderOf(f) === 'worlds')) {
      const world = path.relative(path.join(SRC, 'worlds'), file).split(path.sep)[0];
      for (const imp of imports(file)) {
        const target = path.resolve(path.dirname(file), imp.spec);
        const rel = path.relative(path.join(SRC, 'worlds'), target).split(path.sep);
        if (imp.spec.startsWith('.') && !rel[0]!.startsWith('..') && rel.length > 1 && rel[0] !== world)
          violations.push(`${path.relative(ROOT, file)} imports world ${rel[0]}`);
      }
    }
    for (const file of srcFiles.filter((f) => folderOf(f) === 'engine')) {
      if (/\b(tasks|heartbeat|conscious|steering)World\b|worlds\//.test(readFileSync(file, 'utf8')))
        violations.push(`${path.relative(ROOT, file)} names a world`);
    }
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

  it('the page imports daemon code only as types (erased at build)', () => {
    const web = files(path.join(ROOT, 'web', 'src'));
    const runtime = web.flatMap((f) =>
      imports(f)
        .filter((i) => i.spec.includes('/src/') && !i.typeOnly)
        .map((i) => `${path.relative(ROOT, f)}: ${i.spec}`),
    );
    expect(web.length).toBeGreaterThan(0);
    expect(runtime).toEqual([]);
  });
});
