/**
 * Configuration: `<workspace>/subconscious.toml`, overridden by `SUBCONSCIOUS_*` environment
 * variables, validated once into a resolved object with defaults. The shared sections are here;
 * every module brings its own `[worlds.<kind>]` section (its schema, defaults written once), so
 * the schema is built from the module list. A bad value stops the start with the key and the reason.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TomlError, parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { mcpServersSchema } from '../agent/index.js';
import { SubconsciousError, configIssueReason, isTimeZone } from '../core/index.js';
import type { WorldModule } from '../engine/index.js';

export const CONFIG_FILE = 'subconscious.toml';
export const DEFAULT_PORT = 7777;
export const DEFAULT_HOST = '127.0.0.1';
export const OLLAMA_BASE_URL = 'http://127.0.0.1:11434/v1';

const modelSchema = (defaults: { model: string; timeout_seconds: number; max_tokens: number }) =>
  z
    .strictObject({
      base_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:11434/v1' }).default(OLLAMA_BASE_URL),
      model: z.string().min(1, 'must name a model').default(defaults.model),
      api_key: z.string().optional(),
      timeout_seconds: z.number().positive().max(3600).default(defaults.timeout_seconds),
      /** `max_tokens` of every call that sets none of its own (README "Model profiles"). */
      max_tokens: z.number().int().positive().max(1_000_000).default(defaults.max_tokens),
      /** How JSON schemas reach the server as `response_format` (README "Model profiles"). */
      structured_output: z.enum(['auto', 'json_schema', 'json_object', 'off']).default('auto'),
    })
    .prefault({});

/** The sections every daemon has, whatever its modules. */
export const baseConfigShape = {
  /** IANA zone for usage days and schedules when nothing more specific says (default: this machine's). */
  timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
  models: z
    .strictObject({
      local: modelSchema({ model: 'llama3.2', timeout_seconds: 120, max_tokens: 2048 }),
      agent: modelSchema({ model: 'qwen2.5:7b', timeout_seconds: 300, max_tokens: 4096 }),
    })
    .prefault({}),
  server: z
    .strictObject({
      host: z.string().min(1).default(DEFAULT_HOST),
      port: z.number().int().min(0).max(65535).default(DEFAULT_PORT),
      /** The MCP face (`/mcp`, `subconscious mcp`) may answer escalations and check-ins for the person. */
      mcp_allow_answers: z.boolean().default(false),
      /** false: `start` runs a worker with no HTTP face (as `start --worker`); Postgres only. */
      face: z.boolean().default(true),
    })
    .prefault({}),
  engine: z
    .strictObject({
      tick_timeout_minutes: z
        .number()
        .positive()
        .max(24 * 60)
        .default(30),
    })
    .prefault({}),
  agent: z
    .strictObject({
      run_cap_minutes: z
        .number()
        .positive()
        .max(24 * 60)
        .default(20),
      max_steps: z.number().int().min(1).max(200).default(25),
    })
    .prefault({}),
  mcp: z.strictObject({ servers: mcpServersSchema.default([]) }).prefault({}),
  database: z
    .strictObject({
      url: z.string().optional(),
      /** How long a worker holds a job without renewing it: a dead worker's work is taken over within two. */
      lease_seconds: z.number().min(1).max(3600).default(60),
      /** Finished jobs (completed, cancelled, failed, moved aside) are pruned after this many hours. */
      job_retention_hours: z
        .number()
        .positive()
        .max(24 * 365)
        .default(24),
    })
    .prefault({}),
};

type BaseConfig = z.output<z.ZodObject<typeof baseConfigShape>>;

/** One module's section as resolved: `enabled` (a hard off when false) beside the module's own keys. */
export interface WorldSection {
  enabled: boolean;
  /** The module's own keys, validated by its schema (the module parses them again, typed). */
  settings: Record<string, unknown>;
}

export type Config = BaseConfig & {
  worlds: Record<string, WorldSection>;
  /** Things a person should hear once at start (an old section name still read, …). */
  warnings: string[];
};

/** Where a key was set: the file, the environment or the command line (a key not listed is a default). */
export type ConfigOrigins = Readonly<Record<string, 'file' | 'environment' | 'command line'>>;
const ORIGINS = new WeakMap<Config, ConfigOrigins>();

/** The dotted keys `loadConfig` read from the file, the environment and the command line (empty for a config built otherwise). */
export function originsOf(config: Config): ConfigOrigins {
  return ORIGINS.get(config) ?? {};
}

/** Record that `key` now comes from `source` (a live change written to the file); null: it is a default again. */
export function setOrigin(config: Config, key: string, source: 'file' | 'environment' | 'command line' | null): void {
  const next: Record<string, 'file' | 'environment' | 'command line'> = { ...originsOf(config) };
  if (source === null) delete next[key];
  else next[key] = source;
  ORIGINS.set(config, next);
}

