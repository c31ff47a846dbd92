/**
 * The agent runner's additions for the bots host (src/agent/runner.ts): `onApprovalRequested`
 * (a reason fails the run fast instead of waiting out the expiry; a hook that throws changes
 * nothing) and a per-run `approvalExpiryMs`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Approval } from '../../src/agent/index.js';
import { createHarness, nextEvent, type Harness } from '../agent/harness.js';

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.dispose();
});

describe('agent runner: onApprovalRequested and approvalExpiryMs', () => {
  it('a reason from the hook fails the run at once: approval expired, tool never ran, approval_expired with that reason', async () => {
    const target = path.join(h.dir, 'fast.txt');
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'x' } }] }, { text: 'never asked' });
    const seen: Approval[] = [];
    const run = h.runner.start({
      world: 'bots',
      purpose: 'bot_routine',
      prompt: 'p',
      mode: 'tainted',
      attended: false,
      onApprovalRequested: (a) => {
        seen.push(a);
        return 'Nobody can answer: no page or client is connected.';
      },
    });
    const outcome = await run.settled;
    expect(outcome).toMatchObject({ status: 'failed', errorKind: 'approval_expired', error: 'Nobody can answer: no page or client is connected.' });
    expect(outcome.toolSteps.map((s) => s.outcome)).toEqual(['expired']);
    expect(existsSync(target)).toBe(false);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.state).toBe('pending');
    expect((await h.approvals.get(seen[0]!.id))!.state).toBe('expired');
    expect(h.model.chatRequests).toHaveLength(1);
  });

  it('undefined from the hook waits as usual (here: approved), and a hook that throws is ignored', async () => {
    const target = path.join(h.dir, 'waits.txt');
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'ok' } }] }, { text: 'Written.' });
    const run = h.runner.start({
      world: 'bots',
      purpose: 'bot_turn',
      prompt: 'p',
      mode: 'tainted',
      attended: true,
      onApprovalRequested: () => {
        throw new Error('link table down');
      },
    });
    const requested = await nextEvent(run, 'approval-requested');
    await h.approvals.approve(requested.approval.id);
    expect((await run.settled).status).toBe('done');
    expect(readFileSync(target, 'utf8')).toBe('ok');
  });

  it('approvalExpiryMs sets this run’s unattended expiry', async () => {
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(h.dir, 'short.txt'), content: 'x' } }] }, { text: 'never asked' });
    const run = h.runner.start({ world: 'bots', purpose: 'bot_routine', prompt: 'p', mode: 'tainted', attended: false, approvalExpiryMs: 2 * 60_000 });
    const requested = await nextEvent(run, 'approval-requested');
    expect(requested.approval.expires_at).toBe(h.clock.now() + 2 * 60_000);
    await h.clock.advance(2 * 60_000);
    const outcome = await run.settled;
    expect(outcome).toMatchObject({ status: 'failed', errorKind: 'approval_expired' });
    expect(outcome.error).toContain('within 2 minutes');
  });

  it('rejects a hook that is not a function', () => {
    expect(() =>
      h.runner.start({ world: 'bots', purpose: 'p', prompt: 'p', mode: 'tainted', attended: false, onApprovalRequested: 'no' as unknown as () => undefined }),
    ).toThrow(/onApprovalRequested/);
  });
});
