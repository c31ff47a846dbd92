/** The fail-closed parser: fences and surrounding prose tolerated, anything invalid is `malformed`. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { extractJson, isModelError, parseStructured, schemaInstruction } from '../../src/llm/index.js';

const schema = z.object({ verdict: z.enum(['idle', 'resume']), taskId: z.string().nullable(), confidence: z.number().min(0).max(1) });
const good = { verdict: 'resume', taskId: 'task-1', confidence: 0.8 };

function malformed(text: string): string {
  try {
    parseStructured(text, schema);
  } catch (err) {
    expect(isModelError(err, 'malformed')).toBe(true);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('parseStructured', () => {
  it.each([
    ['plain JSON', JSON.stringify(good)],
    ['a ```json fence', '```json\n' + JSON.stringify(good, null, 2) + '\n```'],
    ['a bare ``` fence with prose around it', 'Here is my verdict:\n```\n' + JSON.stringify(good) + '\n```\nHope that helps!'],
    ['prose before and after', 'Verdict: ' + JSON.stringify(good) + ' (done)'],
    ['braces inside strings', JSON.stringify({ ...good, taskId: 'a}b{c"d' })],
  ])('accepts %s', (_name, text) => {
    const value = parseStructured(text, schema);
    expect(value.verdict).toBe('resume');
    expect(value.confidence).toBe(0.8);
  });

  it('rejects output without JSON, with the raw text in the message', () => {
    expect(malformed('I would resume task-1.')).toContain('did not return a JSON value');
    expect(malformed('I would resume task-1.')).toContain('I would resume task-1.');
  });

  it('rejects broken JSON instead of repairing it', () => {
    expect(malformed('{"verdict": "resume", "taskId": "task-1", "confidence": 0.8')).toContain('invalid JSON');
    expect(malformed("{'verdict': 'resume'}")).toContain('invalid JSON');
  });

  it('rejects JSON of the wrong shape and names the field', () => {
    expect(malformed(JSON.stringify({ ...good, verdict: 'maybe' }))).toContain('verdict');
    expect(malformed(JSON.stringify({ ...good, confidence: 3 }))).toContain('confidence');
    expect(malformed(JSON.stringify({ verdict: 'idle' }))).toContain('taskId');
  });

  it('keeps only a tail of a long raw output in the message', () => {
    const message = malformed('x'.repeat(10_000) + 'THE-END');
    expect(message.length).toBeLessThan(600);
    expect(message).toContain('THE-END');
  });

  it('extracts arrays too', () => {
    expect(extractJson('result: [1, [2, 3]] trailing')).toBe('[1, [2, 3]]');
    expect(parseStructured('```json\n[{"a":1}]\n```', z.array(z.object({ a: z.number() })))).toEqual([{ a: 1 }]);
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
