/**
 * The page's `/events` messages are the protocol's typed events (checked by `tsc`, which covers
 * test/): a handler that tests `e.type` gets that event's payload, so a renamed field or event in
 * a contract breaks the page's build instead of its stream.
 */
import { expect, expectTypeOf, it } from 'vitest';
import type { ProductEvents } from '../../src/protocol/index.js';
import type { LiveEvent } from '../../web/src/api/types.js';

it('is one member per product event, its payload narrowed by its type', () => {
  expectTypeOf<LiveEvent['type']>().toEqualTypeOf<keyof ProductEvents & string>();
  expectTypeOf<Extract<LiveEvent, { type: 'bots.message_delta' }>['data']>().toEqualTypeOf<ProductEvents['bots.message_delta']>();
  expectTypeOf<Extract<LiveEvent, { type: 'tick.finished' }>['data']>().toEqualTypeOf<ProductEvents['tick.finished']>();
  const seen: string[] = [];
  const handle = (e: LiveEvent) => {
    if (e.type === 'bots.message_delta') seen.push(e.data.delta); // typed: no cast, no typeof check
  };
  handle({ type: 'bots.message_delta', at: 1, data: { message_id: 'm', thread_id: 't', bot_id: 'b', task_id: 'k', delta: 'Hel' } });
  handle({ type: 'status.changed', at: 2, data: { world: 'tasks' } });
  expect(seen).toEqual(['Hel']);
});
