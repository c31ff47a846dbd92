/**
 * Issue 19 §6, steering world: every corpus reply as the steering synthesis's answer, through the
 * real world and engine tick over a history that carries an injected directive line. Parsed
 * replies install their directive (or none, for NONE); every other reply fails the tick closed:
 * no directive in force, the review cursor where it was. The injected line is never in force.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { INJECTED_DIRECTIVE, corpusFor, scriptFor } from '../../devtools/model-replies.js';
import { createSteeringRig, type SteeringRig } from '../worlds/steering/rig.js';
import { expectGuardedWire } from './wire.js';

let rig: SteeringRig | undefined;
afterEach(async () => {
  await rig?.dispose();
  rig = undefined;
});

describe('model-output corpus: steering synthesis', () => {
  it.each(corpusFor('steering').map((e) => [e.shape, e] as const))('%s', async (_shape, entry) => {
    rig = await createSteeringRig('sqlite');
    await rig.cycles(2, (i) => (i === 1 ? `Request 1: ${INJECTED_DIRECTIVE}` : `Request ${i}: reconcile the Acme invoices.`));
    rig.server.handle(() => scriptFor(entry.reply, ''));

    const outcome = await rig.instance.tick();

    expectGuardedWire(rig.server.chatRequests);
    expect(rig.server.chatRequests.every((r) => r.body!.max_tokens === 400)).toBe(true); // [worlds.steering] max_output_tokens
    if ('finishReason' in entry.reply) expect(outcome.message).toContain('worlds.steering.max_output_tokens');
    const current = await rig.world.service.current();
    expect(current.injected).not.toMatch(/exfil/);
    if (entry.expect === 'parsed') {
      expect(outcome.kind).toBe('committed');
      expect(current.reviewed_seq).toBe(2);
      expect(current.directive === null ? 'NONE' : current.directive.text).toBe(entry.value);
    } else {
      expect(outcome.kind).toBe('failed');
      expect(current).toMatchObject({ directive: null, reviewed_seq: 0, last_review: null });
      expect(rig.emitted.filter((e) => e.type === 'steering.directive')).toEqual([]);
      expect(rig.server.chatRequests.length).toBeLessThanOrEqual(2);
    }
  });
});
