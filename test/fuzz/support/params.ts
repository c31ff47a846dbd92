/**
 * fast-check arbitraries for RPC params, derived from each method's own zod schema (through its
 * JSON Schema), so a method added by a new module is fuzzed without a line here:
 *
 * - `validParams(schema, words)`: values shaped like the schema (strings drawn partly from
 *   `words`, real ids and titles read from the seeded database, so calls reach real rows);
 * - `mutate(valid)`: one change that usually makes them wrong — a key dropped, an unknown key
 *   (`__proto__` among them), a value of another type, a hostile string (empty, control
 *   characters only, 200 kB, SQL, a path, bidi overrides), a boundary number, deep nesting;
 * - `anyJson`: arbitrary JSON values as the whole params.
 */
import fc from 'fast-check';
import { z } from 'zod';

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
};

export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** Values of the schema's shape (not all valid: refinements are not in JSON Schema; callers filter with the zod schema). */
export function validParams(schema: JsonSchema, words: readonly string[]): fc.Arbitrary<unknown> {
  return arbitraryOf(schema, words, 0);
}

function arbitraryOf(s: JsonSchema, words: readonly string[], depth: number): fc.Arbitrary<unknown> {
  if (depth > 6) return fc.constant(null);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives?.length) return fc.oneof(...alternatives.map((a) => arbitraryOf(a, words, depth + 1)));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const props = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, arbitraryOf(v, words, depth + 1)]));
      return fc.record(props, { requiredKeys: (s.required ?? []).filter((k) => k in props) });
    }
    case 'string':
      return stringOf(s, words);
    case 'integer':
      return fc.integer({ min: Math.max(s.minimum ?? -1_000_000, -1_000_000_000), max: Math.min(s.maximum ?? 1_000_000, 1_000_000_000) });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e9, max: s.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(s.items ? arbitraryOf(s.items, words, depth + 1) : fc.jsonValue(), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 5, 5),
      });
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(s: JsonSchema, words: readonly string[]): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 60, 60);
  const fits = (w: string) => w.length >= min && w.length <= (s.maxLength ?? Infinity) && (!s.pattern || new RegExp(s.pattern).test(w));
  const known = words.filter(fits);
  const generated = s.pattern
    ? fc.stringMatching(new RegExp(s.pattern)).filter((w) => w.length <= (s.maxLength ?? 200))
    : fc.string({ minLength: min, maxLength: Math.max(min, max) });
  return known.length ? fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 2 }, { arbitrary: generated, weight: 1 }) : generated;
}

/** Strings a careless or hostile client sends. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\u0007\u0008\u001b[2J\u007f',
    '\r\n\r\n',
    '\u202eevil\u202c',
    '\ud800', // a lone surrogate
    "'; DROP TABLE subconscious_tasks; --",
    '" OR 1=1 --',
    '../../../../etc/passwd',
    '%s%n%x',
    '${process.exit()}',
    '<script>alert(1)</script>',
    'NaN',
    'null',
    '__proto__',
    'cron:',
    'cron:* * * * * * *',
    'cron:99 99 99 99 99',
    '😀'.repeat(300),
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer({ min: 1_000, max: 200_000 }).map((n) => 'x'.repeat(n)),
);

const boundaryNumber: fc.Arbitrary<number> = fc.constantFrom(-1, 0, -0, 0.5, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, -(2 ** 31), 2 ** 31, Number.MIN_VALUE);

/** Nested arrays `depth` deep (JSON parsers and serialisers that recurse are the target). */
const deep: fc.Arbitrary<unknown> = fc.integer({ min: 50, max: 3_000 }).map((depth) => JSON.parse('['.repeat(depth) + ']'.repeat(depth)) as unknown);

export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 4 }), weight: 6 },
  { arbitrary: fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 6 }), weight: 3 },
  { arbitrary: deep, weight: 1 },
);

const changeValue = fc.oneof(
  { arbitrary: hostileString as fc.Arbitrary<unknown>, weight: 4 },
  { arbitrary: boundaryNumber as fc.Arbitrary<unknown>, weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
  { arbitrary: deep, weight: 1 },
);

type Mutation = 'drop' | 'unknown_key' | 'replace' | 'append' | 'as_array' | 'values_only';
const MUTATIONS: readonly Mutation[] = ['drop', 'unknown_key', 'replace', 'append', 'as_array', 'values_only'];

/** One mutation of valid params. */
export function mutate(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc
    .tuple(valid, fc.constantFrom(...MUTATIONS), fc.nat(), changeValue, fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', 'id ', 'ID', ''))
    .map(([params, how, pick, value, newKey]) => applyMutation(params, how, pick, value, newKey));
}

function applyMutation(params: unknown, how: Mutation, pick: number, value: unknown, newKey: string): unknown {
  const obj = typeof params === 'object' && params !== null && !Array.isArray(params) ? { ...(params as Record<string, unknown>) } : {};
  const keys = Object.keys(obj);
  const key = keys.length ? keys[pick % keys.length]! : undefined;
  switch (how) {
    case 'drop':
      if (key) delete obj[key];
      return obj;
    case 'unknown_key':
      // Through JSON, so `__proto__` arrives as an own key, as it would over the wire.
      return JSON.parse(JSON.stringify({ ...obj, [newKey || 'x']: null }).replace(/null\}$/, () => `${JSON.stringify(value) ?? 'null'}}`)) as unknown;
    case 'replace':
      return key ? { ...obj, [key]: value } : { x: value };
    case 'append':
      return key && typeof obj[key] === 'string'
        ? { ...obj, [key]: `${obj[key] as string}${typeof value === 'string' ? value : JSON.stringify(value)}` }
        : { ...obj, x: value };
    case 'as_array':
      return [obj];
    case 'values_only':
      return Object.values(obj);
  }
}
