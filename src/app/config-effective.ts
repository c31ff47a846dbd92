/**
 * The effective configuration for `subconscious.config` (issue 23 §8): every value the daemon
 * resolved at start, flattened to dotted keys, with where it came from (`loadConfig` records the
 * keys the file, the environment and the command line set: the rest are defaults) and, for the
 * values that can change without a restart, where (and which ones the page changes itself). Secrets
 * never leave: only whether one is set.
 */
import type { ConfigSource, ConfigValue, EffectiveConfig } from '../protocol/engine.js';
import { originsOf, type Config } from './config.js';

/** Keys whose values are secrets: an API key, a database URL (it may hold a password). */
const SECRET = /(^|\.)(api_key|url)$/;
const isSecret = (key: string) => SECRET.test(key) && !key.endsWith('base_url');

/** Values that change live, and where (the page's words). */
function liveAt(key: string): string | null {
  if (/^worlds\.[a-z_]+\.enabled$/.test(key)) return 'the world’s switch on the Subconscious tab (kept across restarts)';
  // The heartbeat settings RPC of the bots face takes every key of the section (kept in the database); a value set there wins over the file's.
  if (/^worlds\.heartbeat\.(?!enabled$)[a-z_]+/.test(key))
    return 'Heartbeat settings above, or on the Bots tab (kept in the database for the whole cluster; a value set there wins over this one)';
  return null;
}

function flatten(prefix: string, value: unknown, out: Array<[string, unknown]>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0 && prefix) out.push([prefix, {}]);
    for (const [k, v] of entries) flatten(prefix ? `${prefix}.${k}` : k, v, out);
    return;
  }
  out.push([prefix, value]);
}

/** The origin of `key`: the most specific recorded key that is it or one of its parents. */
function sourceOf(key: string, origins: ReadonlyMap<string, Exclude<ConfigSource, 'default'>>): ConfigSource {
  for (let k = key; k; k = k.includes('.') ? k.slice(0, k.lastIndexOf('.')) : '') {
    const o = origins.get(k);
    if (o) return o;
  }
  return 'default';
}

/**
 * `editable`: the keys `subconscious.config_set` takes now (the app's live settings; none when
 * omitted). Those are changed on the Settings section itself.
 */
export function effectiveConfig(config: Config, file: string | null, editable: (key: string) => boolean = () => false): EffectiveConfig {
  const { worlds, warnings: _warnings, ...base } = config;
  const flat: Array<[string, unknown]> = [];
  // An MCP server's environment may carry its credentials: only the names are sent.
  const servers = base.mcp.servers.map((srv) => {
    const env = (srv as { env?: Record<string, string> }).env;
    return env ? { ...srv, env: Object.fromEntries(Object.keys(env).map((k) => [k, '(set)'])) } : srv;
  });
  flatten('', { ...base, mcp: { ...base.mcp, servers } }, flat);
  for (const [kind, section] of Object.entries(worlds)) {
    flat.push([`worlds.${kind}.enabled`, section.enabled]);
    flatten(`worlds.${kind}`, section.settings, flat);
  }
  const known = new Map(Object.entries(originsOf(config)));
  const values: ConfigValue[] = flat
    .filter(([, v]) => v !== undefined)
    .map(([key, value]) => {
      const secret = isSecret(key);
      const canEdit = !secret && editable(key);
      return {
        key,
        value: secret ? '(set)' : value,
        source: sourceOf(key, known),
        secret,
        live: canEdit ? 'here: it is written to subconscious.toml and applies at once' : liveAt(key),
        editable: canEdit,
      };
    });
  return { file, values: values.sort((a, b) => a.key.localeCompare(b.key)), file_error: null, needs_restart: [] };
}