/** A TOML parse error in one line: where (line, column) and what, without smol-toml's code block. */
function tomlReason(err: unknown): string {
  if (!(err instanceof TomlError)) return (err as Error).message;
  const what = err.message.split('\n')[0]!.replace(/^Invalid TOML document:\s*/, '');
  return `line ${err.line}, column ${err.column}: ${what}`;
}

/** Environment variables that override the file: name → the dotted key(s) each one sets. */
export const ENV_OVERRIDES: Record<string, { keys: string[]; type: 'string' | 'port' }> = {
  SUBCONSCIOUS_LOCAL_BASE_URL: { keys: ['models.local.base_url'], type: 'string' },
  SUBCONSCIOUS_LOCAL_MODEL: { keys: ['models.local.model'], type: 'string' },
  SUBCONSCIOUS_AGENT_BASE_URL: { keys: ['models.agent.base_url'], type: 'string' },
  SUBCONSCIOUS_AGENT_MODEL: { keys: ['models.agent.model'], type: 'string' },
  SUBCONSCIOUS_DATABASE_URL: { keys: ['database.url'], type: 'string' },
  SUBCONSCIOUS_PORT: { keys: ['server.port'], type: 'port' },
};

export interface LoadConfigOptions {
  workspace: string;
  modules: readonly WorldModule[];
  env?: NodeJS.ProcessEnv;
  /** Command-line values win over both (e.g. `--port`). */
  overrides?: { port?: number; host?: string };
}

export function loadConfig(opts: LoadConfigOptions): Config {
  const env = opts.env ?? process.env;
  const file = path.join(opts.workspace, CONFIG_FILE);
  let raw: Record<string, unknown> = {};
  if (existsSync(file)) {
    try {
      raw = parseToml(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new SubconsciousError('config_invalid', `${file} is not valid TOML: ${tomlReason(err)}`, {
        hint: 'Fix the file (see README "Configuration"), or move it away to start with defaults.',
        ...(err instanceof TomlError ? { details: { line: err.line, column: err.column } } : {}),
      });
    }
  }
  const origins: Record<string, 'file' | 'environment' | 'command line'> = {};
  for (const key of leafKeys(raw)) origins[key] = 'file';
  for (const [name, { keys, type }] of Object.entries(ENV_OVERRIDES)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    const parsed = type === 'port' ? parsePort(name, value) : value;
    for (const key of keys) {
      setPath(raw, key, parsed);
      origins[key] = 'environment';
    }
  }
  const before =
    raw.models && isTable(raw.models) ? { local: keyOf(raw.models, 'local'), agent: keyOf(raw.models, 'agent') } : { local: undefined, agent: undefined };
  const keyWarnings = applyApiKeys(raw, env);
  for (const role of ['local', 'agent'] as const) {
    const models = isTable(raw.models) ? raw.models : {};
    if (keyOf(models, role) !== before[role]) origins[`models.${role}.api_key`] = 'environment';
  }
  if (opts.overrides?.port !== undefined) {
    setPath(raw, 'server.port', opts.overrides.port);
    origins['server.port'] = 'command line';
  }
  if (opts.overrides?.host !== undefined) {
    setPath(raw, 'server.host', opts.overrides.host);
    origins['server.host'] = 'command line';
  }
  const config = validateConfig(raw, opts.modules, existsSync(file) ? file : 'configuration');
  config.warnings.push(...keyWarnings);
  ORIGINS.set(config, origins);
  return config;
}

/** Each role's API key variable, and the file variant that names a file holding it. */
export const API_KEY_ENV = { local: 'SUBCONSCIOUS_LOCAL_API_KEY', agent: 'SUBCONSCIOUS_AGENT_API_KEY' } as const;
/** Deprecated: one key for both roles (sent a cloud key to a local server). */
export const SHARED_API_KEY_ENV = 'SUBCONSCIOUS_API_KEY';

/**
 * Per-role credentials: `SUBCONSCIOUS_<ROLE>_API_KEY`, else `SUBCONSCIOUS_<ROLE>_API_KEY_FILE`
 * (a file holding the key: a mounted secret), else the TOML's `api_key`; a role's key never goes
 * to the other role's endpoint. The old shared `SUBCONSCIOUS_API_KEY` still fills a role that has
 * none, with one deprecation line. Returns the warnings to log.
 */
function applyApiKeys(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): string[] {
  const warnings: string[] = [];
  const fallbackFor: string[] = [];
  for (const role of ['local', 'agent'] as const) {
    const name = API_KEY_ENV[role];
    const key = env[name] || readKeyFile(`${name}_FILE`, env[`${name}_FILE`]);
    if (key) {
      setPath(raw, `models.${role}.api_key`, key);
      continue;
    }
    const models = isTable(raw.models) ? raw.models : {};
    const section = isTable(models[role]) ? models[role] : {};
    if (env[SHARED_API_KEY_ENV] && typeof section.api_key !== 'string') {
      setPath(raw, `models.${role}.api_key`, env[SHARED_API_KEY_ENV]);
      fallbackFor.push(role);
    }
  }
  if (env[SHARED_API_KEY_ENV]) {
    warnings.push(
      `${SHARED_API_KEY_ENV} is deprecated${fallbackFor.length ? ` (used for the ${fallbackFor.join(' and ')} role${fallbackFor.length > 1 ? 's' : ''})` : ' and unused: each role has its own key'}: set ${API_KEY_ENV.local} and/or ${API_KEY_ENV.agent} (or their *_FILE variants), so one endpoint's key never reaches the other.`,
    );
  }
  return warnings;
}

function readKeyFile(name: string, file: string | undefined): string | undefined {
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SubconsciousError('config_invalid', `Invalid ${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`, {
      hint: `Point ${name} at a readable file that holds only the API key.`,
      details: { key: name },
    });
  }
  const key = text.trim();
  if (!key || /\s/.test(key)) {
    throw new SubconsciousError('config_invalid', `Invalid ${name}: ${file} must hold the API key alone (it is ${key ? 'more than one word' : 'empty'}).`, {
      details: { key: name },
    });
  }
  return key;
}

