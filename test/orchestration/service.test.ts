/**
 * The harness as a persisted host service, on SQLite and Postgres: cycles queued and run one at a
 * time, every cycle's path, gate, world diff and compressed row stored; a failing cycle leaves the
 * state as it was; a cycle stopped mid-way resumes from its last finished node in a new process;
 * the RPC handlers through the dispatcher.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock, RpcDispatcher, isSubconsciousError, sequentialIds, silentLogger, type RpcResponse } from '../../src/core/index.js';
import { StoreCheckpointer } from '../../src/graph/index.js';
import { implement } from '../../src/protocol/contract.js';
import { orchestrationContract, type OrchestrationEvents } from '../../src/protocol/orchestration.js';
import { applyMigrations, tablesView } from '../../src/store/index.js';
import {
  GENESIS_SIGNATURE,
  createHarness,
  offlineRuntime,
  orchestrationConfigSchema,
  orchestrationMigrations,
  orchestrationRpcHandlers,
  verifyChain,
  type HarnessRuntime,
  type HarnessServiceDeps,
  type OrchestrationTables,
} from '../../src/orchestration/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const dialects = await testDialects();

type Emitted = { [K in keyof OrchestrationEvents]: { type: K; data: OrchestrationEvents[K] } }[keyof OrchestrationEvents];

describe.each(dialects)('harness service on %s', (dialect) => {
  let store: TestStore;
  let clock: FakeClock;
  let events: Emitted[];
  let closers: Array<() => Promise<void>>;

  beforeEach(async () => {
    store = await openTestStore(dialect);
    await applyMigrations(store.db, store.dialect, orchestrationMigrations);
    clock = new FakeClock();
    events = [];
    closers = [];
  });
  afterEach(async () => {
    for (const close of closers) await close();
    await store.dispose();
  });

  function harness(extra: Partial<HarnessServiceDeps> = {}) {
    const h = createHarness({
      db: tablesView<OrchestrationTables>(store.db),
      clock,
      ids: sequentialIds(extra.ownerTag ?? 'cycle'),
      log: silentLogger,
      emit: (type, data) => events.push({ type, data } as Emitted),
      settings: orchestrationConfigSchema.parse({}),
      ...extra,
    });
    closers.push(() => h.close());
    return h;
  }

  it('answers send at once, then runs and persists the cycle: path, gate, world diff, compressed row', async () => {
    const h = harness();
    const sent = await h.send('slack', 'Acme wants a refund for a duplicate invoice.');
    expect(sent).toEqual({ cycle_id: 'cycle-1', seq: 1, status: 'queued', cycle: null });
    expect(events[0]).toMatchObject({ type: 'orchestration.cycle', data: { cycle_id: 'cycle-1', status: 'queued', channel: 'slack' } });
    await h.settled(sent.cycle_id);

    const [c] = await h.cycles(5);
    expect(c).toMatchObject({
      id: 'cycle-1',
      seq: 1,
      status: 'done',
      mode: 'offline',
      channel: 'slack',
      path: ['channel_ingestion', 'frontend_agent', 'agent_execution', 'summarization_gate', 'frontend_agent', 'context_manager_hook'],
      gate: { forwarded: false, reasons: [], queued: 1, threshold: 3 },
      evictions: [],
      escalation: null,
      error: null,
    });
    expect(c!.response).toMatch(/^\[slack\] Handled acme/);
    expect(c!.world_diff).toHaveLength(1);
    expect(c!.world_diff[0]).toMatchObject({ cycle_id: 'cycle-1', seq: 1, index: 0, entity: 'acme', critical: false });
    expect(verifyChain(GENESIS_SIGNATURE, c!.world_diff)).toBe(true);
    expect(c!.compressed).toMatchObject({ cycle_id: 'cycle-1', seq: 1, forwarded: false, truncated: false, attempts: 1 });
    expect(c!.compressed!.summary_tokens).toBeLessThanOrEqual(c!.compressed!.budget_tokens);
    expect(c!.event_log.every((l) => l.startsWith('#1 '))).toBe(true);
    expect(events.map((e) => (e.type === 'orchestration.cycle' ? e.data.status : e.type))).toEqual(['queued', 'running', 'done']);

    const state = await h.state();
    expect(state).toMatchObject({ mode: 'offline', cycle: 1, running: null, queued: 0, eviction_threshold: 0.85, gate_threshold: 3 });
    expect(state.sequential_diffs).toHaveLength(1);
    expect(state.semantic_history).toHaveLength(1);
    expect(state.last_response).toBe(c!.response);
  });

  it('runs queued cycles in order, one at a time, and asks for a review when the gate forwards', async () => {
    const reviews: unknown[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const offline = offlineRuntime();
    const runtime: HarnessRuntime = {
      ...offline,
      execute: async (input, ctx) => {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        return offline.execute(input, ctx);
      },
    };
    const h = harness({ runtime, requestReview: (r) => void reviews.push(r) });
    const sent = [];
    for (const text of ['Order coffee beans.', 'Renew the domain.', 'Plan the quarterly review.']) sent.push(await h.send('slack', text));
    expect(sent.map((s) => s.seq)).toEqual([1, 2, 3]);
    await h.settled(sent[2]!.cycle_id);
    expect(maxInFlight).toBe(1);

    const cycles = await h.cycles(10);
    expect(cycles.map((c) => [c.seq, c.status, c.gate?.forwarded])).toEqual([
      [3, 'done', true],
      [2, 'done', false],
      [1, 'done', false],
    ]);
    expect(cycles[0]!.path.at(-1)).toBe('subconscious_eval');
    expect(cycles[0]!.steering).toMatch(/^Keep course: /);
    expect(reviews).toEqual([{ cycle_id: sent[2]!.cycle_id, seq: 3, reasons: ['threshold'] }]);
    expect(events.filter((e) => e.type === 'orchestration.review_requested').map((e) => e.data)).toEqual([
      { cycle_id: sent[2]!.cycle_id, seq: 3, reasons: ['threshold'] },
    ]);

    // What the steering world reads.
    const rows = await h.store.unreviewed(0, 20);
    expect(rows.map((r) => [r.seq, r.forwarded])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect((await h.store.unreviewed(2, 20)).map((r) => r.seq)).toEqual([3]);
    expect((await h.store.unreviewed(0, 2)).map((r) => r.seq)).toEqual([1, 2]);
    const mutations = await h.store.recentMutations(2);
    expect(mutations.map((m) => m.seq)).toEqual([2, 3]);
    expect(verifyChain(GENESIS_SIGNATURE, await h.store.recentMutations(20))).toBe(true);
    expect(await h.store.currentCycle()).toBe(3);
  });

  it('sets cron_due itself once consolidation_minutes passed since the last review (not only when a caller seeds it)', async () => {
    const reviews: unknown[] = [];
    const h = harness({ settings: orchestrationConfigSchema.parse({ consolidation_minutes: 60 }), requestReview: (r) => void reviews.push(r) });
    const first = await h.send('slack', 'Acme asks about invoice 1042.', { wait: true });
    expect(first.cycle!.gate).toMatchObject({ forwarded: false, reasons: [] });
    await clock.advance(59 * 60_000);
    expect((await h.send('slack', 'Still waiting on 1042.', { wait: true })).cycle!.gate).toMatchObject({ forwarded: false, reasons: [] });
    await clock.advance(60_000);
    // An hour after the first cycle: a scheduled review, whatever the diffs (two queued, below the threshold of 3).
    const due = await h.send('slack', 'Any news on 1042?', { wait: true });
    expect(due.cycle!.gate).toMatchObject({ forwarded: true, reasons: expect.arrayContaining(['cron']) });
    expect(due.cycle!.path.at(-1)).toBe('subconscious_eval');
    expect(reviews).toHaveLength(1);
    // The review cleared it and restarted the interval: the next cycle is not due again.
    await clock.advance(30 * 60_000);
    expect((await h.send('slack', 'Thanks.', { wait: true })).cycle!.gate).toMatchObject({ forwarded: false, reasons: [] });
    expect((await h.state()).cron_due).toBe(false);
  });

  it('numbers concurrent sends uniquely and runs them in the order of their numbers', async () => {
    const order: string[] = [];
    const offline = offlineRuntime();
    const h = harness({
      runtime: {
        ...offline,
        instruct: async (i, c) => {
          order.push(i.text);
          return offline.instruct(i, c);
        },
      },
    });
    const sent = await Promise.all(Array.from({ length: 5 }, (_, i) => h.send('slack', `message ${i}`)));
    expect(new Set(sent.map((s) => s.seq)).size).toBe(5);
    await Promise.all(sent.map((s) => h.settled(s.cycle_id)));
    const cycles = (await h.cycles(10)).reverse();
    expect(cycles.map((c) => c.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(order).toEqual(cycles.map((c) => c.text));
    expect(cycles.every((c) => c.status === 'done')).toBe(true);
  });

  it('a failing cycle is marked failed and leaves the harness state as it was', async () => {
    const offline = offlineRuntime();
    const runtime: HarnessRuntime = {
      ...offline,
      execute: async (input, ctx) => {
        if (input.text.includes('boom')) throw new Error('the reasoning tier is down');
        return offline.execute(input, ctx);
      },
    };
    const h = harness({ runtime });
    await h.send('slack', 'First request about invoices.', { wait: true });
    const before = await h.state();
    const failed = await h.send('slack', 'boom goes the reasoning tier', { wait: true });
    expect(failed.status).toBe('failed');
    expect(failed.cycle).toMatchObject({ seq: 2, status: 'failed', error: 'the reasoning tier is down', world_diff: [], compressed: null });
    expect(events.at(-1)).toMatchObject({ type: 'orchestration.cycle', data: { status: 'failed', error: 'the reasoning tier is down' } });
    const after = await h.state();
    expect(after).toEqual({ ...before, updated_at: before.updated_at });
    expect(await h.store.unreviewed(0, 20)).toHaveLength(1);

    const next = await h.send('slack', 'Second request about invoices.', { wait: true });
    expect(next.cycle).toMatchObject({ seq: 3, status: 'done' });
    expect((await h.state()).sequential_diffs).toHaveLength(2);
  });

  it('a cycle stopped mid-way resumes from its last finished node in the next process', async () => {
    const checkpointer = new StoreCheckpointer(store.db, clock);
    const calls = { instruct: 0, execute: 0, respond: 0 };
    const offline = offlineRuntime();
    const counting = (block: boolean): HarnessRuntime => ({
      ...offline,
      instruct: async (i, c) => {
        calls.instruct++;
        return offline.instruct(i, c);
      },
      respond: async (i, c) => {
        calls.respond++;
        return offline.respond(i, c);
      },
      execute: async (input, ctx) => {
        calls.execute++;
        if (block) {
          // The reasoning run is still going when the process shuts down.
          await new Promise((_, reject) => ctx.signal?.addEventListener('abort', () => reject(ctx.signal!.reason as Error), { once: true }));
        }
        return offline.execute(input, ctx);
      },
    });
    const first = harness({ runtime: counting(true), checkpointer, ownerTag: 'first' });
    const sent = await first.send('slack', 'Prepare the board deck.');
    await waitFor(() => calls.execute === 1);
    await first.close();
    expect((await first.cycles(1))[0]).toMatchObject({ status: 'running' });
    expect(calls).toEqual({ instruct: 1, execute: 1, respond: 0 });

    const second = harness({ runtime: counting(false), checkpointer, ownerTag: 'second' });
    expect(await second.recover()).toBe(1);
    await second.settled(sent.cycle_id);
    // Ingestion and the first quick-tier pass were checkpointed: only what had not finished ran again.
    expect(calls).toEqual({ instruct: 1, execute: 2, respond: 1 });
    const [c] = await second.cycles(1);
    expect(c).toMatchObject({ id: sent.cycle_id, status: 'done' });
    expect(c!.path).toEqual(['channel_ingestion', 'frontend_agent', 'agent_execution', 'summarization_gate', 'frontend_agent', 'context_manager_hook']);
    expect((await second.state()).cycle).toBe(1);
    expect(await checkpointer.load(`orchestration:${sent.cycle_id}`)).toBeUndefined();
    expect(await second.recover()).toBe(0);
  });

  it('serves its contract: send, state, cycles; bad params are JSON-RPC errors naming the field', async () => {
    const h = harness();
    const dispatcher = new RpcDispatcher();
    for (const m of implement(orchestrationContract, orchestrationRpcHandlers(h))) dispatcher.add(m as never);
    const call = async (method: string, params: unknown) =>
      (await dispatcher.handle({ jsonrpc: '2.0', id: 1, method, params })) as RpcResponse & { result?: unknown; error?: { code: number; message: string } };

    for (const [params, field] of [
      [{ channel: 'slack', text: '   ' }, 'text'],
      [{ channel: 'two words', text: 'hi' }, 'channel'],
      [{ text: 'hi' }, 'channel'],
      [{ channel: 'slack', text: 'hi', extra: 1 }, '(params)'],
      [{ channel: 'slack', text: 'x'.repeat(8001) }, 'text'],
    ] as const) {
      const r = await call('orchestration.send', params);
      expect(r.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(r.error?.message).toContain(field);
    }
    expect((await call('orchestration.cycles', { limit: 0 })).error?.code).toBe(-32602);
    expect(await h.cycles()).toEqual([]); // nothing was queued by the refused calls

    const sent = (await call('orchestration.send', { channel: 'slack', text: 'Hello harness', wait: true })).result as {
      status: string;
      cycle: { seq: number };
    };
    expect(sent).toMatchObject({ status: 'done', cycle: { seq: 1 } });
    expect(((await call('orchestration.state', {})).result as { cycle: number }).cycle).toBe(1);
    expect(((await call('orchestration.cycles', { limit: 1 })).result as unknown[]).length).toBe(1);
  });

  it('refuses live mode when the host did not provide its services', () => {
    let err: unknown;
    try {
      harness({ settings: orchestrationConfigSchema.parse({ mode: 'live' }) });
    } catch (e) {
      err = e;
    }
    expect(isSubconsciousError(err, 'config_invalid')).toBe(true);
    expect((err as Error).message).toMatch(/the model layer, the agent runner, memory recall, memory storage/);
  });
});

/** Poll (not a timing assertion) until the condition holds. */
async function waitFor(check: () => boolean): Promise<void> {
  await vi.waitFor(
    () => {
      if (!check()) throw new Error('condition not met yet');
    },
    { timeout: 15_000, interval: 5 },
  );
}
