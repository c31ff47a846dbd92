/**
 * The one parser of structured replies, tolerant but fail-closed. Small local models wrap their
 * JSON in prose, fences and `<think>` blocks; this takes ONE JSON value out of them:
 *
 * - `<think>…</think>` blocks are removed (an unclosed one is a cut reply: refused);
 * - the reply alone, the inside of a ```json (or bare ```) fence, or one object/array in prose;
 * - the only repair is the unambiguous one: a trailing comma before `}` or `]`;
 * - candidates that do not fit the schema are set aside; exactly one (after dropping exact
 *   repeats) must be left, since picking one of several different answers is a guess.
 *
 * Anything else throws ModelError `malformed` saying what was wrong, with the reply's tail.
 */
import { z, type ZodType } from 'zod';
import { ModelError } from './errors.js';

const RAW_TAIL_CHARS = 300;
/**
 * Longer than any structured answer here (1,000 task decisions are ~100 KB): a reply past it is a
 * model that looped, and scanning it for a value would only find a guess.
 */
export const MAX_STRUCTURED_REPLY_CHARS = 160_000;
const RULE = 'A reply must hold one JSON value matching the schema: alone, in one ```json fenced block, or as the one object in the text.';

export interface JsonReply {
  /** The JSON text taken (after the trailing-comma repair, if any). */
  json: string;
  value: unknown;
  /** A trailing comma was removed. */
  repaired: boolean;
}

/** Parse and validate `text` against `schema`; throws ModelError('malformed') on anything invalid. */
export function parseStructured<T>(text: string, schema: ZodType<T>): T {
  let issue: string | undefined;
  const reply = readJsonReply(text, (value) => {
    const result = schema.safeParse(value);
    if (!result.success) issue ??= describeIssues(result.error.issues);
    return result.success;
  });
  if (!reply) throw malformed(`The model's JSON does not match the expected shape — ${issue ?? 'no value fits'}.`, text);
  return schema.parse(reply.value);
}

/**
 * The JSON text of the one value in a reply (see the file's rules). `accept` narrows the
 * candidates (a schema check); throws ModelError('malformed') naming what else the reply holds.
 */
export function extractJson(text: string, accept?: (value: unknown) => boolean): string {
  const reply = readJsonReply(text, accept);
  if (!reply) throw malformed(`The model's JSON does not have the expected shape. ${RULE}`, text);
  return reply.json;
}

/** The instruction `object()` adds to the system prompt: the schema and the reply rules. */
export function schemaInstruction(schema: ZodType): string {
  return ['Reply with ONE JSON value that matches this JSON Schema, and nothing else: no markdown, no prose.', JSON.stringify(toJsonSchema(schema))].join('\n');
}

/** A zod schema as the JSON Schema sent in `response_format` and in the instruction. */
export function toJsonSchema(schema: ZodType): Record<string, unknown> {
  const jsonSchema = z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<string, unknown>;
  delete jsonSchema.$schema;
  return jsonSchema;
}

/**
 * OpenAI's strict mode takes a schema only when every object lists all its properties as
 * required and allows no others; a schema with an optional field is sent non-strict.
 */
export function strictCompatible(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(strictCompatible);
  if (!schema || typeof schema !== 'object') return true;
  const node = schema as Record<string, unknown>;
  if (node.type === 'object' || node.properties) {
    const props = Object.keys((node.properties as Record<string, unknown> | undefined) ?? {});
    const required = new Set((node.required as string[] | undefined) ?? []);
    if (node.additionalProperties !== false || props.some((p) => !required.has(p))) return false;
  }
  return Object.entries(node).every(([key, value]) => key === 'required' || key === 'enum' || key === 'const' || strictCompatible(value));
}

/**
 * The one JSON value of a reply, or undefined when candidates were found but none passed
 * `accept`. Throws ModelError('malformed') when the reply holds no value or several.
 */
