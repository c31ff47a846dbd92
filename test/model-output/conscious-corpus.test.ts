/**
 * Issue 19 §6, conscious world: every corpus reply as the extraction's answer, through the real
 * world and engine tick. Parsed replies store the actionable; every other reply fails the tick
 * closed: nothing stored, the memory cursor not set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { corpusFor, scriptFor } from '../../devtools/model-replies.js';
import { CURSOR_KEY } from '../../src/worlds/conscious/world.js';
import { createConsciousHarness, type ConsciousHarness } from '../worlds/conscious/harness.js';
import { expectGuardedWire } from './wire.js';

let h: ConsciousHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('model-output corpus: conscious extraction', () => {
  it.each(corpusFor('conscious').map((e) => [e.shape, e] as const))('%s', async (_shape, entry) => {
    h = await createConsciousHarness();
    await h.memory.storeDocument({ namespace: 'gmail', external_id: 'm1', title: 'Electricity bill', body: 'Your bill is due Friday.', source_kind: 'email' });
    h.server.handle(() => scriptFor(entry.reply, 'm1'));

    const outcome = await h.instance.tick();

    expectGuardedWire(h.server.chatRequests);
    const stored = await h.world.service.list();
    if (entry.expect === 'parsed') {
      expect(outcome.kind).toBe('committed');
      expect(stored.map((a) => a.title).join(',')).toBe(entry.value);
      expect(await h.instance.keys()).toHaveProperty(CURSOR_KEY);
    } else {
      expect(outcome.kind).toBe('failed');
      expect(stored).toEqual([]);
      expect(await h.instance.keys()).not.toHaveProperty(CURSOR_KEY);
      expect(h.server.chatRequests.length).toBeLessThanOrEqual(2);
    }
  });
});
