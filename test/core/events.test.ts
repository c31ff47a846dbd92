/** The typed event bus: payloads checked against the event map; tests wait on typed events. */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { EventBus } from '../../src/core/index.js';
import type { ProductEvents } from '../../src/protocol/index.js';

describe('EventBus', () => {
  it('next() resolves with the first matching event, typed by its name', async () => {
    const bus = new EventBus<ProductEvents>(() => 42);
    const finished = bus.next('tick.finished', (d) => d.world === 'tasks');
    bus.emit('tick.finished', { world: 'other', outcome: 'quiet', message: 'x', generation: 1, resumed: false, duration_ms: 0, counts_as_failure: false });
    bus.emit('tick.finished', { world: 'tasks', outcome: 'committed', message: 'y', generation: 2, resumed: false, duration_ms: 5, counts_as_failure: false });
    const e = await finished;
    expectTypeOf(e.data.outcome).toEqualTypeOf<'committed' | 'quiet' | 'skipped' | 'superseded' | 'failed'>();
    expect(e).toEqual({ type: 'tick.finished', at: 42, data: expect.objectContaining({ world: 'tasks', generation: 2 }) });
    expect(bus.size).toBe(0); // the waiter unsubscribed
    // @ts-expect-error: a payload that does not match its event is a type error
    bus.emit('status.changed', { nope: true });
  });

  it('next() rejects when its signal aborts, and a throwing listener never breaks the emitter', async () => {
    const bus = new EventBus<ProductEvents>();
    bus.subscribe(() => {
      throw new Error('broken subscriber');
    });
    const abort = new AbortController();
    const waiting = bus.next('status.changed', () => true, abort.signal);
    abort.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(() => bus.emit('status.changed', { world: 'tasks' })).not.toThrow();
  });
});
