import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Config, type LoadConfigOptions, loadConfig as loadWith, OLLAMA_BASE_URL } from '../../src/app/config.js';
import { productModules } from '../../src/app/modules.js';
import { isSubconsciousError } from '../../src/core/index.js';

let workspace: string;
beforeEach(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-config-'));
});
afterEach(() => rmSync(workspace, { recursive: true, force: true }));

const loadConfig = (opts: Omit<LoadConfigOptions, 'modules'>) => loadWith({ modules: productModules, ...opts });
const write = (toml: string) => writeFileSync(path.join(workspace, 'subconscious.toml'), toml);
const failure = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (isSubconsciousError(err, 'config_invalid')) return err;
    throw err;
  }
  throw new Error('expected a config_invalid error');
};

describe('config', () => {
  it('has sane defaults with no file and no environment (Ollama, port 7777, seed 1 task loop)', () => {
    const c = loadConfig({ workspace, env: {} });
    expect(c.worlds.tasks).toMatchObject({
      enabled: true,
      settings: { interval_minutes: 5, inference_enabled: true, context_budget_tokens: 40_000, log_retention_days: 30 },
    });
    expect(c.warnings).toEqual([]);
    expect(c.models.local.base_url).toBe(OLLAMA_BASE_URL);
    expect(c.server).toEqual({ host: '127.0.0.1', port: 7777, mcp_allow_answers: false, face: true });
    expect(c.database).toEqual({ lease_seconds: 60, job_retention_hours: 24 });
    expect(c.engine.tick_timeout_minutes).toBe(30);
    expect(c.mcp.servers).toEqual([]);
  });

  it('reads subconscious.toml and lets SUBCONSCIOUS_* variables and flags override it', () => {
    write(
      `[heartbeat]\ninterval_minutes = 15\n[models.local]\nmodel = "phi4"\n[server]\nport = 9000\n[[mcp.servers]]\nname = "fs"\ncommand = "mcp-server-filesystem"\nargs = ["/tmp"]\n`,
    );
    const c = loadConfig({
      workspace,
      env: { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://10.0.0.5:8000/v1', SUBCONSCIOUS_AGENT_MODEL: 'gpt-x', SUBCONSCIOUS_API_KEY: 'k', SUBCONSCIOUS_PORT: '9100' },
      overrides: { host: '0.0.0.0' },
    });
    expect(c.worlds.tasks!.settings.interval_minutes).toBe(15);
    expect(c.warnings).toEqual([
      '[heartbeat] in subconscious.toml is read as [worlds.tasks]; rename the section (this name will stop working in a later release).',
      expect.stringContaining('SUBCONSCIOUS_API_KEY is deprecated (used for the local and agent roles)'),
    ]);
    expect(c.models.local).toMatchObject({ base_url: 'http://10.0.0.5:8000/v1', model: 'phi4', api_key: 'k' });
    expect(c.models.agent).toMatchObject({ model: 'gpt-x', api_key: 'k' });
    expect(c.server).toEqual({ host: '0.0.0.0', port: 9100, mcp_allow_answers: false, face: true });
    expect(c.mcp.servers[0]).toMatchObject({ name: 'fs', command: 'mcp-server-filesystem', args: ['/tmp'] });
    expect(loadConfig({ workspace, env: {}, overrides: { port: 1234 } }).server.port).toBe(1234);
  });

  /** A file that sets every key an environment variable can override, so each override has something to beat. */
  const everyOverridableKey = [
    '[models.local]',
    'base_url = "http://file-local:8000/v1"',
    'model = "file-local-model"',
    'api_key = "file-local-key"',
    '[models.agent]',
    'base_url = "http://file-agent:8000/v1"',
    'model = "file-agent-model"',
    'api_key = "file-agent-key"',
    '[database]',
    'url = "postgres://file@127.0.0.1:5432/file"',
    '[server]',
    'port = 9000',
    '',
  ].join('\n');

  it.each<[string, string, (c: Config) => void]>([
    ['SUBCONSCIOUS_LOCAL_BASE_URL', 'http://env-local:9000/v1', (c) => void (c.models.local.base_url = 'http://env-local:9000/v1')],
    ['SUBCONSCIOUS_LOCAL_MODEL', 'env-local-model', (c) => void (c.models.local.model = 'env-local-model')],
    ['SUBCONSCIOUS_AGENT_BASE_URL', 'http://env-agent:9000/v1', (c) => void (c.models.agent.base_url = 'http://env-agent:9000/v1')],
    ['SUBCONSCIOUS_AGENT_MODEL', 'env-agent-model', (c) => void (c.models.agent.model = 'env-agent-model')],
    ['SUBCONSCIOUS_LOCAL_API_KEY', 'env-local-key', (c) => void (c.models.local.api_key = 'env-local-key')],
    ['SUBCONSCIOUS_AGENT_API_KEY', 'env-agent-key', (c) => void (c.models.agent.api_key = 'env-agent-key')],
    ['SUBCONSCIOUS_DATABASE_URL', 'postgres://env@127.0.0.1:5432/env', (c) => void (c.database.url = 'postgres://env@127.0.0.1:5432/env')],
    ['SUBCONSCIOUS_PORT', '9100', (c) => void (c.server.port = 9100)],
  ])('%s overrides the value set in subconscious.toml, and only that', (name, value, expectOverride) => {
    write(everyOverridableKey);
    const fromFile = loadConfig({ workspace, env: {} });
    expect(fromFile).toMatchObject({
      models: { local: { model: 'file-local-model', api_key: 'file-local-key' }, agent: { model: 'file-agent-model', api_key: 'file-agent-key' } },
      database: { url: 'postgres://file@127.0.0.1:5432/file' },
      server: { port: 9000 },
    });
    const expected = structuredClone(fromFile);
    expectOverride(expected);
    expect(expected).not.toEqual(fromFile);
    expect(loadConfig({ workspace, env: { [name]: value } })).toEqual(expected);
    // Set but empty is unset: the file's value stands.
    expect(loadConfig({ workspace, env: { [name]: '' } })).toEqual(fromFile);
  });

  describe('per-role API keys', () => {
    it('each role takes its own variable, or the file it names; the other role never gets it', () => {
      const keyFile = path.join(workspace, 'agent.key');
      writeFileSync(keyFile, 'sk-agent-from-file\n');
      const c = loadConfig({ workspace, env: { SUBCONSCIOUS_LOCAL_API_KEY: 'vllm-key', SUBCONSCIOUS_AGENT_API_KEY_FILE: keyFile } });
      expect(c.models.local.api_key).toBe('vllm-key');
      expect(c.models.agent.api_key).toBe('sk-agent-from-file');
      expect(c.warnings).toEqual([]);
      const onlyAgent = loadConfig({ workspace, env: { SUBCONSCIOUS_AGENT_API_KEY: 'sk-openai' } });
      expect(onlyAgent.models.local.api_key).toBeUndefined();
      expect(onlyAgent.models.agent.api_key).toBe('sk-openai');
    });

    it('the shared SUBCONSCIOUS_API_KEY fills only a role without a key of its own, with one deprecation line', () => {
      write('[models.local]\napi_key = "file-local-key"\n');
      const c = loadConfig({ workspace, env: { SUBCONSCIOUS_API_KEY: 'shared' } });
      expect(c.models.local.api_key).toBe('file-local-key');
      expect(c.models.agent.api_key).toBe('shared');
      expect(c.warnings.filter((w) => w.includes('SUBCONSCIOUS_API_KEY'))).toEqual([
        expect.stringContaining(
          'SUBCONSCIOUS_API_KEY is deprecated (used for the agent role): set SUBCONSCIOUS_LOCAL_API_KEY and/or SUBCONSCIOUS_AGENT_API_KEY',
        ),
      ]);
      const both = loadConfig({ workspace, env: { SUBCONSCIOUS_API_KEY: 'shared', SUBCONSCIOUS_AGENT_API_KEY: 'own' } });
      expect(both.models.agent.api_key).toBe('own');
      expect(both.warnings.join('\n')).toContain('unused');
    });

    it('a key file that is missing, empty or holds more than the key stops the start with the variable', () => {
      const empty = path.join(workspace, 'empty.key');
      writeFileSync(empty, '  \n');
      const two = path.join(workspace, 'two.key');
      writeFileSync(two, 'a b\n');
      for (const [file, reason] of [
        [path.join(workspace, 'missing.key'), /cannot read .*ENOENT/],
        [empty, /empty/],
        [two, /more than one word/],
      ] as const) {
        expect(() => loadConfig({ workspace, env: { SUBCONSCIOUS_LOCAL_API_KEY_FILE: file } })).toThrow(reason);
        try {
          loadConfig({ workspace, env: { SUBCONSCIOUS_LOCAL_API_KEY_FILE: file } });
        } catch (err) {
          expect(err).toMatchObject({ code: 'config_invalid', details: { key: 'SUBCONSCIOUS_LOCAL_API_KEY_FILE' } });
        }
      }
    });

    it('structured_output and max_tokens are per endpoint, validated', () => {
      write('[models.local]\nstructured_output = "json_object"\nmax_tokens = 512\n');
      const c = loadConfig({ workspace, env: {} });
      expect(c.models.local).toMatchObject({ structured_output: 'json_object', max_tokens: 512 });
      expect(c.models.agent).toMatchObject({ structured_output: 'auto', max_tokens: 4096 });
      write('[models.agent]\nstructured_output = "grammar"\n');
      expect(() => loadConfig({ workspace, env: {} })).toThrow(/models\.agent\.structured_output/);
    });
  });

  it.each([
    ['[heartbeat]\ninterval_minutes = 2\n', 'heartbeat.interval_minutes', /at least 5/],
    ['[heartbeat]\nenabled = "yes"\n', 'heartbeat.enabled', /boolean/],
    ['[models.local]\nbase_url = "ftp://x"\n', 'models.local.base_url', /http/],
    ['[heartbeat]\ninterval_minuts = 10\n', 'heartbeat', /interval_minuts/],
    ['[surprise]\nx = 1\n', 'surprise', /unknown key/],
    ['[[mcp.servers]]\ncommand = "x"\n', 'mcp.servers.0.name', /./],
    ['[heartbeat]\ntimezone = "Mars/Olympus"\n', 'heartbeat.timezone', /IANA/],
    ['[worlds.tasks]\ninterval_minutes = 1\n', 'worlds.tasks.interval_minutes', /at least 5/],
    ['[worlds.tasks]\nenabled = 1\n', 'worlds.tasks.enabled', /boolean/],
    ['[worlds.nope]\nx = 1\n', 'worlds', /unknown key.*"nope"/],
    ['timezone = "Nowhere/Else"\n', 'timezone', /IANA/],
    // A host (no tick) has nothing to switch off: `enabled` there is a mistake, said plainly.
    ['[worlds.bots]\nenabled = false\n', 'worlds.bots', /unknown key.*"enabled"/],
  ])('rejects %j naming the key and the reason', (toml, key, reason) => {
    write(toml);
    const err = failure(() => loadConfig({ workspace, env: {} }));
    expect(err.message).toContain(key);
    expect(err.message).toMatch(reason);
  });

  it('reads [worlds.tasks], whose keys win over the old [heartbeat] section key by key', () => {
    write('[heartbeat]\ninterval_minutes = 15\ncontext_budget_tokens = 8000\n[worlds.tasks]\ninterval_minutes = 10\nenabled = false\n');
    const c = loadConfig({ workspace, env: {} });
    expect(c.worlds.tasks).toMatchObject({
      enabled: false,
      settings: { interval_minutes: 10, inference_enabled: true, context_budget_tokens: 8000, log_retention_days: 30 },
    });
    expect(c.warnings).toHaveLength(1);
  });

  it('rejects invalid TOML and a bad SUBCONSCIOUS_PORT clearly', () => {
    write('[heartbeat\nenabled = true');
    expect(failure(() => loadConfig({ workspace, env: {} })).message).toMatch(/not valid TOML/);
    write('');
    expect(failure(() => loadConfig({ workspace, env: { SUBCONSCIOUS_PORT: 'eighty' } })).message).toMatch(/SUBCONSCIOUS_PORT.*server\.port/);
  });
});
