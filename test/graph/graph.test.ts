import { describe, expect, it } from 'vitest';
import { isSubconsciousError, type SubconsciousError } from '../../src/core/index.js';
import { END, MemoryCheckpointer, START, StateGraph } from '../../src/graph/index.js';

interface TickState {
  quiet?: boolean;
  trail?: string[];
  observed?: number;
  reflected?: string;
  committed?: boolean;
}

/** The engine's tick shape: observe, then either commit directly (quiet) or the full pipeline. */
function tickGraph(log: string[]) {
  const visit = (name: string) => (s: TickState) => {
    log.push(name);
    return { trail: [...(s.trail ?? []), name] };
  };
  return new StateGraph<TickState>()
    .addNode('observe', (s) => ({ ...visit('observe')(s), observed: 3 }))
    .addNode('prepare', visit('prepare'))
    .addNode('reflect', (s) => ({ ...visit('reflect')(s), reflected: `saw ${s.observed}` }))
    .addNode('commit', (s) => ({ ...visit('commit')(s), committed: true }))
    .addEdge(START, 'observe')
    .addConditionalEdges('observe', (s) => (s.quiet ? 'commit' : 'prepare'), ['commit', 'prepare'])
    .addEdge('prepare', 'reflect')
    .addEdge('reflect', 'commit')
    .addEdge('commit', END);
}

async function expectCode(p: Promise<unknown> | (() => unknown), code: string, message?: RegExp): Promise<SubconsciousError> {
  let caught: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    caught = err;
  }
  expect(isSubconsciousError(caught), `expected SubconsciousError(${code}), got ${String(caught)}`).toBe(true);
  const err = caught as SubconsciousError;
  expect(err.code).toBe(code);
  if (message) expect(err.message).toMatch(message);
  return err;
}

describe('StateGraph routing', () => {
  it('follows plain edges and the conditional branch for a non-quiet state', async () => {
    const log: string[] = [];
    const result = await tickGraph(log).compile({ name: 'tick' }).run({ quiet: false });
    expect(log).toEqual(['observe', 'prepare', 'reflect', 'commit']);
    expect(result.executed).toEqual(log);
    expect(result.steps).toBe(4);
    expect(result.state).toEqual({ quiet: false, trail: ['observe', 'prepare', 'reflect', 'commit'], observed: 3, reflected: 'saw 3', committed: true });
  });

  it('takes the quiet branch straight to commit', async () => {
    const log: string[] = [];
    const state = await tickGraph(log).compile({ name: 'tick' }).invoke({ quiet: true });
    expect(log).toEqual(['observe', 'commit']);
    expect(state.reflected).toBeUndefined();
    expect(state.committed).toBe(true);
  });

  it('lets a router end the run and passes the context to nodes and routers', async () => {
    const seen: string[] = [];
    const graph = new StateGraph<{ n: number }, { limit: number }>()
      .addNode('inc', (s, ctx) => {
        seen.push(`inc ${s.n}/${ctx.limit}`);
        return { n: s.n + 1 };
      })
      .addEdge(START, 'inc')
      .addConditionalEdges('inc', (s, ctx) => (s.n >= ctx.limit ? END : 'inc'), ['inc', END])
      .compile({ name: 'loop' });
    const state = await graph.invoke({ n: 0 }, { ctx: { limit: 3 } });
    expect(state).toEqual({ n: 3 });
    expect(seen).toEqual(['inc 0/3', 'inc 1/3', 'inc 2/3']);
  });

  it('routes from START conditionally', async () => {
    const graph = new StateGraph<{ kind: string; out?: string }>()
      .addNode('a', () => ({ out: 'a' }))
      .addNode('b', () => ({ out: 'b' }))
      .addConditionalEdges(START, (s) => s.kind, ['a', 'b'])
      .addEdge('a', END)
      .addEdge('b', END)
      .compile({ name: 'fork' });
    expect((await graph.invoke({ kind: 'b' })).out).toBe('b');
    expect((await graph.invoke({ kind: 'a' })).out).toBe('a');
  });

  it('fails clearly when a router returns an undeclared target', async () => {
    const graph = new StateGraph<{ to: string }>()
      .addNode('a', () => ({}))
      .addNode('b', () => ({}))
      .addEdge(START, 'a')
      .addConditionalEdges('a', (s) => s.to, ['b', END])
      .addEdge('b', END)
      .compile({ name: 'g' });
    await expectCode(graph.invoke({ to: 'nowhere' }), 'graph_invalid', /router after "a" returned "nowhere"/);
  });

  it('rejects a node that returns something other than an object, and accepts one that returns nothing', async () => {
    const bad = new StateGraph<{ x: number }>()
      .addNode('a', () => [1, 2] as unknown as Partial<{ x: number }>)
      .addEdge(START, 'a')
      .addEdge('a', END)
      .compile({ name: 'g' });
    await expectCode(bad.invoke({ x: 1 }), 'graph_invalid', /node "a" returned an array/);
    const silent = new StateGraph<{ x: number }>()
      .addNode('a', () => undefined as unknown as Partial<{ x: number }>)
      .addEdge(START, 'a')
      .addEdge('a', END)
      .compile({ name: 'g' });
    expect(await silent.invoke({ x: 1 })).toEqual({ x: 1 });
  });
});

