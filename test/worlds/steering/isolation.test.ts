/**
 * Seed 4's isolation invariant for the steering world, on the import graph (not a grep of names):
 * the reflect file and everything it transitively imports — type-only imports included — reach no
 * agent, channel or tool module. A small parser reads the import/export-from statements of the
 * source files (comments stripped) and resolves them as Node's ESM resolution of our `.js`
 * specifiers does.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const SRC = path.join(ROOT, 'src');

interface Graph {
  files: Set<string>;
  packages: Set<string>;
  /** file → the files it imports (for a readable failure). */
  edges: Map<string, string[]>;
}

function stripComments(code: string): string {
  // Strings are kept (specifiers live in them); block and line comments go.
  return code.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

export function specifiers(code: string): string[] {
  const text = stripComments(code);
  const out: string[] = [];
  // import x from '…' · import type {…} from '…' · export {…} from '…' · export * from '…' (multi-line too)
  for (const m of text.matchAll(/\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*(['"])([^'"]+)\1/g)) out.push(m[2]!);
  for (const m of text.matchAll(/\bimport\s*(['"])([^'"]+)\1/g)) out.push(m[2]!); // side-effect import
  for (const m of text.matchAll(/\bimport\s*\(\s*(['"])([^'"]+)\1\s*\)/g)) out.push(m[2]!); // dynamic import
  return out;
}

function resolve(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const target = path.resolve(path.dirname(from), spec);
  const candidates = [target.replace(/\.js$/, '.ts'), target.replace(/\.js$/, '.tsx'), target, `${target}.ts`, path.join(target, 'index.ts')];
  for (const c of candidates) if (existsSync(c) && statSync(c).isFile()) return c;
  throw new Error(`${path.relative(ROOT, from)}: cannot resolve "${spec}"`);
}

function importGraph(entry: string): Graph {
  const graph: Graph = { files: new Set(), packages: new Set(), edges: new Map() };
  const queue = [entry];
  while (queue.length) {
    const file = queue.shift()!;
    if (graph.files.has(file)) continue;
    graph.files.add(file);
    const next: string[] = [];
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      const target = resolve(file, spec);
      if (target === null) graph.packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      else {
        next.push(target);
        queue.push(target);
      }
    }
    graph.edges.set(file, next);
  }
  return graph;
}

/** An agent, channel or tool module: anything under agent/, the harness (it drives channels and the agent runner), or so named. */
function forbidden(graph: Graph): string[] {
  const rel = [...graph.files].map((f) => path.relative(SRC, f));
  const modules = rel.filter(
    (f) => f.startsWith(`agent${path.sep}`) || f.startsWith(`orchestration${path.sep}`) || /(channel|tool|mcp|runner)/i.test(path.basename(f)),
  );
  const packages = [...graph.packages].filter((p) => p.startsWith('@modelcontextprotocol'));
  return [...modules, ...packages];
}

function chainTo(graph: Graph, entry: string, target: string): string[] {
  const prev = new Map<string, string>();
  const queue = [entry];
  const seen = new Set([entry]);
  while (queue.length) {
    const f = queue.shift()!;
    if (f === target) break;
    for (const n of graph.edges.get(f) ?? []) {
      if (!seen.has(n)) {
        seen.add(n);
        prev.set(n, f);
        queue.push(n);
      }
    }
  }
  const chain = [target];
  while (prev.has(chain[0]!)) chain.unshift(prev.get(chain[0]!)!);
  return chain.map((f) => path.relative(ROOT, f));
}

describe('steering reflect isolation (import graph)', () => {
  it('the parser reads every import form', () => {
    const code = [
      "import { a } from './a.js';",
      "import type {\n  B,\n  C,\n} from '../b.js';",
      "export * from './c.js';",
      "export { d, type E } from './d.js';",
      "import './side.js';",
      "const m = await import('./lazy.js');",
      "// import { commented } from './commented.js';",
      "/* export * from './blocked.js'; */",
      "const url = 'http://example.com/x'; import z from 'zod';",
    ].join('\n');
    expect(specifiers(code).sort()).toEqual(['../b.js', './a.js', './c.js', './d.js', './lazy.js', './side.js', 'zod'].sort());
  });

  it('the steering world’s reflect file reaches no agent, channel or tool module', () => {
    const entry = path.join(SRC, 'worlds', 'steering', 'reflect.ts');
    const graph = importGraph(entry);
    const rel = [...graph.files].map((f) => path.relative(SRC, f).split(path.sep).join('/'));
    // The walk is real: it reached the model layer's fence and the steering types through the protocol.
    expect(rel).toEqual(expect.arrayContaining(['worlds/steering/reflect.ts', 'llm/fence.ts', 'llm/types.ts', 'core/errors.ts', 'worlds/steering/types.ts']));
    expect(rel).toContain('protocol/orchestration.ts');
    const bad = forbidden(graph);
    expect(bad, bad.map((f) => chainTo(graph, entry, path.join(SRC, f)).join(' → ')).join('\n')).toEqual([]);
    expect([...graph.packages].sort()).toEqual(expect.arrayContaining(['zod']));
  });

  it('the check does catch a path into the agent layer (control)', () => {
    const graph = importGraph(path.join(SRC, 'agent', 'index.ts'));
    expect(forbidden(graph)).toEqual(expect.arrayContaining([path.join('agent', 'mcp.ts'), path.join('agent', 'runner.ts'), '@modelcontextprotocol/sdk']));
  });
});
