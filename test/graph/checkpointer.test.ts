/**
 * The checkpointer contract, run against the in-memory checkpointer and the store checkpointer
 * on SQLite and Postgres. "Resume" always goes through a fresh graph instance and, for the
 * store, a second connection, as a restarted process would.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, isSubconsciousError } from '../../src/core/index.js';
import { END, MemoryCheckpointer, START, StateGraph, StoreCheckpointer, type Checkpointer } from '../../src/graph/index.js';
import type { Store } from '../../src/store/index.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';

const backends = ['memory', ...(await testDialects())] as const;
type Backend = (typeof backends)[number];

interface Harness {
  cp: Checkpointer;
  /** A checkpointer over an independent connection to the same data (a restarted process). */
  reopen(): Promise<Checkpointer>;
  /** Raw row counts, straight from the tables where there are tables. */
  rowCounts(): Promise<{ threads: number; checkpoints: number } | null>;
  dispose(): Promise<void>;
}

async function harness(backend: Backend, clock: FakeClock): Promise<Harness> {
  if (backend === 'memory') {
    const cp = new MemoryCheckpointer(clock);
    return { cp, reopen: async () => cp, rowCounts: async () => null, dispose: async () => undefined };
  }
  const store: TestStore = await openTestStore(backend);
  const reopened: Store[] = [];
  return {
    cp: new StoreCheckpointer(store.db, clock),
    reopen: async () => {
      const again = await store.reopen();
      reopened.push(again);
      return new StoreCheckpointer(again.db, clock);
    },
    rowCounts: async () => {
      const t = await store.db
        .selectFrom('graph_threads')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .executeTakeFirstOrThrow();
      const c = await store.db
        .selectFrom('graph_checkpoints')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .executeTakeFirstOrThrow();
      return { threads: Number(t.n), checkpoints: Number(c.n) };
    },
    dispose: async () => {
      for (const s of reopened) await s.close();
      await store.dispose();
    },
  };
}

interface S {
  input: string;
  n1?: string;
  n2?: number;
  n3?: { ok: boolean };
  n4?: string[];
}

/** Four nodes in a line; node 3 throws while `failAt3` says so. Counts every execution. */
function fourNodes(cp: Checkpointer, clock: FakeClock, counts: Record<string, number>, failAt3: { value: boolean }) {
  const count = (name: string) => {
    counts[name] = (counts[name] ?? 0) + 1;
  };
  return new StateGraph<S>()
    .addNode('n1', async (s) => {
      count('n1');
      await clock.advance(1_000);
      return { n1: `seen ${s.input}` };
    })
    .addNode('n2', () => {
      count('n2');
      return { n2: 42 };
    })
    .addNode('n3', () => {
      count('n3');
      if (failAt3.value) throw new Error('model went away');
      return { n3: { ok: true } };
    })
    .addNode('n4', (s) => {
      count('n4');
      return { n4: [s.n1 ?? '', String(s.n2)] };
    })
    .addEdge(START, 'n1')
    .addEdge('n1', 'n2')
    .addEdge('n2', 'n3')
    .addEdge('n3', 'n4')
    .addEdge('n4', END)
    .compile({ name: 'four', checkpointer: cp });
}