describe('reducers', () => {
  it('shallow-merges by default: later keys replace, untouched keys stay', async () => {
    const graph = new StateGraph<{ a: number; b: { deep: number[] }; c?: string }>()
      .addNode('one', () => ({ b: { deep: [2] } }))
      .addNode('two', () => ({ c: 'x' }))
      .addEdge(START, 'one')
      .addEdge('one', 'two')
      .addEdge('two', END)
      .compile({ name: 'merge' });
    expect(await graph.invoke({ a: 1, b: { deep: [1] } })).toEqual({ a: 1, b: { deep: [2] }, c: 'x' });
  });

  it('uses a custom reducer for every update', async () => {
    interface S {
      items: string[];
      count: number;
    }
    const graph = new StateGraph<S>({
      reducer: (s, u) => ({ items: [...s.items, ...(u.items ?? [])], count: s.count + (u.count ?? 0) }),
    })
      .addNode('a', () => ({ items: ['a'], count: 1 }))
      .addNode('b', () => ({ items: ['b1', 'b2'], count: 2 }))
      .addEdge(START, 'a')
      .addEdge('a', 'b')
      .addEdge('b', END)
      .compile({ name: 'append' });
    expect(await graph.invoke({ items: ['start'], count: 10 })).toEqual({ items: ['start', 'a', 'b1', 'b2'], count: 13 });
  });
});

describe('compile-time validation', () => {
  const node = () => ({});
  type G = StateGraph<{ x?: number }>;
  const cases: Array<[string, () => G | unknown, RegExp]> = [
    ['no entry', () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge('a', END).compile({ name: 'g' }), /no entry/],
    [
      'edge to an unknown node',
      () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge(START, 'a').addEdge('a', 'b').compile({ name: 'g' }),
      /unknown node "b"/,
    ],
    [
      'edge from an unknown node',
      () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge(START, 'a').addEdge('a', END).addEdge('ghost', END).compile({ name: 'g' }),
      /starts at unknown node "ghost"/,
    ],
    [
      'conditional target that is not a node',
      () =>
        new StateGraph<{ x?: number }>()
          .addNode('a', node)
          .addEdge(START, 'a')
          .addConditionalEdges('a', () => END, [END, 'missing'])
          .compile({ name: 'g' }),
      /unknown node "missing"/,
    ],
    [
      'node without an outgoing edge',
      () => new StateGraph<{ x?: number }>().addNode('a', node).addNode('b', node).addEdge(START, 'a').addEdge('a', 'b').compile({ name: 'g' }),
      /"b" has no outgoing edge/,
    ],
    [
      'unreachable node',
      () =>
        new StateGraph<{ x?: number }>().addNode('a', node).addNode('b', node).addEdge(START, 'a').addEdge('a', END).addEdge('b', END).compile({ name: 'g' }),
      /"b" cannot be reached/,
    ],
    [
      'edge back to START',
      () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge(START, 'a').addEdge('a', START).compile({ name: 'g' }),
      /leads back to START/,
    ],
    ['duplicate node', () => new StateGraph<{ x?: number }>().addNode('a', node).addNode('a', node), /added twice/],
    ['reserved node name', () => new StateGraph<{ x?: number }>().addNode(END, node), /reserved/],
    ['two outgoing edges', () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge('a', END).addEdge('a', END), /already has an outgoing edge/],
    ['edge out of END', () => new StateGraph<{ x?: number }>().addEdge(END, 'a'), /END has no outgoing/],
    ['conditional edges without targets', () => new StateGraph<{ x?: number }>().addConditionalEdges(START, () => END, []), /declare no targets/],
    ['missing name', () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge(START, 'a').addEdge('a', END).compile({ name: '' }), /needs a name/],
    [
      'bad step limit',
      () => new StateGraph<{ x?: number }>().addNode('a', node).addEdge(START, 'a').addEdge('a', END).compile({ name: 'g', stepLimit: 0 }),
      /stepLimit/,
    ],
  ];
  it.each(cases)('rejects %s', async (_label, build, message) => {
    await expectCode(build, 'graph_invalid', message);
  });
});

