/**
 * Issue 19 §6, memory world: every corpus reply as the decision agent's answer over a real memory
 * diff, through the real world, agent runner and engine tick. A finished review ("Nothing to do."
 * or a tool call and a closing line) commits and moves the baseline; every other reply fails the
 * tick closed: nothing applied (no notification, to-do or goal), the baseline where it was.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { corpusFor, scriptFor } from '../../devtools/model-replies.js';
import type { RecordedRequest } from '../support/model-server.js';
import { createMemoryHarness, type MemoryHarness } from '../worlds/memory/harness.js';
import { expectGuardedWire } from './wire.js';

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const afterTool = (req: RecordedRequest) => (req.body?.messages ?? []).some((m) => m.role === 'tool');

describe('model-output corpus: memory decision agent', () => {
  it.each(corpusFor('memory').map((e) => [e.shape, e] as const))('%s', async (_shape, entry) => {
    h = await createMemoryHarness();
    const harness = h;
    const put = (id: string, title: string, body: string) =>
      harness.memory.storeDocument({ namespace: 'mail', external_id: id, title, body, source_kind: 'email' });
    await put('old', 'Old newsletter', 'nothing');
    expect((await h.instance.tick()).kind).toBe('quiet'); // the first baseline
    const before = (await h.world.service.baseline())!.id;
    await h.clock.advance(15 * 60_000);
    await put('bill', 'Electricity bill', 'Your electricity bill of 84 EUR is due Friday.');
    h.server.handle((req) => (afterTool(req) ? { text: 'Notified the user.' } : scriptFor(entry.reply, 'bill')));

    const outcome = await h.instance.tick();

    // The decision agent's replies are text and tool calls (their schemas travel as tools): no response_format, max_tokens on each.
    expectGuardedWire(h.server.chatRequests, () => false);
    const notifications = await h.world.service.notifications();
    const todos = await h.world.service.todos();
    const goals = await h.world.service.goals();
    const baseline = (await h.world.service.baseline())!.id;
    if (entry.expect === 'parsed') {
      expect(outcome.kind, outcome.message).toBe('committed');
      expect(baseline).not.toBe(before);
      expect(notifications.length ? 'notified' : 'nothing').toBe(entry.value);
    } else {
      expect(outcome.kind).toBe('failed');
      expect(baseline).toBe(before);
      expect([...notifications, ...todos, ...goals]).toEqual([]);
    }
  });
});
