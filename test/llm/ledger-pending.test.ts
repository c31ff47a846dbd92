/**
 * The ledger is complete under a kill (issue 17 §4): a row is written `pending` before the request
 * goes out; a process that dies mid-call leaves it pending, and the next start (another owner on
 * the same database) closes it `interrupted`, counted in usage. Ledger rows equal the model
 * server's requests across the kill. The "kill" is simulated: process A's store is abandoned with
 * its call in flight and the database is reopened as process B.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, processOwner, sequentialIds } from '../../src/core/index.js';
import { createLlm, usageSummary, type ModelsConfig } from '../../src/llm/index.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, testDialects, type AnyStore, type TestStore } from '../support/stores.js';
import { settle } from './setup.js';

const dialects = await testDialects();
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function llmOn(store: AnyStore, server: ModelServer, clock: FakeClock, owner: string, prefix: string) {
  const models: ModelsConfig = {
    local: { baseUrl: server.baseUrl, model: 'local-model', timeoutMs: 30_000 },
    agent: { baseUrl: server.baseUrl, model: 'agent-model', timeoutMs: 30_000 },
  };
  return createLlm({ models, db: store.db, clock, ids: sequentialIds(prefix), owner });
}

async function rows(store: AnyStore) {
  return (await store.db.selectFrom('model_calls').selectAll().orderBy('id').execute()) as Array<Record<string, unknown>>;
}

/** A scripted model server and a fresh store, both closed after the test. */
async function rig(dialect: (typeof dialects)[number]): Promise<{ server: ModelServer; store: TestStore; clock: FakeClock }> {
  const server = await startModelServer({ models: ['local-model', 'agent-model'] });
  const store = await openTestStore(dialect);
  cleanups.push(async () => {
    await server.close();
    await store.dispose();
  });
  return { server, store, clock: new FakeClock(1_700_000_000_000) };
}

describe.each(dialects)('pending ledger rows, on %s', (dialect) => {
  it('a call in flight when its process dies is closed as interrupted by the next process, and counted', async () => {
    const { server, store, clock } = await rig(dialect);
    const a = llmOn(store, server, clock, processOwner('worker-a'), 'a');

    server.enqueue({ text: 'answered' }, { hang: true });
    await a.text({ world: 'tasks', purpose: 'evaluate', role: 'local' }, { prompt: 'first' });
    const inFlight = settle(a.text({ world: 'tasks', purpose: 'evaluate', role: 'local' }, { prompt: 'x'.repeat(400) }));
    await expect.poll(() => server.chatRequests.length).toBe(2);
    const [done, pending] = await rows(store);
    expect(done).toMatchObject({ state: 'done', outcome: 'ok', owner: processOwner('worker-a') });
    expect(pending).toMatchObject({
      state: 'pending',
      outcome: 'pending',
      world: 'tasks',
      purpose: 'evaluate',
      model: 'local-model',
      owner: processOwner('worker-a'),
    });
    expect(Number(pending!.input_tokens)).toBeGreaterThanOrEqual(100); // estimated from the prompt before the call
    expect(Number(pending!.estimated)).toBe(1);
    // Each request names its ledger row, so a server's log joins the ledger row for row.
    expect(server.chatRequests.map((r) => r.headers['x-client-request-id'])).toEqual([done!.id, pending!.id]);

    // "Killed": A never finishes; B opens the same database and starts.
    const reopened = await store.reopen();
    cleanups.push(() => reopened.close());
    const b = llmOn(reopened, server, clock, processOwner('worker-b'), 'b');
    expect(await b.ledger.closeInterrupted(clock.now())).toBe(1);
    expect(await b.ledger.closeInterrupted(clock.now())).toBe(0); // idempotent
    const interrupted = (await rows(reopened)).find((r) => r.id === pending!.id)!;
    expect(interrupted).toMatchObject({ state: 'interrupted', outcome: 'interrupted', output_tokens: 0, estimated: 1 });
    expect(interrupted.error).toMatch(/ended before it answered/);

    server.enqueue({ text: 'after the restart' });
    await b.text({ world: 'tasks', purpose: 'evaluate', role: 'local' }, { prompt: 'again' });
    expect((await rows(reopened)).length).toBe(server.chatRequests.length);

    const summary = await usageSummary(reopened.db, clock.now(), 1);
    expect(summary.totals).toMatchObject({ calls: 3, interrupted: 1, failed: 1 });
    const calls = await b.ledger.calls({ limit: 10 });
    expect(calls.rows.map((r) => r.state).sort()).toEqual(['done', 'done', 'interrupted']);

    // The dead process's call ends late (its connection drops): the interrupted row stays as closed.
    await server.close();
    expect((await inFlight).ok).toBe(false);
    expect((await rows(reopened)).find((r) => r.id === pending!.id)).toMatchObject({ state: 'interrupted' });
  });

  it('a live process keeps its pending rows: another owner on this host whose pid runs is not gone', async () => {
    const { server, store, clock } = await rig(dialect);
    const a = llmOn(store, server, clock, processOwner('worker-a'), 'a');
    const id = await a.ledger.begin({ at: clock.now(), world: 'tasks', purpose: 'evaluate', role: 'local', model: 'local-model', inputTokens: 10 });
    // A worker of another host (trusted until the worker registry says otherwise), and this very instance.
    await store.db.updateTable('model_calls').set({ owner: 'elsewhere:4242' }).where('id', '=', id).execute();
    expect(await a.ledger.closeInterrupted(clock.now())).toBe(0);
    expect(await a.ledger.closeInterrupted(clock.now(), (owner) => owner === 'elsewhere:4242')).toBe(1);
  });
});
