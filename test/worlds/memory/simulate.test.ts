/**
 * `subconscious simulate` with a memory source (the product's modules, the dry-run model): a new
 * workspace reads its folder once, so the conscious loop extracts once (the dry-run answer `[]`
 * is well-formed: no failure) and the memory world makes its baseline; then everything is quiet.
 * From the person's database, only what the daemon has not synced yet costs anything: with the
 * folder unchanged, no model call at all — and the database and the folder are only read.
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createApp } from '../../../src/app/app.js';
import { printSimulation, simulate } from '../../../src/app/simulate.js';
import { silentLogger } from '../../../src/core/index.js';

const FIXTURES = fileURLToPath(new URL('../../memory/fixtures/inbox', import.meta.url));
/** Nothing answers here: a simulation that contacted the model would fail. */
const env = {
  SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1',
  SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1',
  SUBCONSCIOUS_LOCAL_MODEL: 'local-model',
  SUBCONSCIOUS_AGENT_MODEL: 'agent-model',
};

let workspace: string;
beforeEach(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-memory-sim-'));
  cpSync(FIXTURES, path.join(workspace, 'inbox'), { recursive: true });
  writeFileSync(
    path.join(workspace, 'subconscious.toml'),
    [
      '[worlds.tasks]',
      'inference_enabled = false', // the tasks world's cost is its own test's business
      '[[worlds.memory.sources]]',
      'kind = "folder"',
      'path = "inbox"',
      'namespace = "inbox"',
      'watch = false',
      '',
    ].join('\n'),
  );
});
afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

const purposes = (r: Awaited<ReturnType<typeof simulate>>) => r.by_purpose.map((p) => [p.world, p.purpose, p.calls]);

it('a new workspace: the folder is read once, one extraction, the baseline, then quiet; the dry-run answers are well-formed', async () => {
  const result = await simulate({ workspace, hours: 1, env });
  expect(result.failures).toEqual([]);
  expect(purposes(result)).toEqual([['conscious', 'conscious_extract', 1]]);
  const conscious = result.worlds.find((w) => w.world === 'conscious')!;
  const memory = result.worlds.find((w) => w.world === 'memory')!;
  // The first tick after seed 3's 60 s delay, then every 5 minutes: one run, the rest quiet.
  expect(conscious).toMatchObject({ interval_minutes: 5, ticks: 12, evaluated: 1, quiet: 11, failed: 0 });
  expect(memory).toMatchObject({ interval_minutes: 15, ticks: 4, evaluated: 0, quiet: 4, failed: 0 });
  expect(result.modules.conscious).toMatchObject({ runs: 1, extractions: 1, documents_read: 4, failed_runs: 0 });
  expect(result.modules.memory).toMatchObject({ sources: 1, namespaces: 1, documents_synced: 4, reviews: 0 });
  const lines: string[] = [];
  printSimulation(result, (l) => lines.push(l));
  expect(lines).toContainEqual(expect.stringMatching(/^ {2}conscious: 1 extraction call over 4 documents read, largest prompt [\d,]+ tokens$/));
  expect(lines).toContain('  memory: 1 folder source, 4 document changes synced; 0 memory reviews');
  expect(result.assumptions).toMatch(/Memory: your folders are read \(never written\)/);
  expect(result.assumptions).toMatch(/Conscious: the dry-run model extracts no actionables/);
});

it('from the person’s database: an unchanged folder costs nothing, and the database is not changed by a byte', async () => {
  // The person's daemon has synced the folder and digested it once.
  const app = await createApp({ workspace, env, log: silentLogger });
  try {
    await app.services.mcp.check();
    // The model is down for this one-shot tick: the sync and the baseline still happen.
    const outcomes = await app.registry.tickOnce('memory');
    expect(outcomes[0]).toMatchObject({ kind: 'quiet', message: 'baseline created' });
  } finally {
    await app.close();
  }
  const dir = path.join(workspace, '.subconscious');
  const db = path.join(dir, 'subconscious.db');
  const files = readdirSync(dir).sort();
  const digest = createHash('sha256').update(readFileSync(db)).digest('hex');

  const result = await simulate({ workspace, hours: 1, env });
  expect(result.failures).toEqual([]);
  expect(result.copied.rows).toContainEqual({ module: 'memory', what: 'memory source files', count: 4 });
  expect(purposes(result)).toEqual([]); // what was synced is not new: no extraction, no review
  expect(result.modules.memory).toMatchObject({ documents_synced: 0, reviews: 0 });
  expect(result.modules.conscious).toMatchObject({ extractions: 0 });
  expect(readdirSync(dir).sort()).toEqual(files);
  expect(createHash('sha256').update(readFileSync(db)).digest('hex')).toBe(digest);

  // A file the daemon has not seen yet: one extraction and one review in the simulation.
  writeFileSync(path.join(workspace, 'inbox', 'renewal.md'), '# Initech renewal\n\nThe contract renews on Monday unless cancelled by Friday.');
  const changed = await simulate({ workspace, hours: 1, env });
  expect(changed.failures).toEqual([]);
  expect(purposes(changed)).toEqual([
    ['conscious', 'conscious_extract', 1],
    ['memory', 'memory_reflect', 1],
  ]);
  expect(changed.modules.memory).toMatchObject({ documents_synced: 1, reviews: 1 });
  expect(changed.modules.conscious).toMatchObject({ extractions: 1, documents_read: 1 });
});
