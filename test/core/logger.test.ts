import { describe, expect, it } from 'vitest';
import { humanLogLine } from '../../src/core/index.js';

describe('human log lines', () => {
  it('shows time, level, message and the fields, without pino bookkeeping', () => {
    const at = new Date(2026, 10, 30, 9, 41, 7).getTime();
    const line = humanLogLine(
      JSON.stringify({ level: 40, time: at, pid: 1, hostname: 'h', name: 'subconscious', world: 'tasks', failures: 2, err: 'model down', msg: 'tick failed' }),
    );
    expect(line).toBe('09:41:07 WARN tick failed world=tasks failures=2 err="model down"');
  });

  it('passes through a line that is not JSON', () => {
    expect(humanLogLine('plain text\n')).toBe('plain text');
  });
});
