/**
 * Issue 19 §6, heartbeat world: every corpus reply as the pulse's answer about an interrupted
 * task, through the real heartbeat world, bots host and engine tick. A parsed reply is the verdict
 * read (idle); every other reply fails closed: an invalid pulse is idle with the reason on record,
 * and nothing is dispatched — no resume run, no check-in, the task's attempts unchanged.
 */
import { describe, expect, it } from 'vitest';
import { corpusFor, scriptFor } from '../../devtools/model-replies.js';
import { createHeartbeatHarness, interruptedTask, sharedMcpForFile } from '../worlds/heartbeat/harness.js';
import { expectGuardedWire } from './wire.js';

const mcpHolder = sharedMcpForFile();

describe('model-output corpus: heartbeat pulse', () => {
  it.each(corpusFor('heartbeat').map((e) => [e.shape, e] as const))('%s', async (_shape, entry) => {
    const h = await createHeartbeatHarness({ mcp: mcpHolder.value! });
    try {
      const bot = await h.createBot('writer');
      const t = await interruptedTask(h, bot.id);
      await h.due(bot.id);
      h.pulse.handle(() => scriptFor(entry.reply, t.id));
      const agentCallsBefore = h.model.chatRequests.length;

      await h.tick();

      expect(h.pulse.chatRequests).toHaveLength(1); // the pulse is one attempt (no repair, no 429 retry)
      expectGuardedWire(h.pulse.chatRequests);
      expect(h.pulse.chatRequests[0]!.body!.max_tokens).toBe(180); // [worlds.heartbeat] pulse_max_output_tokens
      if ('finishReason' in entry.reply) expect(JSON.stringify(await h.logOf(bot.id))).toContain('worlds.heartbeat.pulse_max_output_tokens');
      expect(h.model.chatRequests.length, 'no resume run').toBe(agentCallsBefore);
      expect(await h.hdb.selectFrom('heartbeat_checkins').selectAll().execute()).toEqual([]);
      expect((await h.task(t.id)).attempts).toBe(t.attempts);
      const pulses = (await h.logOf(bot.id)).filter((e) => e.tier === 1);
      expect(pulses).toHaveLength(1);
      expect(pulses[0]!.dispatched).toBeNull();
      if (entry.expect === 'parsed') {
        expect(pulses[0]).toMatchObject({ verdict: entry.value, error: null });
        expect(pulses[0]!.reason).not.toMatch(/invalid pulse reply/);
      } else {
        // Either the reply was read and refused (invalid pulse reply) or the call itself failed (error kept).
        const closed = /invalid pulse reply/.test(pulses[0]!.reason) || pulses[0]!.error !== null;
        expect(closed, JSON.stringify(pulses[0])).toBe(true);
        expect(pulses[0]!.verdict ?? 'idle').toBe('idle');
      }
    } finally {
      await h.dispose();
    }
  });
});
