/**
 * Structured output, fail-closed: a model's reply is accepted only when it is exactly one JSON
 * value — alone, or as the whole of one ```json (or bare ```) fenced block — that passes the zod
 * schema. Whitespace around it is fine; prose, a second value or a second block is not, because
 * picking one of several candidates is a guess. Anything else throws ModelError `malformed`
 * saying what was wrong.
 */
import { z, type ZodType } from 'zod';
import { ModelError } from './errors.js';

const RAW_TAIL_CHARS = 300;
const FENCE = '```';
/** A line that opens or closes a fenced block. JSON text never has one: its strings cannot hold a newline. */
const FENCE_LINE = /^[ \t]*```/m;
/** The info string of an opening fence that names a language (```json, ```python). */
const LANGUAGE_TAG = /^[A-Za-z][\w+.-]*$/;
const RULE = 'A reply must be one JSON value, alone or in one ```json fenced block, with nothing else around it.';

/** Parse and validate `text` against `schema`; throws ModelError('malformed') on anything invalid. */
export function parseStructured<T>(text: string, schema: ZodType<T>): T {
  const result = schema.safeParse(readJson(text).value);
  if (!result.success) {
    const issues = result.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
      .join('; ');
    throw malformed(`The model's JSON does not match the expected shape — ${issues}.`, text);
  }
  return result.data;
}

/**
 * The JSON text of a reply that is exactly one JSON value, bare or as the whole of one fenced
 * block (trimmed), after a leading `<think>` block if there is one. Throws
 * ModelError('malformed') naming what else the reply holds.
 */
export function extractJson(text: string): string {
  return readJson(text).json;
}

/** The instruction `object()` adds to the system prompt: the schema and the reply rules. */
export function schemaInstruction(schema: ZodType): string {
  const jsonSchema = z.toJSONSchema(schema, { unrepresentable: 'any' });
  delete (jsonSchema as { $schema?: unknown }).$schema;
  return ['Reply with ONE JSON value that matches this JSON Schema, and nothing else: no markdown, no prose.', JSON.stringify(jsonSchema)].join('\n');
}

/**
 * A reasoning model's thinking, when it comes inside the content: one `<think>…</think>` block at
 * the very start. It is a known wrapper, like a fence, so it is removed; anything else is not.
 */
const LEADING_THINKING = /^\s*<think>[\s\S]*?<\/think>/;

function readJson(text: string): { json: string; value: unknown } {
  const body = text.replace(LEADING_THINKING, '').trim();
  if (body === '') throw malformed('The model returned an empty reply.', text);
  const json = body.startsWith(FENCE) ? unfence(body, text) : body;
  try {
    return { json, value: JSON.parse(json) as unknown };
  } catch (err) {
    const problem = shapeProblem(json);
    throw malformed(problem ? `${problem} ${RULE}` : `The model returned invalid JSON (${(err as Error).message}).`, text);
  }
}

/** The trimmed inside of a reply that starts with a fence; throws unless the fence is the whole reply. */
function unfence(body: string, raw: string): string {
  const lineEnd = body.indexOf('\n');
  const info = lineEnd < 0 ? '' : body.slice(FENCE.length, lineEnd).trim();
  // An info string that is not a language tag is already content (```{"a": 1}```).
  const tagged = LANGUAGE_TAG.test(info);
  if (tagged && info.toLowerCase() !== 'json') {
    throw malformed(`The model's fenced block is labelled "${info}", not json. ${RULE}`, raw);
  }
  const innerStart = tagged ? lineEnd + 1 : FENCE.length;
  if (body.length < innerStart + FENCE.length || !body.endsWith(FENCE)) {
    const rest = body.slice(innerStart);
    const problem = FENCE_LINE.test(rest) ? 'The model wrote text after its fenced block.' : "The model's fenced block is not closed.";
    throw malformed(`${problem} ${RULE}`, raw);
  }
  const inner = body.slice(innerStart, body.length - FENCE.length);
  if (FENCE_LINE.test(inner)) throw malformed(`The model returned more than one fenced block. ${RULE}`, raw);
  return inner.trim();
}

/**
 * Why `body`, which is not valid JSON, is not one JSON value, when the reason is its shape (text
 * around a value, a second value); undefined when it is simply broken JSON, which JSON.parse
 * describes better.
 */
function shapeProblem(body: string): string | undefined {
  const start = firstOpening(body);
  const fence = body.search(FENCE_LINE);
  if (fence >= 0 && (start < 0 || fence < start)) return 'The model wrote text before its fenced block.';
  if (start < 0) return 'The model did not return a JSON value.';
  if (start > 0) return 'The model wrote text before its JSON value.';
  const end = matchingClose(body, start);
  if (end < 0 || !isJson(body.slice(0, end + 1))) return undefined;
  const rest = body.slice(end + 1).trim();
  return /^[[{]/.test(rest) ? 'The model returned more than one JSON value.' : 'The model wrote text after its JSON value.';
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function firstOpening(text: string): number {
  const brace = text.indexOf('{');
  const bracket = text.indexOf('[');
  if (brace < 0) return bracket;
  if (bracket < 0) return brace;
  return Math.min(brace, bracket);
}

/** Index of the bracket closing the one at `start`, skipping strings; -1 when unbalanced. */
function matchingClose(text: string, start: number): number {
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') stack.push('}');
    else if (ch === '[') stack.push(']');
    else if (ch === '}' || ch === ']') {
      if (stack.pop() !== ch) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

function malformed(message: string, raw: string): ModelError {
  const tail = raw.length > RAW_TAIL_CHARS ? `…${raw.slice(-RAW_TAIL_CHARS)}` : raw;
  return new ModelError('malformed', `${message} Raw output: ${JSON.stringify(tail)}`, {
    hint: 'The model did not follow the output format; the call is not guessed at. Try again or pick a stronger model.',
  });
}
