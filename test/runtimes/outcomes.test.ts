/**
 * An external runtime's run outcome reaches the heartbeat as a built-in bot's final answer does
 * (seed 2 §8, issue 18 §6), both dialects, over real HTTP: `FOLLOWUP: 10m — …` schedules a
 * follow-up (kept though the task is reported done in the same report), `BLOCKED: …` asks the
 * person (a pending check-in, and an `ask` dispatch to the runtime); a run reported again is not
 * read twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testDialects } from '../support/stores.js';
import { createRuntimeHarness, type RuntimeHarness } from './harness.js';

const RUNTIME = 'acme';
const BOT = 'ext:acme:writer';

async function register(h: RuntimeHarness): Promise<void> {
  await h.client.call('runtime.register', {
    runtime_id: RUNTIME,
    instance_id: 'p1',
    delivery: { kind: 'poll' },
    bots: [{ id: 'writer', name: 'writer', label: 'Writer' }],
  });
}

const snapshot = (h: RuntimeHarness) => h.client.call('bots.heartbeat_snapshot', { bot_ids: [BOT] });

describe('an external runtime’s run outcome and the heartbeat', async () => {
  const dialects = await testDialects();
  let h: RuntimeHarness | undefined;
  afterEach(async () => {
    await h?.dispose();
    h = undefined;
  });

  it.each(dialects)('on %s: FOLLOWUP: in a run’s outcome schedules a follow-up, once', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    await register(h);
    await h.client.call('runtime.report', {
      runtime_id: RUNTIME,
      tasks: [{ id: 'deploy-1', bot_id: 'writer', title: 'Ship the deploy', status: 'working' }],
      runs: [{ id: 'run-1', bot_id: 'writer', task_id: 'deploy-1', status: 'running' }],
    });
    const report = {
      runtime_id: RUNTIME,
      tasks: [{ id: 'deploy-1', bot_id: 'writer', status: 'done' as const }],
      runs: [
        {
          id: 'run-1',
          bot_id: 'writer',
          task_id: 'deploy-1',
          status: 'done' as const,
          outcome: 'The deploy is on its way.\nFOLLOWUP: 10m — verify the deploy landed and report back',
        },
      ],
    };
    const at = h.clock.now();
    await h.client.call('runtime.report', report);
    const { followups } = await snapshot(h);
    expect(followups).toEqual([
      expect.objectContaining({
        bot_id: BOT,
        task_id: 'ext:acme:deploy-1',
        kind: 'delay',
        origin: 'bot',
        note: 'verify the deploy landed and report back',
        due_at: at + 10 * 60_000,
        state: 'pending',
      }),
    ]);
    // The same report again (a retry): the outcome is not read a second time.
    await h.client.call('runtime.report', report);
    expect((await snapshot(h)).followups).toHaveLength(1);
  });

  it.each(dialects)('on %s: BLOCKED: in a run’s outcome asks the person (a check-in, and an ask to the runtime)', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    await register(h);
    await h.client.call('runtime.report', {
      runtime_id: RUNTIME,
      tasks: [{ id: 'key-1', bot_id: 'writer', title: 'Connect the billing API', status: 'failed', error_kind: 'unknown' }],
      runs: [
        { id: 'run-2', bot_id: 'writer', task_id: 'key-1', status: 'failed', outcome: 'BLOCKED: waiting for the API key; cannot proceed without the user' },
      ],
    });
    const { checkins } = await snapshot(h);
    expect(checkins).toEqual([
      expect.objectContaining({
        bot_id: BOT,
        task_id: 'ext:acme:key-1',
        source: 'blocked',
        state: 'pending',
        question: expect.stringContaining('waiting for the API key'),
      }),
    ]);
    const asks = (await h.dispatches(RUNTIME)).filter((d) => d.kind === 'ask');
    expect(asks).toEqual([expect.objectContaining({ bot_id: 'writer', task_id: 'key-1', text: expect.stringContaining('waiting for the API key') })]);
  });

  it.each(dialects)('on %s: an outcome without its task_id is refused', async (dialect) => {
    h = await createRuntimeHarness({ dialect });
    await register(h);
    await expect(
      h.client.call('runtime.report', { runtime_id: RUNTIME, runs: [{ id: 'run-3', bot_id: 'writer', status: 'done', outcome: 'BLOCKED: no key' }] }),
    ).rejects.toMatchObject({ code: 'invalid_params' });
  });
});