describe('step limit', () => {
  const cycle = (stepLimit?: number) => {
    let runs = 0;
    const graph = new StateGraph<{ n: number }>()
      .addNode('ping', (s) => {
        runs++;
        return { n: s.n + 1 };
      })
      .addNode('pong', () => {
        runs++;
        return {};
      })
      .addEdge(START, 'ping')
      .addEdge('ping', 'pong')
      .addConditionalEdges('pong', (s) => (s.n < 0 ? END : 'ping'), ['ping', END])
      .compile({ name: 'cycle', ...(stepLimit ? { stepLimit } : {}) });
    return { graph, runs: () => runs };
  };

  it('stops a cycle after 50 node executions by default', async () => {
    const { graph, runs } = cycle();
    const err = await expectCode(graph.invoke({ n: 0 }), 'graph_step_limit', /step limit \(50\)/);
    expect(runs()).toBe(50);
    expect(err.hint).toMatch(/cycle|stepLimit/);
  });

  it('honours a configured limit, counted across a resume', async () => {
    const checkpointer = new MemoryCheckpointer();
    const { graph, runs } = cycle(5);
    const withCp = cycleWith(checkpointer, 5);
    await expectCode(withCp.graph.invoke({ n: 0 }, { threadId: 't' }), 'graph_step_limit');
    expect(withCp.runs()).toBe(5);
    // Re-invoking does not grant five more steps: the count lives with the thread.
    await expectCode(withCp.graph.invoke({ n: 0 }, { threadId: 't' }), 'graph_step_limit');
    expect(withCp.runs()).toBe(5);
    await expectCode(graph.invoke({ n: 0 }), 'graph_step_limit', /\(5\)/);
    expect(runs()).toBe(5);
  });

  function cycleWith(checkpointer: MemoryCheckpointer, stepLimit: number) {
    let runs = 0;
    const graph = new StateGraph<{ n: number }>()
      .addNode('spin', (s) => {
        runs++;
        return { n: s.n + 1 };
      })
      .addEdge(START, 'spin')
      .addConditionalEdges('spin', () => 'spin', ['spin', END])
      .compile({ name: 'spin', checkpointer, stepLimit });
    return { graph, runs: () => runs };
  }
});

