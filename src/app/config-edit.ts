/**
 * A careful edit of one key in subconscious.toml (issue 23 §8): the line that sets it gets its
 * new value (a comment after it stays), or the key is added at the end of its table, or the table
 * is added at the end of the file. Every other line is left as it was. The result is parsed again
 * and must equal the old file with only that key changed; when it does not (the key is set in a
 * form this edit does not rewrite, e.g. an inline table or a dotted key elsewhere), nothing is
 * written and the error says to edit the file by hand.
 */
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { SubconsciousError } from '../core/index.js';

export type TomlScalar = number | boolean | string;

const BARE_KEY = /^[A-Za-z0-9_-]+$/;
const HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

/** A TOML literal for a scalar (smol-toml writes it, so strings are escaped as TOML wants). */
function literal(value: TomlScalar): string {
  const line = stringifyToml({ v: value }).trim();
  return line.slice(line.indexOf('=') + 1).trim();
}

/** The table a header line opens (`[worlds.tasks]` → "worlds.tasks"), with quoted parts unquoted. */
function headerName(line: string): string | null {
  const m = HEADER.exec(line);
  if (!m) return null;
  return m[1]!
    .split('.')
    .map((p) => p.trim().replace(/^"(.*)"$/, '$1'))
    .join('.');
}

/** Where a `key = value` line's value ends: before a comment that is outside a string. */
function valueEnd(text: string): number {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#') return i;
  }
  return text.length;
}

/** The file's text with `table.key` set to `value` (the text is not written). */
export function setTomlKey(text: string, table: string, key: string, value: TomlScalar): string {
  if (!BARE_KEY.test(key) || !table.split('.').every((p) => BARE_KEY.test(p))) {
    throw new SubconsciousError('invalid_params', `${table}.${key}: not a key this edit can write`);
  }
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.length ? text.split(/\r?\n/) : [];
  const keyLine = new RegExp(`^(\\s*${key}\\s*=\\s*)(.*)$`);
  let current: string | null = '';
  let start = -1;
  let lastValue = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const name = headerName(line);
    if (name !== null) {
      if (start >= 0) break;
      current = /^\s*\[\[/.test(line) ? null : name;
      if (current === table) start = lastValue = i;
      continue;
    }
    if (current !== table) continue;
    const m = keyLine.exec(line);
    if (m) {
      const rest = m[2]!;
      const end = valueEnd(rest);
      const comment = rest.slice(end).trimStart();
      lines[i] = `${m[1]}${literal(value)}${comment ? ` ${comment}` : ''}`;
      return checked(text, lines.join(eol), table, key, value);
    }
    if (line.trim() && !line.trimStart().startsWith('#')) lastValue = i;
  }
  if (start >= 0) {
    lines.splice(lastValue + 1, 0, `${key} = ${literal(value)}`);
  } else {
    while (lines.length && lines.at(-1)!.trim() === '') lines.pop();
    if (lines.length) lines.push('');
    lines.push(`[${table}]`, `${key} = ${literal(value)}`);
  }
  if (lines.at(-1) !== '') lines.push('');
  return checked(text, lines.join(eol), table, key, value);
}

/** The edit changed that key and nothing else, or it is refused. */
function checked(before: string, after: string, table: string, key: string, value: TomlScalar): string {
  const expected = parseToml(before) as Record<string, unknown>;
  let node = expected;
  for (const part of table.split('.')) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[key] = value;
  let got: unknown;
  try {
    got = parseToml(after);
  } catch {
    got = undefined;
  }
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(got ?? null)), JSON.parse(JSON.stringify(expected)))) {
    throw new SubconsciousError('conflict', `${table}.${key} is set in subconscious.toml in a form the page cannot rewrite safely: nothing was changed.`, {
      hint: `Edit ${key} under [${table}] in subconscious.toml by hand, then restart.`,
      details: { key: `${table}.${key}` },
    });
  }
  return after;
}

/**
 * Set `table.key` in the file (created when missing), written whole to a temporary file and moved
 * over the old one, so a crash leaves the old file or the new one, never half of one.
 */
export function writeTomlKey(file: string, table: string, key: string, value: TomlScalar): void {
  const before = existsSync(file) ? readFileSync(file, 'utf8') : '';
  let after: string;
  try {
    after = setTomlKey(before, table, key, value);
  } catch (err) {
    if (err instanceof SubconsciousError) throw err;
    throw new SubconsciousError('config_invalid', `${file} is not valid TOML any more (${(err as Error).message}): nothing was changed.`, {
      hint: 'Fix the file by hand, then try again.',
    });
  }
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, after, { mode: existsSync(file) ? statSync(file).mode & 0o777 : 0o644 });
  renameSync(tmp, file);
}

/** The value `table.key` has in the file now (undefined: the file or the key is missing). Throws on a file that is not TOML. */
export function readTomlKey(file: string, table: string, key: string): unknown {
  if (!existsSync(file)) return undefined;
  let node: unknown = parseToml(readFileSync(file, 'utf8'));
  for (const part of [...table.split('.'), key]) {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
