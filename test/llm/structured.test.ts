/**
 * The one parser, tolerant but fail-closed: one JSON value is taken out of fences, `<think>`
 * blocks and prose; only trailing commas are repaired; two different values, a cut reply, single
 * quotes or no value at all is `malformed`, never a guess.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { extractJson, isModelError, parseStructured, schemaInstruction } from '../../src/llm/index.js';

const schema = z.object({ verdict: z.enum(['idle', 'resume']), taskId: z.string().nullable(), confidence: z.number().min(0).max(1) });
const good = { verdict: 'resume', taskId: 'task-1', confidence: 0.8 };
const goodJson = JSON.stringify(good);
const otherJson = JSON.stringify({ ...good, verdict: 'idle' });

function malformed(text: string, against: z.ZodType = schema): string {
  try {
    parseStructured(text, against);
  } catch (err) {
    expect(isModelError(err, 'malformed')).toBe(true);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('parseStructured', () => {
  it.each([
    ['plain JSON', goodJson],
    ['plain JSON with whitespace around it', `\n\n  ${JSON.stringify(good, null, 2)}\n \t`],
    ['a ```json fence', '```json\n' + JSON.stringify(good, null, 2) + '\n```'],
    ['a ```JSON fence with whitespace around it', '\n```JSON\n' + goodJson + '\n```\n\n'],
    ['a bare ``` fence', '```\n' + goodJson + '\n```'],
    ['a one-line ``` fence', '```' + goodJson + '```'],
    ['braces inside strings', JSON.stringify({ ...good, taskId: 'a}b{c"d' })],
    ['backticks inside strings, in a fence', '```json\n' + JSON.stringify({ ...good, taskId: '```json x ```' }) + '\n```'],
    ["a reasoning model's leading <think> block", '<think>\nThe user wants a verdict; {"verdict":"wait"} would be wrong.\n</think>\n\n' + goodJson],
    ['a <think> block, then a fence', '<think>ok</think>```json\n' + goodJson + '\n```'],
    ['a <think> block that is not at the start', `Sure.<think>x</think>${goodJson}`],
    ['prose before the value', `Verdict: ${goodJson}`],
    ['prose around the value', `Verdict: ${goodJson} (done)`],
    ['trailing junk', `${goodJson} (done)`],
    ['prose before a fenced block', 'Here you go:\n```json\n' + goodJson + '\n```'],
    ['prose after a fenced block', '```json\n' + goodJson + '\n```\nHope that helps!'],
    ['prose inside the fence', '```json\nVerdict: ' + goodJson + '\n```'],
    ['a fence left open', '```json\n' + goodJson],
    ['the same value twice', `${goodJson}\n\nSo: ${goodJson}`],
    ['a trailing comma (the one repair)', '{"verdict": "resume", "taskId": "task-1", "confidence": 0.8,}'],
    ['trailing commas in prose and arrays', 'Answer: {"verdict": "resume", "taskId": "task-1", "confidence": 0.8, "x": [1, 2, ], }'],
    ['an example that does not fit the schema, then the answer', `Format: {"verdict": "idle|resume"}. Mine: ${goodJson}`],
  ])('accepts %s', (_name, text) => {
    const value = parseStructured(text, schema);
    expect(value.verdict).toBe('resume');
    expect(value.confidence).toBe(0.8);
  });

  it.each([
    ['a value, then a correction', `Sure! ${goodJson} — wait, no: ${otherJson}`, 'more than one JSON value'],
    ['two values', `${goodJson} ${otherJson}`, 'more than one JSON value'],
    ['two values on separate lines', `${goodJson}\n${otherJson}`, 'more than one JSON value'],
    ['two fenced blocks', '```json\n' + goodJson + '\n```\n```json\n' + otherJson + '\n```', 'more than one JSON value'],
    ['two fenced blocks with prose between', '```json\n' + goodJson + '\n```\nor\n```\n' + otherJson + '\n```', 'more than one JSON value'],
    ['a value, then a fenced block', goodJson + '\n```json\n' + otherJson + '\n```', 'more than one JSON value'],
    ['two values inside one fence', '```json\n' + goodJson + '\n' + otherJson + '\n```', 'more than one JSON value'],
    ['a block labelled as another language', '```python\n' + goodJson + '\n```', 'did not return a JSON value'],
    ['an empty reply', ' \n ', 'empty reply'],
    ['an empty fence', '```json\n```', 'did not return a JSON value'],
    ['only a <think> block', '<think>hmm</think>', 'empty reply'],
    ['a <think> block cut off', '<think>Let me consider ' + goodJson, '<think> block is not closed'],
    ['a cut-off object', '{"verdict": "resume", "taskId": "task-1", "confidence": 0.8', 'not complete'],
    ['a cut-off object in a fence', '```json\n{"verdict": "resume", "taskId": "task-1", "conf', 'not complete'],
    ['single quotes', "{'verdict': 'resume', 'taskId': 'task-1', 'confidence': 0.8}", 'invalid JSON'],
    ['single quotes in prose', "I think {'verdict': 'resume'} fits.", 'invalid JSON'],
    ['another language', 'Je pense qu’il faut reprendre la tâche task-1.', 'did not return a JSON value'],
    ['an error object carried in a 200', '{"error": {"message": "model overloaded"}}', 'expected shape'],
  ])('rejects %s, saying what was wrong', (_name, text, problem) => {
    const message = malformed(text);
    expect(message).toContain(problem);
    expect(message).toContain('Raw output:');
  });

  it('rejects output without JSON, with the raw text in the message', () => {
    expect(malformed('I would resume task-1.')).toContain('did not return a JSON value');
    expect(malformed('I would resume task-1.')).toContain('I would resume task-1.');
  });

  it('repairs only trailing commas: a missing comma or bracket stays broken', () => {
    expect(malformed('{"verdict": "resume" "taskId": "task-1", "confidence": 0.8}')).toContain('invalid JSON');
    expect(malformed('```json\n{"verdict": "resume",}\n```')).toContain('taskId');
    // A comma inside a string is text, not a trailing comma.
    expect(parseStructured('{"verdict": "resume", "taskId": "a,}", "confidence": 0.8}', schema).taskId).toBe('a,}');
  });

  it('rejects JSON of the wrong shape and names the field', () => {
    expect(malformed(JSON.stringify({ ...good, verdict: 'maybe' }))).toContain('verdict');
    expect(malformed(JSON.stringify({ ...good, confidence: 3 }))).toContain('confidence');
    expect(malformed(JSON.stringify({ verdict: 'idle' }))).toContain('taskId');
  });

  it('keeps only a tail of a long raw output in the message', () => {
    const message = malformed('x'.repeat(10_000) + 'THE-END');
    expect(message.length).toBeLessThan(700);
    expect(message).toContain('THE-END');
  });

  it('refuses a reply far longer than any structured answer (a looping model), whatever it holds', () => {
    const huge = `${goodJson}\n${'la '.repeat(70_000)}`;
    expect(huge.length).toBeGreaterThan(200_000);
    expect(malformed(huge)).toContain('more than any structured answer needs');
  });

  it('extracts arrays and scalars too', () => {
    expect(extractJson('  [1, [2, 3]]\n')).toBe('[1, [2, 3]]');
    expect(extractJson('```\n"just a string"\n```')).toBe('"just a string"');
    expect(parseStructured('```json\n[{"a":1}]\n```', z.array(z.object({ a: z.number() })))).toEqual([{ a: 1 }]);
    expect(extractJson('result: [1, [2, 3]] trailing')).toBe('[1, [2, 3]]');
    // A scalar is taken only as the whole reply: in prose, `3` is a word.
    expect(() => extractJson('I count 3 tasks.')).toThrow(/did not return a JSON value/);
  });
});

describe('parseStructured, for any JSON value', () => {
  const whitespace = fc.stringMatching(/^[ \t\r\n]{0,4}$/);
  /** Prose that cannot join a JSON value into a bigger one: no brackets, quotes, digits or signs. */
  const prose = fc.stringMatching(/^[A-Za-z][A-Za-z ,.!:?]{0,30}$/);
  const container = fc.jsonValue().filter((v) => typeof v === 'object' && v !== null);
  const render = fc.constantFrom<(json: string) => string>(
    (json) => json,
    (json) => '```json\n' + json + '\n```',
    (json) => '```\n' + json + '\n```',
  );
  const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

  it('accepts it alone or in one fence, pretty or compact, with whitespace around', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 2, '\t'), render, whitespace, whitespace, (value, indent, wrap, before, after) => {
        const text = before + wrap(JSON.stringify(value, null, indent)) + after;
        expect(parseStructured(text, z.unknown())).toEqual(roundTrip(value));
      }),
    );
  });

  it('takes an object or array out of prose before or after it, bare or in a fence', () => {
    fc.assert(
      fc.property(container, prose, fc.boolean(), render, (value, words, first, wrap) => {
        const json = JSON.stringify(value);
        expect(parseStructured(wrap(first ? `${words} ${json}` : `${json} ${words}`), z.unknown())).toEqual(roundTrip(value));
      }),
    );
  });

  it('a ``` inside a JSON string is not a fence (fast-check seed 318092233)', () => {
    expect(parseStructured('{"":{"```":""}} A', z.unknown())).toEqual({ '': { '```': '' } });
    expect(parseStructured('A {"a":"```json"}', z.unknown())).toEqual({ a: '```json' });
    expect(parseStructured('{"a":"```","b":"```"} A', z.unknown())).toEqual({ a: '```', b: '```' });
  });

  it('fence markers inside JSON strings never split the value', () => {
    const marker = fc.constantFrom('```', '```json', '```json\n', 'x```', '', 'a b');
    const tricky = fc.dictionary(marker, fc.oneof(marker, fc.array(marker, { maxLength: 3 })), { minKeys: 1, maxKeys: 4 });
    fc.assert(
      fc.property(tricky, prose, fc.boolean(), (value, words, first) => {
        const json = JSON.stringify(value);
        expect(parseStructured(first ? `${words} ${json}` : `${json} ${words}`, z.unknown())).toEqual(roundTrip(value));
      }),
    );
  });

  it("a dict in another language's code block is never the answer", () => {
    malformed('Here is how:\n```python\n{"verdict": "resume"}\n```', z.unknown());
    malformed('```python\n{"verdict": "resume"}', z.unknown());
  });

  it('rejects two different objects or arrays, never picking one', () => {
    fc.assert(
      fc.property(container, container, fc.constantFrom(' ', '\n', '\n\n', ', '), render, (a, b, between, wrap) => {
        fc.pre(JSON.stringify(roundTrip(a)) !== JSON.stringify(roundTrip(b)));
        malformed(wrap(JSON.stringify(a) + between + JSON.stringify(b)), z.unknown());
      }),
    );
  });
});

describe('schemaInstruction', () => {
  it('embeds the JSON Schema and asks for one JSON value', () => {
    const text = schemaInstruction(schema);
    expect(text).toContain('ONE JSON value');
    const json = JSON.parse(text.split('\n')[1]!) as { properties: Record<string, { enum?: string[] }> };
    expect(json.properties.verdict!.enum).toEqual(['idle', 'resume']);
  });
});
