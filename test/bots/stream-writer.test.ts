/** A streaming message's throttled writes (fake clock): coalesced, in order, never after close. */
import { describe, expect, it } from 'vitest';
import { StreamWriter } from '../../src/bots/stream-writer.js';
import { FakeClock, flush, silentLogger } from '../../src/core/index.js';

describe('StreamWriter', () => {
  it('writes at most every flushMs, the latest text, in order; close stops the timer and waits', async () => {
    const clock = new FakeClock();
    const writes: string[] = [];
    let slow: (() => void) | null = null;
    const w = new StreamWriter({
      clock,
      flushMs: 250,
      log: silentLogger,
      write: async (t) => {
        if (t === 'ab') await new Promise<void>((r) => (slow = r)); // a slow database write
        writes.push(t);
      },
    });
    w.push('a');
    w.push('b');
    expect(writes).toEqual([]);
    await clock.advance(249);
    expect(writes).toEqual([]);
    await clock.advance(1); // one write for both deltas (held by the slow database)
    w.push('c');
    await clock.advance(250); // the next flush waits behind the first
    expect(writes).toEqual([]);
    slow!();
    await flush();
    expect(writes).toEqual(['ab', 'abc']);
    w.push('d');
    await w.close();
    w.push('e');
    await clock.advance(1000);
    expect(writes).toEqual(['ab', 'abc']); // close writes nothing itself: settle writes the final text
    expect(w.text).toBe('abcd');
  });

  it('a failed write is logged and retried by the next flush', async () => {
    const clock = new FakeClock();
    const writes: string[] = [];
    let fail = true;
    const w = new StreamWriter({
      clock,
      flushMs: 100,
      log: silentLogger,
      write: async (t) => {
        if (fail) {
          fail = false;
          throw new Error('database busy');
        }
        writes.push(t);
      },
    });
    w.push('x');
    await clock.advance(100);
    expect(writes).toEqual([]);
    w.push('y');
    await clock.advance(100);
    expect(writes).toEqual(['xy']);
  });
});
