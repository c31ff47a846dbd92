/**
 * The fail-closed parser: one JSON value, alone or as the whole of one fenced block, is accepted;
 * prose around it, a second value or a second block is `malformed`, never a guess.
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
  ])('accepts %s', (_name, text) => {
    const value = parseStructured(text, schema);
    expect(value.verdict).toBe('resume');
    expect(value.confidence).toBe(0.8);
  });

  it.each([
    ['prose before the value', `Verdict: ${goodJson}`, 'text before its JSON value'],
    ['prose around the value', `Verdict: ${goodJson} (done)`, 'text before its JSON value'],
    ['a value, then a correction', `Sure! ${goodJson} — wait, no: ${otherJson}`, 'text before its JSON value'],
    ['trailing junk', `${goodJson} (done)`, 'text after its JSON value'],
    ['two values', `${goodJson} ${otherJson}`, 'more than one JSON value'],
    ['two values on separate lines', `${goodJson}\n${otherJson}`, 'more than one JSON value'],
    ['a value, then an array', `${goodJson}\n[1]`, 'more than one JSON value'],
    ['two fenced blocks', '```json\n' + goodJson + '\n```\n```json\n' + otherJson + '\n```', 'more than one fenced block'],
    ['two fenced blocks with prose between', '```json\n' + goodJson + '\n```\nor\n```\n' + otherJson + '\n```', 'more than one fenced block'],
    ['prose before a fenced block', 'Here you go:\n```json\n' + goodJson + '\n```', 'text before its fenced block'],
    ['prose after a fenced block', '```json\n' + goodJson + '\n```\nHope that helps!', 'text after its fenced block'],
    ['a value, then a fenced block', goodJson + '\n```json\n' + otherJson + '\n```', 'text after its JSON value'],
    ['prose inside the fence', '```json\nVerdict: ' + goodJson + '\n```', 'text before its JSON value'],
    ['two values inside one fence', '```json\n' + goodJson + '\n' + otherJson + '\n```', 'more than one JSON value'],
    ['a block labelled as another language', '```python\n' + goodJson + '\n```', 'labelled "python"'],
    ['a fence that is not closed', '```json\n' + goodJson, 'not closed'],
    ['an empty reply', ' \n ', 'empty reply'],
    ['an empty fence', '```json\n```', 'did not return a JSON value'],
    ['a <think> block that is not at the start', `Sure.<think>x</think>${goodJson}`, 'text before its JSON value'],
    ['prose after a <think> block', `<think>x</think>Verdict: ${goodJson}`, 'text before its JSON value'],
    ['only a <think> block', '<think>hmm</think>', 'empty reply'],
  ])('rejects %s, saying what was wrong', (_name, text, problem) => {
    const message = malformed(text);
    expect(message).toContain(problem);
    expect(message).toContain('Raw output:');
  });

  it('rejects output without JSON, with the raw text in the message', () => {
    expect(malformed('I would resume task-1.')).toContain('did not return a JSON value');
    expect(malformed('I would resume task-1.')).toContain('I would resume task-1.');
  });

  it('rejects broken JSON instead of repairing it', () => {
    expect(malformed('{"verdict": "resume", "taskId": "task-1", "confidence": 0.8')).toContain('invalid JSON');
    expect(malformed("{'verdict': 'resume'}")).toContain('invalid JSON');
    expect(malformed("{'verdict': 'resume'} and more")).toContain('invalid JSON');
    expect(malformed('```json\n{"verdict": "resume",}\n```')).toContain('invalid JSON');
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

  it('extracts arrays and scalars too', () => {
    expect(extractJson('  [1, [2, 3]]\n')).toBe('[1, [2, 3]]');
    expect(extractJson('```\n"just a string"\n```')).toBe('"just a string"');
    expect(parseStructured('```json\n[{"a":1}]\n```', z.array(z.object({ a: z.number() })))).toEqual([{ a: 1 }]);
    expect(() => extractJson('result: [1, [2, 3]] trailing')).toThrow(/text before its JSON value/);
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

  it('rejects an object or array with prose before or after it, bare or in a fence', () => {
    fc.assert(
      fc.property(container, prose, fc.boolean(), render, (value, words, first, wrap) => {
        const json = JSON.stringify(value);
        const message = malformed(wrap(first ? `${words} ${json}` : `${json} ${words}`), z.unknown());
        expect(message).toContain(first ? 'text before its JSON value' : 'text after its JSON value');
      }),
    );
  });

  it('rejects any value with prose outside its fence', () => {
    fc.assert(
      fc.property(fc.jsonValue(), prose, fc.boolean(), (value, words, first) => {
        const fenced = '```json\n' + JSON.stringify(value) + '\n```';
        const message = malformed(first ? `${words}\n${fenced}` : `${fenced}\n${words}`, z.unknown());
        expect(message).toContain(first ? 'text before its fenced block' : 'text after its fenced block');
      }),
    );
  });

  it('rejects two values, never picking one', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.constantFrom(' ', '\n', '\n\n', ', '), render, (a, b, between, wrap) => {
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
