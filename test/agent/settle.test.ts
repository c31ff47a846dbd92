import { describe, expect, it } from 'vitest';
import { buildCheckpoint, formatSteps, settleStatus, toolPolicy, type RecordedStep } from '../../src/agent/index.js';

const base = { userStopped: false, preempted: false, aborted: false };

describe('settle precedence (seed 2 §7.5)', () => {
  it('user stop wins over everything', () => {
    expect(settleStatus({ ...base, userStopped: true, preempted: true, aborted: true, failure: { kind: 'timeout', message: 't' } })).toMatchObject({
      status: 'cancelled',
      errorKind: 'cancelled',
    });
  });
  it('preemption comes before the recorded failure kinds', () => {
    expect(settleStatus({ ...base, preempted: true, aborted: true, failure: { kind: 'approval_expired', message: 'x' } })).toMatchObject({
      status: 'failed',
      errorKind: 'preempted',
    });
  });
  it.each(['approval_expired', 'timeout', 'provider', 'rate_limit', 'unknown'] as const)(
    '%s → failed with that kind, even though the run was aborted',
    (kind) => {
      expect(settleStatus({ ...base, aborted: true, failure: { kind, message: `m-${kind}` } })).toEqual({
        status: 'failed',
        errorKind: kind,
        error: `m-${kind}`,
      });
    },
  );
  it('a bare abort is cancelled; nothing at all is done', () => {
    expect(settleStatus({ ...base, aborted: true })).toMatchObject({ status: 'cancelled', errorKind: 'cancelled' });
    expect(settleStatus(base)).toEqual({ status: 'done' });
  });
});

describe('checkpoint (seed 2 §7.6)', () => {
  const step = (i: number): RecordedStep => ({
    toolCallId: `c${i}`,
    tool: 'fs__read_text_file',
    input: `{"i":${i}}`,
    outcome: 'ok',
    output: `out ${i}`,
    at: i,
  });

  it('keeps the tail of the final text (≤ 600 chars, newlines collapsed) and the last 10 tool steps', () => {
    const text = `${'a'.repeat(700)}\n\nfinal   words\nhere`;
    const cp = buildCheckpoint({ text, steps: Array.from({ length: 14 }, (_, i) => step(i)), at: 99 });
    expect(cp.summary.length).toBe(600);
    expect(cp.summary.endsWith('a final words here')).toBe(true);
    expect(cp.summary).not.toContain('\n');
    expect(cp.steps.map((s) => s.toolCallId)).toEqual(['c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'c10', 'c11', 'c12', 'c13']);
    expect(cp.at).toBe(99);
  });

  it('falls back to the title and the last error when there was no text', () => {
    expect(buildCheckpoint({ text: '  \n', steps: [], title: 'Send the\ndigest', error: 'The run hit its time cap', at: 1 }).summary).toBe(
      'Send the digest — last error: The run hit its time cap',
    );
    expect(buildCheckpoint({ text: '', steps: [], at: 1 }).summary).toBe('Run — no answer yet');
  });

  it('formats steps one per line for a resume preamble', () => {
    expect(formatSteps([step(1), { ...step(2), outcome: 'denied', output: '' }])).toBe(
      '1. fs__read_text_file({"i":1}) → ok: out 1\n2. fs__read_text_file({"i":2}) → denied',
    );
  });
});

describe('permission modes (seed 1)', () => {
  it('read tools always run; writing tools depend on the mode and the grant', () => {
    const read = { access: 'read' as const, allowAutomatically: false };
    const write = { access: 'write' as const, allowAutomatically: false };
    const granted = { access: 'write' as const, allowAutomatically: true };
    expect(['full', 'analysis', 'tainted'].map((m) => toolPolicy(m as 'full', read))).toEqual(['run', 'run', 'run']);
    expect(['full', 'analysis', 'tainted'].map((m) => toolPolicy(m as 'full', write))).toEqual(['run', 'hidden', 'needs_approval']);
    expect(['full', 'analysis', 'tainted'].map((m) => toolPolicy(m as 'full', granted))).toEqual(['run', 'hidden', 'run']);
  });
});