export function readJsonReply(text: string, accept: (value: unknown) => boolean = () => true): JsonReply | undefined {
  if (text.length > MAX_STRUCTURED_REPLY_CHARS) {
    throw malformed(`The model wrote ${text.length.toLocaleString('en-US')} characters, more than any structured answer needs (a loop?).`, text);
  }
  const body = stripThinking(text).trim();
  if (body === '') throw malformed('The model returned an empty reply.', text);

  // The whole reply (a scalar is taken only so: in prose, `1` or `true` is just a word).
  const whole = parseRepaired(body) ?? parseRepaired(wholeFence(body) ?? '');
  if (whole) return accept(whole.value) ? whole : undefined;

  const { blocks, prose, unclosed } = splitFences(body, jsonSpans(body));
  const found: JsonReply[] = [];
  let broken: string | undefined;
  for (const block of blocks) {
    const parsed = parseRepaired(block.trim());
    if (parsed) found.push(parsed);
    // A block that is not one value may still hold one in prose-like text.
    else for (const segment of containers(block)) collect(segment);
  }
  for (const segment of containers(prose)) collect(segment);

  function collect(segment: string): void {
    const parsed = parseRepaired(segment);
    if (parsed) found.push(parsed);
    else broken ??= jsonError(segment);
  }

  const fitting = unique(found.filter((c) => accept(c.value)));
  if (fitting.length === 1) return fitting[0];
  if (fitting.length > 1) throw malformed(`The model returned more than one JSON value (${fitting.length} different ones); none is picked. ${RULE}`, text);
  if (found.length > 0) return undefined;
  if (broken) throw malformed(`The model returned invalid JSON (${broken}). ${RULE}`, text);
  if (unclosed || /[[{]/.test(prose) || blocks.some((b) => /[[{]/.test(b))) throw malformed(`The model's JSON is not complete (cut off?). ${RULE}`, text);
  throw malformed(`The model did not return a JSON value. ${RULE}`, text);
}

/** `<think>…</think>` blocks removed; an opening tag without its close means the reply was cut. */
function stripThinking(text: string): string {
  const body = text.replace(/<think>[\s\S]*?<\/think>/gi, '');
  if (/<think>/i.test(body)) throw malformed("The model's <think> block is not closed (the reply was cut off?).", text);
  return body;
}

/** The inside of a reply that is one fenced block and nothing else, or undefined. */
function wholeFence(body: string): string | undefined {
  const m = /^```([A-Za-z][\w+.-]*)?[ \t]*\n?([\s\S]*?)\n?[ \t]*```$/.exec(body);
  if (!m || (m[1] && m[1].toLowerCase() !== 'json')) return undefined;
  return m[2]!.trim();
}

/**
 * Fenced blocks (json or untagged) and the prose outside all fences. A ``` inside one of `json`'s
 * spans (the reply's own JSON values) is part of a string there, not a fence.
 */
function splitFences(body: string, json: Span[]): { blocks: string[]; prose: string; unclosed: boolean } {
  const blocks: string[] = [];
  const prose: string[] = [];
  const nextFence = (from: number): number => {
    let at = body.indexOf('```', from);
    while (at >= 0 && json.some(([start, end]) => at > start && at < end)) at = body.indexOf('```', at + 1);
    return at;
  };
  let pos = 0;
  for (let open = nextFence(0); open >= 0; open = nextFence(pos)) {
    prose.push(body.slice(pos, open));
    const marker = /^```([A-Za-z][\w+.-]*)?[ \t]*\n?/.exec(body.slice(open))!;
    const innerStart = open + marker[0].length;
    const close = nextFence(innerStart);
    const tag = marker[1]?.toLowerCase();
    // A block labelled as another language (```python) is code, not the answer.
    if (!tag || tag === 'json') blocks.push(body.slice(innerStart, close < 0 ? undefined : close));
    if (close < 0) return { blocks, prose: prose.join('\n'), unclosed: true };
    pos = close + 3;
  }
  prose.push(body.slice(pos));
  return { blocks, prose: prose.join('\n'), unclosed: false };
}

/** [start, end) of a part of a text. */
type Span = [number, number];

/** The spans of the text's top-level containers that are JSON as they stand. */
function jsonSpans(text: string): Span[] {
  return containerSpans(text).filter(([start, end]) => parseRepaired(text.slice(start, end)) !== undefined);
}

function containers(text: string): string[] {
  return containerSpans(text).map(([start, end]) => text.slice(start, end));
}

/**
 * Each balanced top-level `{…}` / `[…]` in prose, in one pass: quotes count only inside a
 * container (an apostrophe in prose is not a string), and a stray closer at the top is skipped.
 */
function containerSpans(text: string): Span[] {
  const out: Span[] = [];
  const stack: string[] = [];
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '{' || ch === '[') {
      if (stack.length === 0) start = i;
      stack.push(ch === '{' ? '}' : ']');
    } else if (stack.length > 0) {
      if (ch === '"') inString = true;
      else if (ch === '}' || ch === ']') {
        if (stack.pop() !== ch) {
          stack.length = 0; // mismatched: not JSON; look for the next opening
          continue;
        }
        if (stack.length === 0) out.push([start, i + 1]);
      }
    }
  }
  return out;
}

/** `text` parsed as JSON, allowing only the trailing-comma repair; undefined when it is not JSON. */
function parseRepaired(text: string): JsonReply | undefined {
  if (text === '') return undefined;
  try {
    return { json: text, value: JSON.parse(text) as unknown, repaired: false };
  } catch {
    const fixed = dropTrailingCommas(text);
    if (fixed === text) return undefined;
    try {
      return { json: fixed, value: JSON.parse(fixed) as unknown, repaired: true };
    } catch {
      return undefined;
    }
  }
}

/** Remove each `,` (outside strings) that only whitespace separates from a `}` or `]`. */
function dropTrailingCommas(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      out += ch;
      if (ch === '\\') out += text[++i] ?? '';
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    if (ch === ',' && /^\s*[}\]]/.test(text.slice(i + 1, i + 64))) continue;
    out += ch;
  }
  return out;
}

function jsonError(text: string): string {
  try {
    JSON.parse(text);
    return 'no error';
  } catch (err) {
    return (err as Error).message;
  }
}

function unique(candidates: JsonReply[]): JsonReply[] {
  const seen = new Map<string, JsonReply>();
  for (const c of candidates) {
    const key = JSON.stringify(c.value);
    if (!seen.has(key)) seen.set(key, c);
  }
  return [...seen.values()];
}

function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

function malformed(message: string, raw: string): ModelError {
  const tail = raw.length > RAW_TAIL_CHARS ? `…${raw.slice(-RAW_TAIL_CHARS)}` : raw;
  return new ModelError('malformed', `${message} Raw output: ${JSON.stringify(tail)}`, {
    hint: 'The model did not follow the output format; the call is not guessed at. Try again or pick a stronger model.',
  });
}