export function validateConfig(input: unknown, modules: readonly WorldModule[], source = 'configuration'): Config {
  const raw = isTable(input) ? { ...input } : input;
  const legacy = isTable(raw) ? readLegacySections(raw, modules) : { warnings: [], names: new Map<string, string>() };
  const warnings = legacy.warnings;
  const schema = configSchema(modules);
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = legacyKey(issue.path.map(String), legacy.names) ?? (issue.path.join('.') || '(root)');
    const reason = configIssueReason(issue);
    const fullKey = issue.code === 'unrecognized_keys' && issue.path.length === 0 ? (issue.keys[0] ?? key) : key;
    throw new SubconsciousError('config_invalid', `Invalid ${source}: ${fullKey}: ${reason}`, {
      hint: 'Fix that key in subconscious.toml or the matching SUBCONSCIOUS_* variable.',
      details: { key: fullKey, reason },
    });
  }
  const { worlds, ...base } = result.data;
  const sections: Record<string, WorldSection> = {};
  for (const [kind, section] of Object.entries(worlds)) {
    const { enabled, ...settings } = section;
    sections[kind] = { enabled: enabled !== false, settings };
  }
  return { ...base, worlds: sections, warnings };
}

/** The whole schema: the shared sections and `[worlds]` with one section per module. */
export function configSchema(modules: readonly WorldModule[]) {
  const worlds: Record<string, z.ZodType<Record<string, unknown>>> = {};
  // A world's section gets `enabled` (a hard off); a host has no tick to switch off.
  for (const m of modules) worlds[m.kind] = (m.host ? m.configSchema : m.configSchema.extend({ enabled: z.boolean().default(true) })).prefault({});
  return z.strictObject({ ...baseConfigShape, worlds: z.strictObject(worlds).prefault({}) });
}

/**
 * A module's legacy section (seed 1's `[heartbeat]` for the tasks world) is read as its
 * `[worlds.<kind>]` section, whose own keys win; one warning names the new key.
 */
function readLegacySections(raw: Record<string, unknown>, modules: readonly WorldModule[]): { warnings: string[]; names: Map<string, string> } {
  const warnings: string[] = [];
  /** kind → the legacy name its keys are reported under (only when the new section was absent). */
  const names = new Map<string, string>();
  for (const m of modules) {
    const legacy = m.legacySection;
    if (!legacy || !(legacy in raw)) continue;
    const old = raw[legacy];
    delete raw[legacy];
    const worlds = isTable(raw.worlds) ? { ...raw.worlds } : {};
    const current = worlds[m.kind];
    if (current === undefined) names.set(m.kind, legacy);
    worlds[m.kind] = isTable(old) ? { ...old, ...(isTable(current) ? current : {}) } : old;
    raw.worlds = worlds;
    warnings.push(`[${legacy}] in subconscious.toml is read as [worlds.${m.kind}]; rename the section (this name will stop working in a later release).`);
  }
  return { warnings, names };
}

/** An error in a section read from its legacy name is reported under the name the person wrote. */
function legacyKey(path: string[], names: Map<string, string>): string | undefined {
  if (path[0] !== 'worlds' || path[1] === undefined) return undefined;
  const legacy = names.get(path[1]);
  return legacy ? [legacy, ...path.slice(2)].join('.') : undefined;
}

/** The dotted keys of a parsed TOML table's values (an array is one value). */
function leafKeys(table: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(table).flatMap(([k, v]) => (isTable(v) ? leafKeys(v, `${prefix}${k}.`) : [`${prefix}${k}`]));
}

function keyOf(models: Record<string, unknown>, role: string): unknown {
  const section = models[role];
  return isTable(section) ? section.api_key : undefined;
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parsePort(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new SubconsciousError('config_invalid', `Invalid ${name}: server.port: must be a port number 0-65535 (got "${value}")`, {
      details: { key: 'server.port' },
    });
  }
  return n;
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}
