/**
 * Structured output, fail-closed: a model's reply is accepted only when it is one JSON value
 * that passes the zod schema. Markdown fences and prose around the JSON are tolerated; a
 * repaired or guessed value never is — anything else throws ModelError `malformed`.
 */
import { z, type ZodType } from 'zod';
import { ModelError } from './errors.js';

const RAW_TAIL_CHARS = 300;

/** Parse and validate `text` against `schema`; throws ModelError('malformed') on anything invalid. */
export function parseStructured<T>(text: string, schema: ZodType<T>): T {
  const candidate = extractJson(text);
  if (candidate === undefined) {
    throw malformed('The model did not return a JSON value.', text);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(candidate);
  } catch (err) {
    throw malformed(`The model returned invalid JSON (${(err as Error).message}).`, text);
  }
  const result = schema.safeParse(parsed);
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
 * The JSON text inside a reply: the body of a ```json fence if there is one, else the span from
 * the first `{` (or `[`) to its matching close. Undefined when there is none.
 */
export function extractJson(text: string): string | undefined {
  const fenced = /```[a-zA-Z0-9_-]*[ \t]*\r?\n?([\s\S]*?)```/.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  const start = firstOpening(body);
  if (start < 0) return undefined;
  const end = matchingClose(body, start);
  // Unbalanced: hand the rest to JSON.parse so the error says what is wrong.
  return end < 0 ? body.slice(start) : body.slice(start, end + 1);
}

/** The instruction `object()` adds to the system prompt: the schema and the reply rules. */
export function schemaInstruction(schema: ZodType): string {
  const jsonSchema = z.toJSONSchema(schema, { unrepresentable: 'any' });
  delete (jsonSchema as { $schema?: unknown }).$schema;
  return [
    'Reply with ONE JSON value that matches this JSON Schema, and nothing else: no markdown, no prose.',
    JSON.stringify(jsonSchema),
  ].join('\n');
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
