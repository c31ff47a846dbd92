/**
 * `subconscious.config` (issue 23 §8): the effective configuration with where each value came
 * from — its default, the file, the environment, the command line — and secrets never sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { effectiveConfig } from '../../src/app/config-effective.js';
import { productModules } from '../../src/app/modules.js';

let workspace: string;
beforeEach(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-config-effective-'));
});
afterEach(() => rmSync(workspace, { recursive: true, force: true }));

it('says for each value whether it is a default, from the file, the environment or the command line; secrets stay out', () => {
  const file = path.join(workspace, 'subconscious.toml');
  writeFileSync(
    file,
    [
      '# my settings',
      '[worlds.tasks]',
      'interval_minutes = 10 # every ten minutes',
      '',
      '[models.agent]',
      'api_key = "sk-from-the-file"',
      '',
      '[[mcp.servers]]',
      'name = "fs"',
      'command = "npx"',
      'env = { TOKEN = "hunter2" }',
      '',
    ].join('\n'),
  );
  const config = loadConfig({
    workspace,
    modules: productModules,
    env: { SUBCONSCIOUS_LOCAL_MODEL: 'llama3.1', SUBCONSCIOUS_LOCAL_API_KEY: 'sk-from-env', SUBCONSCIOUS_DATABASE_URL: 'postgres://u:secret@db/x' },
    overrides: { port: 9999 },
  });
  const { file: read, values } = effectiveConfig(config, file);
  expect(read).toBe(file);
  const at = (key: string) => values.find((v) => v.key === key);
  expect(at('worlds.tasks.interval_minutes')).toMatchObject({ value: 10, source: 'file', live: null });
  expect(at('worlds.tasks.log_retention_days')).toMatchObject({ value: 30, source: 'default' });
  expect(at('worlds.tasks.enabled')).toMatchObject({ value: true, source: 'default' });
  expect(at('worlds.tasks.enabled')!.live).toContain('switch');
  expect(at('worlds.heartbeat.mode')!.live).toContain('Heartbeat settings above, or on the Bots tab (kept in the database for the whole cluster');
  expect(at('models.local.model')).toMatchObject({ value: 'llama3.1', source: 'environment' });
  expect(at('models.agent.model')).toMatchObject({ value: 'qwen2.5:7b', source: 'default' });
  expect(at('models.local.base_url')).toMatchObject({ source: 'default', secret: false });
  expect(at('server.port')).toMatchObject({ value: 9999, source: 'command line' });
  expect(at('models.local.api_key')).toMatchObject({ value: '(set)', source: 'environment', secret: true });
  expect(at('models.agent.api_key')).toMatchObject({ value: '(set)', source: 'file', secret: true });
  expect(at('database.url')).toMatchObject({ value: '(set)', source: 'environment', secret: true });
  expect(at('mcp.servers')).toMatchObject({ source: 'file', value: [{ name: 'fs', command: 'npx', env: { TOKEN: '(set)' } }] });
  // Nothing secret is anywhere in what is sent.
  const sent = JSON.stringify(values);
  for (const secret of ['sk-from-the-file', 'sk-from-env', 'secret@db', 'hunter2']) expect(sent).not.toContain(secret);
  // Sorted by key, each key once.
  expect(values.map((v) => v.key)).toEqual([...new Set(values.map((v) => v.key))].sort((a, b) => a.localeCompare(b)));
});

it('without a file every value is a default or from the environment', () => {
  const { file, values } = effectiveConfig(loadConfig({ workspace, modules: productModules, env: {} }), null);
  expect(file).toBeNull();
  expect(new Set(values.map((v) => v.source))).toEqual(new Set(['default']));
});
