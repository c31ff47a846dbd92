import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ControlLineFilter, parseControlLines } from '../../src/agent/index.js';

describe('parseControlLines', () => {
  it('parses every control line into a typed value and strips it from the visible text', () => {
    const text = [
      'I checked the deploy; it is green.',
      '',
      'MEMORY: the user deploys on Fridays',
      'TEAM_MEMORY: staging is at 10.0.0.5',
      'HANDOFF: ops bot should rotate the key',
      'FOLLOWUP: 10m — verify the deploy landed and report back',
      'FOLLOWUP: 2h - look at the error rate',
      'FOLLOWUP: when user replies — continue after the answer',
      'BLOCKED: waiting for the API key',
      'RECOMMENDED ACTION: Forward 3 urgent emails to #team-alerts',
      '',
      'That is all.',
    ].join('\n');
    const { visible, controls } = parseControlLines(text);
    expect(visible).toBe('I checked the deploy; it is green.\n\nThat is all.');
    expect(controls).toEqual([
      { kind: 'memory', text: 'the user deploys on Fridays' },
      { kind: 'team_memory', text: 'staging is at 10.0.0.5' },
      { kind: 'handoff', text: 'ops bot should rotate the key' },
      { kind: 'followup', due: { kind: 'delay', dueInMs: 600_000 }, note: 'verify the deploy landed and report back' },
      { kind: 'followup', due: { kind: 'delay', dueInMs: 7_200_000 }, note: 'look at the error rate' },
      { kind: 'followup', due: { kind: 'user' }, note: 'continue after the answer' },
      { kind: 'blocked', text: 'waiting for the API key' },
      { kind: 'recommended_action', text: 'Forward 3 urgent emails to #team-alerts' },
    ]);
  });

  it('accepts bullets, bold and other follow-up spellings', () => {
    const { controls, visible } = parseControlLines(
      'ok\n- MEMORY: bullet\n**RECOMMENDED ACTION:** bold one\nFOLLOWUP: 30 minutes – en dash\nFOLLOWUP: 1d\nFOLLOWUP: when the user replies',
    );
    expect(visible).toBe('ok');
    expect(controls).toEqual([
      { kind: 'memory', text: 'bullet' },
      { kind: 'recommended_action', text: 'bold one' },
      { kind: 'followup', due: { kind: 'delay', dueInMs: 1_800_000 }, note: 'en dash' },
      { kind: 'followup', due: { kind: 'delay', dueInMs: 86_400_000 }, note: '' },
      { kind: 'followup', due: { kind: 'user' }, note: '' },
    ]);
  });

  it('strips a control line it cannot understand and returns it as invalid (nothing lost)', () => {
    const { visible, controls } = parseControlLines('hi\nFOLLOWUP: next tuesday — maybe\nFOLLOWUP: 90d — too far\nMEMORY:');
    expect(visible).toBe('hi');
    expect(controls.map((c) => c.kind)).toEqual(['invalid', 'invalid', 'invalid']);
    expect(controls[0]).toMatchObject({ keyword: 'FOLLOWUP', line: 'FOLLOWUP: next tuesday — maybe' });
    expect(controls[0]!.kind === 'invalid' && controls[0]!.reason).toMatch(/neither a delay/);
    expect(controls[1]!.kind === 'invalid' && controls[1]!.reason).toMatch(/30 days/);
  });

  it('leaves lines that only mention a keyword alone', () => {
    const text = 'MEMORY usage is at 80%.\nThe word FOLLOWUP: appears mid-line here.\nmemory: lower case is prose';
    expect(parseControlLines(text)).toEqual({ visible: text, controls: [] });
  });
});

describe('ControlLineFilter (live text)', () => {
  const run = (chunks: string[]) => {
    const f = new ControlLineFilter();
    return chunks.map((c) => f.push(c)).join('') + f.end();
  };

  it('hides control lines however the text is chunked, and lets other text through at once', () => {
    expect(run(['Hel', 'lo\nMEM', 'ORY: x\nBye'])).toBe('Hello\nBye');
    const f = new ControlLineFilter();
    expect(f.push('Hello wor')).toBe('Hello wor'); // not a possible control line: no waiting
    expect(f.push('ld\nFOLLO')).toBe('ld\n'); // held: could become FOLLOWUP:
    expect(f.push('W the leader')).toBe('FOLLOW the leader');
    expect(f.end()).toBe('');
  });

  it('never shows a control line and keeps every other line, for any chunking (property)', () => {
    const line = fc.oneof(
      fc.constantFrom('MEMORY: m', 'FOLLOWUP: 10m — x', 'BLOCKED: b', '**RECOMMENDED ACTION:** r', 'MEMORY usage', 'FOLLOW me', '', '- item', '**bold**'),
      fc.string({ maxLength: 12 }).filter((s) => !s.includes('\n') && !s.includes('\r')),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.array(fc.nat({ max: 20 }), { maxLength: 10 }), (lines, cuts) => {
        const text = lines.join('\n');
        const chunks: string[] = [];
        let rest = text;
        for (const cut of cuts) {
          chunks.push(rest.slice(0, cut));
          rest = rest.slice(cut);
        }
        chunks.push(rest);
        const shown = run(chunks);
        const expected = text.split('\n').filter((l) => parseControlLines(l).controls.length === 0);
        expect(shown.split('\n').filter((l) => l !== '')).toEqual(expected.filter((l) => l !== ''));
      }),
    );
  });
});