describe.each(backends)('graph checkpointer on %s', (backend) => {
  let clock: FakeClock;
  let h: Harness;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 0, 1, 9));
    h = await harness(backend, clock);
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('writes one checkpoint per node: the update and the merged state after it', async () => {
    const start = clock.now();
    const counts: Record<string, number> = {};
    const state = await fourNodes(h.cp, clock, counts, { value: false }).invoke({ input: 'x' }, { threadId: 't1' });
    expect(state).toEqual({ input: 'x', n1: 'seen x', n2: 42, n3: { ok: true }, n4: ['seen x', '42'] });

    const rows = await h.cp.checkpoints('t1');
    expect(rows.map((r) => [r.seq, r.node])).toEqual([
      [1, 'n1'],
      [2, 'n2'],
      [3, 'n3'],
      [4, 'n4'],
    ]);
    expect(rows[0]).toMatchObject({ threadId: 't1', update: { n1: 'seen x' }, state: { input: 'x', n1: 'seen x' }, at: start + 1_000 });
    expect(rows[1]).toMatchObject({ update: { n2: 42 }, state: { input: 'x', n1: 'seen x', n2: 42 } });
    expect(rows[3]?.state).toEqual(state);

    const thread = await h.cp.load('t1');
    expect(thread).toMatchObject({
      threadId: 't1',
      graph: 'four',
      status: 'finished',
      next: null,
      seq: 4,
      error: null,
      createdAt: start,
      updatedAt: start + 1_000,
    });
    expect(thread?.state).toEqual(state);
    expect(await h.rowCounts()).toEqual(backend === 'memory' ? null : { threads: 1, checkpoints: 4 });
  });

  it('resumes a thread that failed in node 3 at node 3, without re-running nodes 1 and 2', async () => {
    const counts: Record<string, number> = {};
    await expect(fourNodes(h.cp, clock, counts, { value: true }).invoke({ input: 'x' }, { threadId: 't' })).rejects.toThrow('model went away');
    expect(counts).toEqual({ n1: 1, n2: 1, n3: 1 });
    expect((await h.cp.checkpoints('t')).map((r) => r.node)).toEqual(['n1', 'n2']);
    expect(await h.cp.load('t')).toMatchObject({ status: 'running', next: 'n3', seq: 2, state: { input: 'x', n1: 'seen x', n2: 42 } });
    expect((await h.cp.unfinished('four')).map((t) => t.threadId)).toEqual(['t']);

    // Another "process": a new graph over a new connection; the initial state passed is ignored.
    const resumed = await fourNodes(await h.reopen(), clock, counts, { value: false }).run({ input: 'IGNORED' }, { threadId: 't' });
    expect(counts).toEqual({ n1: 1, n2: 1, n3: 2, n4: 1 });
    expect(resumed).toMatchObject({ resumed: true, alreadyFinished: false, executed: ['n3', 'n4'], steps: 4 });
    expect(resumed.state).toEqual({ input: 'x', n1: 'seen x', n2: 42, n3: { ok: true }, n4: ['seen x', '42'] });
    expect((await h.cp.checkpoints('t')).map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect(await h.cp.unfinished('four')).toEqual([]);
  });

  it('does not re-run a finished thread: it returns the stored final state', async () => {
    const counts: Record<string, number> = {};
    const first = await fourNodes(h.cp, clock, counts, { value: false }).invoke({ input: 'a' }, { threadId: 'done' });
    const again = await fourNodes(await h.reopen(), clock, counts, { value: true }).run({ input: 'b' }, { threadId: 'done' });
    expect(counts).toEqual({ n1: 1, n2: 1, n3: 1, n4: 1 });
    expect(again).toMatchObject({ alreadyFinished: true, resumed: false, executed: [], steps: 4 });
    expect(again.state).toEqual(first);
    expect((await h.cp.checkpoints('done')).length).toBe(4);
  });

  it('round-trips nested JSON state through a resume', async () => {
    interface Deep {
      doc: unknown;
      tail?: string;
    }
    const doc = {
      title: 'Weekly "digest"\nline two — ünïcødé 🚀',
      at: Date.UTC(2026, 10, 30, 12, 0, 0),
      ratio: 0.1 + 0.2,
      negative: -17,
      flags: [true, false, null],
      nested: {
        level: {
          deeper: {
            list: [
              { id: 'a', tags: [] },
              { id: 'b', tags: ['x', 'y'] },
            ],
            empty: {},
          },
        },
      },
      backslash: 'C:\\path\\to',
    };
    let fail = true;
    const graph = (cp: Checkpointer) =>
      new StateGraph<Deep>()
        .addNode('load', () => ({ doc }))
        .addNode('finish', () => {
          if (fail) throw new Error('crash');
          return { tail: 'done' };
        })
        .addEdge(START, 'load')
        .addEdge('load', 'finish')
        .addEdge('finish', END)
        .compile({ name: 'deep', checkpointer: cp });
    await expect(graph(h.cp).invoke({ doc: null }, { threadId: 'deep' })).rejects.toThrow('crash');
    const other = await h.reopen();
    expect((await other.load('deep'))?.state).toEqual({ doc });
    expect((await other.checkpoints('deep'))[0]?.update).toEqual({ doc });
    fail = false;
    expect(await graph(other).invoke({ doc: null }, { threadId: 'deep' })).toEqual({ doc, tail: 'done' });
  });

  it('prune deletes one thread and its checkpoints, whatever its status', async () => {
    const counts: Record<string, number> = {};
    await fourNodes(h.cp, clock, counts, { value: false }).invoke({ input: 'a' }, { threadId: 'keep' });
    await expect(fourNodes(h.cp, clock, counts, { value: true }).invoke({ input: 'b' }, { threadId: 'drop' })).rejects.toThrow();
    expect(await h.cp.prune('drop')).toBe(true);
    expect(await h.cp.prune('drop')).toBe(false);
    expect(await h.cp.load('drop')).toBeUndefined();
    expect(await h.cp.checkpoints('drop')).toEqual([]);
    expect((await h.cp.checkpoints('keep')).length).toBe(4);
    if (backend !== 'memory') expect(await h.rowCounts()).toEqual({ threads: 1, checkpoints: 4 });
    // A pruned id starts over from scratch.
    await fourNodes(h.cp, clock, counts, { value: false }).invoke({ input: 'c' }, { threadId: 'drop' });
    expect(counts.n1).toBe(3);
  });

  it('pruneFinished deletes finished and failed threads older than the cutoff, never running ones', async () => {
    const counts: Record<string, number> = {};
    const run = (id: string, fail: boolean) =>
      fourNodes(h.cp, clock, counts, { value: fail })
        .invoke({ input: id }, { threadId: id })
        .catch(() => undefined);
    await run('old-finished', false);
    await run('old-failed', true);
    expect(await h.cp.markFailed('old-failed', new Error('gave up'))).toBe(true);
    await run('old-running', true);
    await clock.advance(60 * 60_000);
    await run('new-finished', false);

    expect(await h.cp.pruneFinished(30 * 60_000)).toBe(2);
    expect(await h.cp.load('old-finished')).toBeUndefined();
    expect(await h.cp.load('old-failed')).toBeUndefined();
    expect(await h.cp.checkpoints('old-finished')).toEqual([]);
    expect((await h.cp.load('old-running'))?.status).toBe('running');
    expect((await h.cp.load('new-finished'))?.status).toBe('finished');
    if (backend !== 'memory') expect(await h.rowCounts()).toEqual({ threads: 2, checkpoints: 2 + 4 });

    expect(await h.cp.pruneFinished(0)).toBe(1);
    expect((await h.cp.unfinished('four')).map((t) => t.threadId)).toEqual(['old-running']);
    await expect(h.cp.pruneFinished(-1)).rejects.toMatchObject({ code: 'invalid_params', details: { field: 'olderThanMs' } });
  });

  it('lists unfinished threads per graph, oldest first; markFailed stops a resume', async () => {
    const counts: Record<string, number> = {};
    await fourNodes(h.cp, clock, counts, { value: true })
      .invoke({ input: 'a' }, { threadId: 'b-first' })
      .catch(() => undefined);
    await clock.advance(10);
    await fourNodes(h.cp, clock, counts, { value: true })
      .invoke({ input: 'b' }, { threadId: 'a-second' })
      .catch(() => undefined);
    await fourNodes(h.cp, clock, counts, { value: false }).invoke({ input: 'c' }, { threadId: 'finished' });
    const other = new StateGraph<{ x?: number }>()
      .addNode('boom', () => {
        throw new Error('x');
      })
      .addEdge(START, 'boom')
      .addEdge('boom', END)
      .compile({ name: 'other', checkpointer: h.cp });
    await other.invoke({}, { threadId: 'other-graph' }).catch(() => undefined);

    const listed = await h.cp.unfinished('four');
    expect(listed.map((t) => [t.threadId, t.next, t.seq])).toEqual([
      ['b-first', 'n3', 2],
      ['a-second', 'n3', 2],
    ]);
    expect((await h.cp.unfinished('other')).map((t) => t.threadId)).toEqual(['other-graph']);

    expect(await h.cp.markFailed('b-first', new Error('tick failed: model unreachable'))).toBe(true);
    expect(await h.cp.markFailed('b-first', 'again')).toBe(false);
    expect(await h.cp.markFailed('finished', 'no')).toBe(false);
    expect(await h.cp.markFailed('missing', 'no')).toBe(false);
    expect(await h.cp.load('b-first')).toMatchObject({ status: 'failed', error: 'tick failed: model unreachable' });
    expect((await h.cp.unfinished('four')).map((t) => t.threadId)).toEqual(['a-second']);

    const before = { ...counts };
    const err = await fourNodes(h.cp, clock, counts, { value: false })
      .invoke({ input: 'a' }, { threadId: 'b-first' })
      .catch((e: unknown) => e);
    expect(isSubconsciousError(err, 'conflict')).toBe(true);
    expect((err as Error).message).toMatch(/marked failed \(tick failed: model unreachable\)/);
    expect(counts).toEqual(before);
  });

  it('refuses a duplicate start and an out-of-order write, storing nothing for them', async () => {
    await h.cp.start({ threadId: 'x', graph: 'g', next: 'a', stateJson: '{"v":1}' });
    await expect(h.cp.start({ threadId: 'x', graph: 'g', next: 'a', stateJson: '{"v":2}' })).rejects.toMatchObject({ code: 'conflict' });
    await h.cp.put({ threadId: 'x', seq: 1, node: 'a', updateJson: '{"v":2}', stateJson: '{"v":2}', next: 'b' });
    // A second process that loaded the thread at seq 0 tries to write step 1 again.
    await expect(h.cp.put({ threadId: 'x', seq: 1, node: 'a', updateJson: '{"v":9}', stateJson: '{"v":9}', next: 'b' })).rejects.toMatchObject({
      code: 'conflict',
    });
    await expect(h.cp.put({ threadId: 'x', seq: 3, node: 'c', updateJson: '{}', stateJson: '{}', next: null })).rejects.toMatchObject({ code: 'conflict' });
    await expect(h.cp.put({ threadId: 'nope', seq: 1, node: 'a', updateJson: '{}', stateJson: '{}', next: null })).rejects.toMatchObject({ code: 'conflict' });
    expect((await h.cp.checkpoints('x')).map((r) => [r.seq, r.state])).toEqual([[1, { v: 2 }]]);
    expect(await h.cp.load('x')).toMatchObject({ seq: 1, next: 'b', state: { v: 2 }, status: 'running' });
    expect(await h.cp.load('nope')).toBeUndefined();
  });

  it('finishes a thread at once when START leads straight to END', async () => {
    const graph = new StateGraph<{ v: number }>()
      .addNode('never', () => ({ v: 2 }))
      .addConditionalEdges(START, (s) => (s.v > 0 ? END : 'never'), ['never', END])
      .addEdge('never', END)
      .compile({ name: 'skip', checkpointer: h.cp });
    const result = await graph.run({ v: 1 }, { threadId: 's' });
    expect(result).toMatchObject({ state: { v: 1 }, executed: [], steps: 0 });
    expect(await h.cp.load('s')).toMatchObject({ status: 'finished', next: null, seq: 0 });
    expect(await h.cp.checkpoints('s')).toEqual([]);
  });
});