describe('cancellation', () => {
  function threeSteps(controller: AbortController, abortIn: string | null, ran: string[], checkpointer?: MemoryCheckpointer) {
    const step = (name: string) => () => {
      ran.push(name);
      if (name === abortIn) controller.abort(new Error('stop'));
      return { [name]: true };
    };
    return new StateGraph<Record<string, boolean>>()
      .addNode('one', step('one'))
      .addNode('two', step('two'))
      .addNode('three', step('three'))
      .addEdge(START, 'one')
      .addEdge('one', 'two')
      .addEdge('two', 'three')
      .addEdge('three', END)
      .compile({ name: 'three', ...(checkpointer ? { checkpointer } : {}) });
  }

  it('checks the signal between nodes: the node after the abort never starts', async () => {
    const controller = new AbortController();
    const ran: string[] = [];
    const err = await expectCode(threeSteps(controller, 'one', ran).invoke({}, { signal: controller.signal }), 'cancelled', /before "two"/);
    expect(ran).toEqual(['one']);
    expect((err.cause as Error).message).toBe('stop');
  });

  it('runs nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const ran: string[] = [];
    const checkpointer = new MemoryCheckpointer();
    await expectCode(threeSteps(controller, null, ran, checkpointer).invoke({}, { signal: controller.signal, threadId: 't' }), 'cancelled');
    expect(ran).toEqual([]);
    expect(await checkpointer.load('t')).toBeUndefined();
  });

  it('leaves a cancelled thread checkpointed and resumable', async () => {
    const checkpointer = new MemoryCheckpointer();
    const controller = new AbortController();
    const ran: string[] = [];
    await expectCode(threeSteps(controller, 'two', ran, checkpointer).invoke({}, { signal: controller.signal, threadId: 't' }), 'cancelled');
    expect((await checkpointer.load('t'))?.next).toBe('three');
    const result = await threeSteps(new AbortController(), null, ran, checkpointer).run({}, { threadId: 't' });
    expect(ran).toEqual(['one', 'two', 'three']);
    expect(result).toMatchObject({ resumed: true, executed: ['three'], steps: 3, state: { one: true, two: true, three: true } });
  });
});

describe('invoke options', () => {
  const simple = (checkpointer?: MemoryCheckpointer) =>
    new StateGraph<{ v: unknown }>()
      .addNode('set', (s) => ({ v: s.v }))
      .addEdge(START, 'set')
      .addEdge('set', END)
      .compile({ name: 'simple', ...(checkpointer ? { checkpointer } : {}) });

  it('needs a threadId when a checkpointer is configured', async () => {
    const err = await expectCode(simple(new MemoryCheckpointer()).invoke({ v: 1 }), 'invalid_params', /threadId/);
    expect(err.details).toEqual({ field: 'threadId' });
  });

  it('refuses state that JSON cannot hold, naming the field', async () => {
    const err = await expectCode(simple(new MemoryCheckpointer()).invoke({ v: 10n }, { threadId: 't' }), 'invalid_params', /not JSON-serialisable/);
    expect(err.details).toMatchObject({ field: 'state' });
  });

  it('reports every step to onStep after it is checkpointed', async () => {
    const checkpointer = new MemoryCheckpointer();
    const events: Array<[number, string, string, number]> = [];
    await simple(checkpointer).invoke(
      { v: 7 },
      {
        threadId: 't',
        onStep: async (e) => {
          events.push([e.seq, e.node, e.next, (await checkpointer.checkpoints('t')).length]);
        },
      },
    );
    expect(events).toEqual([[1, 'set', END, 1]]);
  });

  it('continues on the stored (JSON) form of the state, as a resumed run would', async () => {
    const seen: unknown[] = [];
    const graph = new StateGraph<{ when: unknown; copy?: unknown }>()
      .addNode('a', (s) => ({ copy: s.when }))
      .addNode('b', (s) => {
        seen.push(s.copy);
        return {};
      })
      .addEdge(START, 'a')
      .addEdge('a', 'b')
      .addEdge('b', END)
      .compile({ name: 'json', checkpointer: new MemoryCheckpointer() });
    await graph.invoke({ when: new Date(Date.UTC(2026, 0, 1)) }, { threadId: 't' });
    expect(seen).toEqual(['2026-01-01T00:00:00.000Z']);
  });

  it('refuses a thread that belongs to another graph', async () => {
    const checkpointer = new MemoryCheckpointer();
    await simple(checkpointer).invoke({ v: 1 }, { threadId: 'shared' });
    const other = new StateGraph<{ v: unknown }>()
      .addNode('x', () => ({}))
      .addEdge(START, 'x')
      .addEdge('x', END)
      .compile({ name: 'other', checkpointer });
    await expectCode(other.invoke({ v: 1 }, { threadId: 'shared' }), 'conflict', /belongs to graph "simple"/);
  });
});
