/**
 * Configuration: `<workspace>/subconscious.toml`, overridden by `SUBCONSCIOUS_*` environment
 * variables, validated once into a resolved object with defaults. A bad value stops the start
 * with the key and the reason.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { mcpServersSchema } from '../agent/index.js';
import { SubconsciousError, isTimeZone } from '../core/index.js';

export const CONFIG_FILE = 'subconscious.toml';
export const DEFAULT_PORT = 7777;
export const DEFAULT_HOST = '127.0.0.1';
export const OLLAMA_BASE_URL = 'http://127.0.0.1:11434/v1';

const modelSchema = (defaults: { model: string; timeout_seconds: number }) =>
  z
    .object({
      base_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:11434/v1' }).default(OLLAMA_BASE_URL),
      model: z.string().min(1, 'must name a model').default(defaults.model),
      api_key: z.string().optional(),
      timeout_seconds: z.number().positive().max(3600).default(defaults.timeout_seconds),
    })
    .strict()
    .default({ base_url: OLLAMA_BASE_URL, model: defaults.model, timeout_seconds: defaults.timeout_seconds });

export const configSchema = z
  .object({
    heartbeat: z
      .object({
        enabled: z.boolean().default(true),
        interval_minutes: z.number().int('must be a whole number of minutes').min(5, 'must be at least 5').max(1440).default(5),
        inference_enabled: z.boolean().default(true),
        context_budget_tokens: z.number().int().min(1000, 'must be at least 1000').max(1_000_000).default(40_000),
        /** IANA zone for `cron:` task schedules and for usage days when the page names none (default: this machine's zone). */
        timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
      })
      .strict()
      .default({ enabled: true, interval_minutes: 5, inference_enabled: true, context_budget_tokens: 40_000 }),
    models: z
      .object({
        local: modelSchema({ model: 'llama3.2', timeout_seconds: 120 }),
        agent: modelSchema({ model: 'qwen2.5:7b', timeout_seconds: 300 }),
      })
      .strict()
      .default({
        local: { base_url: OLLAMA_BASE_URL, model: 'llama3.2', timeout_seconds: 120 },
        agent: { base_url: OLLAMA_BASE_URL, model: 'qwen2.5:7b', timeout_seconds: 300 },
      }),
    server: z
      .object({
        host: z.string().min(1).default(DEFAULT_HOST),
        port: z.number().int().min(0).max(65535).default(DEFAULT_PORT),
      })
      .strict()
      .default({ host: DEFAULT_HOST, port: DEFAULT_PORT }),
    engine: z
      .object({
        tick_timeout_minutes: z
          .number()
          .positive()
          .max(24 * 60)
          .default(30),
      })
      .strict()
      .default({ tick_timeout_minutes: 30 }),
    agent: z
      .object({
        run_cap_minutes: z
          .number()
          .positive()
          .max(24 * 60)
          .default(20),
        max_steps: z.number().int().min(1).max(200).default(25),
      })
      .strict()
      .default({ run_cap_minutes: 20, max_steps: 25 }),
    mcp: z
      .object({
        servers: mcpServersSchema.default([]),
      })
      .strict()
      .default({ servers: [] }),
    database: z.object({ url: z.string().optional() }).strict().default({}),
  })
  .strict();

export type Config = z.output<typeof configSchema>;

/** Environment variables that override the file: name → the dotted key(s) each one sets. */
export const ENV_OVERRIDES: Record<string, { keys: string[]; type: 'string' | 'port' }> = {
  SUBCONSCIOUS_LOCAL_BASE_URL: { keys: ['models.local.base_url'], type: 'string' },
  SUBCONSCIOUS_LOCAL_MODEL: { keys: ['models.local.model'], type: 'string' },
  SUBCONSCIOUS_AGENT_BASE_URL: { keys: ['models.agent.base_url'], type: 'string' },
  SUBCONSCIOUS_AGENT_MODEL: { keys: ['models.agent.model'], type: 'string' },
  // One key for both roles, as most deployments point both at the same provider.
  SUBCONSCIOUS_API_KEY: { keys: ['models.local.api_key', 'models.agent.api_key'], type: 'string' },
  SUBCONSCIOUS_DATABASE_URL: { keys: ['database.url'], type: 'string' },
  SUBCONSCIOUS_PORT: { keys: ['server.port'], type: 'port' },
};

export interface LoadConfigOptions {
  workspace: string;
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
      throw new SubconsciousError('config_invalid', `${file} is not valid TOML: ${(err as Error).message}`, {
        hint: 'Fix the file (see README "Configuration"), or move it away to start with defaults.',
      });
    }
  }
  for (const [name, { keys, type }] of Object.entries(ENV_OVERRIDES)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    const parsed = type === 'port' ? parsePort(name, value) : value;
    for (const key of keys) setPath(raw, key, parsed);
  }
  if (opts.overrides?.port !== undefined) setPath(raw, 'server.port', opts.overrides.port);
  if (opts.overrides?.host !== undefined) setPath(raw, 'server.host', opts.overrides.host);
  return validateConfig(raw, existsSync(file) ? file : 'configuration');
}

export function validateConfig(raw: unknown, source = 'configuration'): Config {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const key = issue.path.join('.') || '(root)';
  const reason = issue.code === 'unrecognized_keys' ? `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue.message;
  const fullKey = issue.code === 'unrecognized_keys' && issue.path.length === 0 ? (issue.keys[0] ?? key) : key;
  throw new SubconsciousError('config_invalid', `Invalid ${source}: ${fullKey}: ${reason}`, {
    hint: 'Fix that key in subconscious.toml or the matching SUBCONSCIOUS_* variable.',
    details: { key: fullKey, reason },
  });
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
