/**
 * The dispatcher's bounds (issue 9 §2): batches capped at 100, members run in order and one at a
 * time across requests, a per-request budget of running time, and internal errors answered with
 * an id the log carries — never with the internal message.
 */
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { SubconsciousError } from '../../src/core/errors.js';
import { MAX_BATCH_LENGTH, RPC_INTERNAL_ERROR, RPC_INVALID_REQUEST, RpcDispatcher, defineMethod, type RpcResponse } from '../../src/core/rpc.js';
import { implement, method } from '../../src/protocol/contract.js';

const call = (id: number | string, method: string, params: unknown = {}) => ({ jsonrpc: '2.0', id, method, params });

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, lines };
}

describe('batch length', () => {
  const rpc = new RpcDispatcher([defineMethod('echo', z.object({ n: z.number() }).strict(), 'echo', ({ n }) => n)]);

  it(`runs a batch of ${MAX_BATCH_LENGTH} and refuses ${MAX_BATCH_LENGTH + 1} whole, saying how to split it`, async () => {
    const full = (await rpc.handle(Array.from({ length: MAX_BATCH_LENGTH }, (_, i) => call(i, 'echo', { n: i })))) as RpcResponse[];
    expect(full).toHaveLength(MAX_BATCH_LENGTH);
    expect(full.map((r) => ('result' in r ? r.result : null))).toEqual(Array.from({ length: MAX_BATCH_LENGTH }, (_, i) => i));

    const over = (await rpc.handle(Array.from({ length: 3_000 }, (_, i) => call(i, 'echo', { n: i })))) as RpcResponse;
    expect(Array.isArray(over)).toBe(false);
    expect(over).toMatchObject({ id: null, error: { code: RPC_INVALID_REQUEST, data: { max_batch: 100, got: 3_000 } } });
    expect('error' in over && over.error.message).toMatch(/at most 100 calls \(got 3000\)\. Send them in several batches/);
  });
});

/** A batch's answers as they were given out, parsed. */
async function answersOf(texts: string | AsyncIterable<Buffer> | null): Promise<unknown[]> {
  if (texts === null || typeof texts === 'string') throw new Error(`expected a batch's answers, got ${String(texts)}`);
  const out: unknown[] = [];
  for await (const t of texts) out.push(JSON.parse(t.toString('utf8')));
  return out;
}

describe('answers as JSON text (what the HTTP door sends)', () => {
  const rpc = new RpcDispatcher([defineMethod('echo', z.object({ n: z.number() }).strict(), 'echo', ({ n }) => ({ n, twice: [n, n] }))]);

  it('the same answers as objects, a batch as one text per member; parse errors, refusals and notifications as before', async () => {
    const batch = [call(1, 'echo', { n: 1 }), { jsonrpc: '2.0', method: 'echo', params: { n: 2 } }, call(3, 'echo', { n: 'x' }), call(4, 'nope', {})];
    expect(await answersOf(await rpc.handleTextAsJson(JSON.stringify(batch)))).toEqual(await rpc.handleText(JSON.stringify(batch)));
    expect(JSON.parse((await rpc.handleTextAsJson(JSON.stringify(call(5, 'echo', { n: 5 }))))! as string)).toEqual({
      jsonrpc: '2.0',
      id: 5,
      result: { n: 5, twice: [5, 5] },
    });
    expect(JSON.parse((await rpc.handleTextAsJson('{not json')) as string)).toEqual(await rpc.handleText('{not json'));
    const over = JSON.stringify(Array.from({ length: 101 }, (_, i) => call(i, 'echo', { n: i })));
    expect(JSON.parse((await rpc.handleTextAsJson(over)) as string)).toEqual(await rpc.handleText(over));
    expect(await answersOf(await rpc.handleTextAsJson(JSON.stringify([{ jsonrpc: '2.0', method: 'echo', params: { n: 6 } }])))).toEqual([]);
    expect(JSON.parse((await rpc.handleTextAsJson('[]')) as string)).toEqual(await rpc.handleText('[]'));
  });

  it("gives out each member's answer as soon as it is made, and runs every member whether or not anyone reads", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let counted = 0;
    const rpc = new RpcDispatcher([
      defineMethod('echo', z.object({ n: z.number() }).strict(), 'echo', ({ n }) => n),
      defineMethod('wait', z.object({}), 'waits for the test', async () => (await gate, 'late')),
      defineMethod('count', z.object({}), 'counts its calls', () => ++counted),
    ]);
    const answers = (await rpc.handleTextAsJson(JSON.stringify([call(1, 'echo', { n: 1 }), call(2, 'wait')]))) as AsyncIterable<Buffer>;
    const reader = answers[Symbol.asyncIterator]();
    // The first answer is out while the second member still waits.
    expect(JSON.parse((await reader.next()).value!.toString('utf8'))).toEqual({ jsonrpc: '2.0', id: 1, result: 1 });
    release();
    expect(JSON.parse((await reader.next()).value!.toString('utf8'))).toEqual({ jsonrpc: '2.0', id: 2, result: 'late' });
    expect((await reader.next()).done).toBe(true);
    // Nobody reads this one (its client went away): its members all run even so.
    await rpc.handleTextAsJson(JSON.stringify([call(3, 'count'), call(4, 'count'), call(5, 'count')]));
    await vi.waitFor(() => expect(counted).toBe(3));
  });

  it('a heavy single call (made text within its lane turn) answers as one made outside it would: a result, an error, a notification', async () => {
    const heavy = new RpcDispatcher(
      [
        defineMethod('echo', z.object({ n: z.number() }).strict(), 'echo', ({ n }) => ({ n, twice: [n, n] })),
        defineMethod('refuse', z.object({}), 'refuse', () => {
          throw new SubconsciousError('not_found', 'No such thing.', { hint: 'Look elsewhere.' });
        }),
      ],
      { heavyMs: 0 }, // every method heavy: every single call takes the lane
    );
    for (const body of [call(7, 'echo', { n: 7 }), call(8, 'refuse'), call(9, 'echo', { n: 'x' })].map((c) => JSON.stringify(c))) {
      expect(JSON.parse((await heavy.handleTextAsJson(body)) as string)).toEqual(await heavy.handleText(body));
    }
    expect(await heavy.handleTextAsJson(JSON.stringify({ jsonrpc: '2.0', method: 'echo', params: { n: 1 } }))).toBeNull();
  });
});

describe('batch order and turns', () => {
  it('runs members in order, each after the previous finished (a slow first member still ends first)', async () => {
    const events: string[] = [];
    const rpc = new RpcDispatcher([
      defineMethod('step', z.object({ name: z.string(), ms: z.number() }).strict(), 'step', async ({ name, ms }) => {
        events.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, ms));
        events.push(`end ${name}`);
        return name;
      }),
    ]);
    const res = (await rpc.handle([
      call(1, 'step', { name: 'a', ms: 30 }),
      call(2, 'step', { name: 'b', ms: 0 }),
      call(3, 'step', { name: 'c', ms: 10 }),
    ])) as RpcResponse[];
    expect(events).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    expect(res.map((r) => r.id)).toEqual([1, 2, 3]);
  });

  it('lets one member of all concurrent batches run at a time, taking turns', async () => {
    let running = 0;
    let most = 0;
    const order: string[] = [];
    const rpc = new RpcDispatcher([
      defineMethod('work', z.object({ tag: z.string() }).strict(), 'work', async ({ tag }) => {
        running++;
        most = Math.max(most, running);
        order.push(tag);
        await new Promise((r) => setTimeout(r, 2));
        running--;
        return tag;
      }),
    ]);
    const batch = (who: string) => Array.from({ length: 5 }, (_, i) => call(i, 'work', { tag: `${who}${i}` }));
    await Promise.all([rpc.handle(batch('a')), rpc.handle(batch('b')), rpc.handle(batch('c'))]);
    expect(most).toBe(1);
    // Turns, not one batch after another: the second member of `a` waits for `b` and `c` to have had one.
    expect(order.indexOf('b0')).toBeLessThan(order.indexOf('a1'));
    expect(order.indexOf('c0')).toBeLessThan(order.indexOf('a1'));
  });

  it('lets the next member go when one waits longer than the hold time (an approval, a model)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rpc = new RpcDispatcher(
      [
        defineMethod('wait', z.object({}).strict(), 'wait', async () => gate.then(() => 'waited')),
        defineMethod('quick', z.object({}).strict(), 'quick', () => 'quick'),
      ],
      { laneHoldMs: 20 },
    );
    const waiting = rpc.handle([call(1, 'wait')]);
    const quick = await rpc.handle([call(2, 'quick')]);
    expect(quick).toEqual([{ jsonrpc: '2.0', id: 2, result: 'quick' }]);
    release();
    expect(await waiting).toEqual([{ jsonrpc: '2.0', id: 1, result: 'waited' }]);
  });
});

describe('single calls', () => {
  it('of a method that has proved heavy take turns in the lane; light ones run at once', async () => {
    let t = 0;
    const running = { heavy: 0, light: 0 };
    const most = { heavy: 0, light: 0 };
    const body = (kind: 'heavy' | 'light', cost: number) => async () => {
      running[kind]++;
      most[kind] = Math.max(most[kind], running[kind]);
      t += cost; // the injected clock: what the call "took"
      await new Promise((r) => setTimeout(r, 2));
      running[kind]--;
      return kind;
    };
    const rpc = new RpcDispatcher(
      [defineMethod('heavy', z.object({}).strict(), 'heavy', body('heavy', 40)), defineMethod('light', z.object({}).strict(), 'light', body('light', 1))],
      { now: () => t },
    );
    await rpc.handle(call(0, 'heavy'));
    await rpc.handle(call(0, 'light'));
    await Promise.all(Array.from({ length: 5 }, (_, i) => [rpc.handle(call(i, 'heavy')), rpc.handle(call(i, 'light'))]).flat());
    expect(most.heavy).toBe(1);
    expect(most.light).toBeGreaterThan(1);
  });
});

describe('never-queued methods', () => {
  it('run at once even after their calls have proved heavy, while heavy calls take turns', async () => {
    let t = 0;
    let running = 0;
    let most = 0;
    const slow = async () => {
      running++;
      most = Math.max(most, running);
      t += 40; // what each call "took" on the injected clock: heavy for both methods
      await new Promise((r) => setTimeout(r, 2));
      running--;
      return 'done';
    };
    const rpc = new RpcDispatcher(
      [defineMethod('heavy', z.object({}).strict(), 'heavy', slow), defineMethod('status', z.object({}).strict(), 'status', slow)],
      { now: () => t, neverQueued: ['status'] },
    );
    await rpc.handle(call(0, 'heavy'));
    await rpc.handle(call(0, 'status'));
    // Five heavy calls queue in the lane; the five status calls, just as costly, never wait there.
    const order: string[] = [];
    await Promise.all(
      Array.from({ length: 5 }, (_, i) => [
        rpc.handle(call(i, 'heavy')).then(() => order.push('heavy')),
        rpc.handle(call(i, 'status')).then(() => order.push('status')),
      ]).flat(),
    );
    expect(order.slice(0, 5)).toEqual(Array(5).fill('status'));
    expect(most).toBeGreaterThan(1);
  });
});

describe('request budget', () => {
  it('answers the members after the budget is spent with over_budget, without running them', async () => {
    let t = 0;
    const ran: number[] = [];
    const rpc = new RpcDispatcher(
      [
        defineMethod('costly', z.object({ n: z.number() }).strict(), 'costly', ({ n }) => {
          ran.push(n);
          t += 400; // each call "takes" 400 ms on the injected clock
          return n;
        }),
      ],
      { requestBudgetMs: 1_000, now: () => t },
    );
    const res = (await rpc.handle([1, 2, 3, 4, 5].map((n) => call(n, 'costly', { n })))) as RpcResponse[];
    expect(ran).toEqual([1, 2, 3]); // 1,200 ms spent after the third: the rest never start
    expect(res.slice(0, 3).map((r) => ('result' in r ? r.result : null))).toEqual([1, 2, 3]);
    for (const r of res.slice(3)) {
      expect(r).toMatchObject({ error: { code: -32000, data: { code: 'over_budget' } } });
      expect('error' in r && r.error.message).toMatch(/Send the calls that were not run in a new request/);
    }
    expect(res.map((r) => r.id)).toEqual([1, 2, 3, 4, 5]);
  });

  it('does not count time spent waiting for other requests’ members', async () => {
    let t = 0;
    const rpc = new RpcDispatcher(
      [
        defineMethod('slow', z.object({}).strict(), 'slow', () => {
          t += 600;
          return 'slow';
        }),
        defineMethod('fast', z.object({}).strict(), 'fast', () => 'fast'),
      ],
      { requestBudgetMs: 1_000, now: () => t },
    );
    const [, fast] = await Promise.all([rpc.handle([1, 2, 3].map((i) => call(i, 'slow'))), rpc.handle([1, 2, 3].map((i) => call(i, 'fast')))]);
    expect((fast as RpcResponse[]).every((r) => 'result' in r)).toBe(true);
  });
});

describe('the NUL character', () => {
  it('anywhere in the params (value or key, however deep) is refused as bad params, naming where', async () => {
    let ran = 0;
    const rpc = new RpcDispatcher([
      defineMethod('store', z.object({}).passthrough(), 'store', () => {
        ran++;
        return 'stored';
      }),
    ]);
    const cases: [unknown, string][] = [
      [{ id: 'ab\u0000c' }, 'id'],
      [{ a: { b: ['ok', 'x\u0000'] } }, 'a.b.1'],
      [{ 'k\u0000': 1 }, 'k\u0000'],
    ];
    for (const [params, field] of cases) {
      const res = (await rpc.handle(call(1, 'store', params))) as { error: { code: number; message: string; data: { issues: { field: string }[] } } };
      expect(res.error.code).toBe(-32602);
      expect(res.error.data.issues[0]!.field).toBe(field);
      expect(res.error.message).toMatch(/must not contain the NUL character \(U\+0000\); remove it/);
    }
    expect(ran).toBe(0);
    expect(await rpc.handle(call(2, 'store', { id: 'fine \u0001 too' }))).toMatchObject({ result: 'stored' });
  });
});

describe('internal errors', () => {
  const secret = 'connection string postgres://admin:hunter2@db/prod';
  const methods = [
    defineMethod('broken', z.object({}).strict(), 'throws a bug', () => {
      throw new TypeError(secret);
    }),
    defineMethod('refused', z.object({}).strict(), 'throws a SubconsciousError', () => {
      throw new SubconsciousError('conflict', 'Already approved.', { hint: 'Reload the list.' });
    }),
  ];

  it('answers -32603 "internal error" with an id, which the log line carries with the real message', async () => {
    const { log, lines } = capturingLogger();
    const rpc = new RpcDispatcher(methods);
    const res = (await rpc.handle(call(7, 'broken'), { log })) as { error: { code: number; message: string; data: { error_id: string } } };
    expect(res.error.code).toBe(RPC_INTERNAL_ERROR);
    expect(res.error.message).toMatch(/^Internal error in broken \(error id [0-9a-f]{12}\)/);
    expect(JSON.stringify(res)).not.toContain('hunter2');
    const id = res.error.data.error_id;
    expect(res.error.message).toContain(id);
    const line = lines.find((l) => l.error_id === id);
    expect(line).toMatchObject({ method: 'broken', msg: 'internal error in an RPC method' });
    expect(JSON.stringify(line)).toContain('hunter2');
  });

  it('uses the dispatcher’s own logger when the request names none, and keeps application errors as they are', async () => {
    const { log, lines } = capturingLogger();
    const rpc = new RpcDispatcher(methods, { log, errorId: () => 'fixed-id' });
    const res = (await rpc.handle([call(1, 'broken'), call(2, 'refused')])) as RpcResponse[];
    expect(res[0]).toMatchObject({ error: { code: RPC_INTERNAL_ERROR, data: { error_id: 'fixed-id' } } });
    expect(res[1]).toMatchObject({ error: { code: -32000, message: 'Already approved.', data: { code: 'conflict', hint: 'Reload the list.' } } });
    expect(lines.filter((l) => l.error_id === 'fixed-id')).toHaveLength(1);
  });

  it('in-process call() throws the id with the original error as its cause', async () => {
    const rpc = new RpcDispatcher(methods);
    const err = (await rpc.call('broken').catch((e: unknown) => e)) as SubconsciousError;
    expect(err).toBeInstanceOf(SubconsciousError);
    expect(err.message).not.toContain('hunter2');
    expect((err.cause as Error).message).toBe(secret);
  });

  it('a params schema that throws is an internal error, not a crash', async () => {
    const rpc = new RpcDispatcher([
      defineMethod(
        'fragile',
        z.object({ a: z.string() }).refine(() => {
          throw new Error('refine blew up');
        }),
        'fragile',
        () => 'never',
      ),
    ]);
    const res = (await rpc.handle(call(1, 'fragile', { a: 'x' }))) as RpcResponse;
    expect(res).toMatchObject({ error: { code: RPC_INTERNAL_ERROR } });
    expect(JSON.stringify(res)).not.toContain('blew up');
  });
});

describe('renamed params (the naming convention keeps old names for a release)', () => {
  const contract = {
    methods: {
      'demo.trigger': method(z.strictObject({ world: z.string().optional() }), 'Run a world.', { renamed: { kind: 'world' } }).returns<string>(),
    },
  };
  const setup = () => {
    const { log, lines } = capturingLogger();
    const rpc = new RpcDispatcher(implement(contract, { 'demo.trigger': ({ world }) => world ?? 'all' }), { log });
    const result = async (params: unknown) => {
      const res = (await rpc.handle(call(1, 'demo.trigger', params))) as RpcResponse;
      return 'result' in res ? res.result : res.error;
    };
    return { lines, result };
  };

  it('answers the old name as the new one, logs one deprecation line per name, and the new name wins when both are sent', async () => {
    const { lines, result } = setup();
    expect(await result({ world: 'tasks' })).toBe('tasks');
    expect(lines.filter((l) => l.param === 'kind')).toHaveLength(0);
    expect(await result({ kind: 'memory' })).toBe('memory');
    expect(await result({ kind: 'steering' })).toBe('steering');
    const said = lines.filter((l) => l.param === 'kind');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ method: 'demo.trigger', now: 'world' });
    expect(String(said[0]!.msg)).toMatch(/"kind" is now "world"/);
    expect(await result({ kind: 'memory', world: 'tasks' })).toBe('tasks');
  });

  it('says the old names in the method’s description (rpc.methods, OpenAPI)', () => {
    expect(contract.methods['demo.trigger'].description).toBe('Run a world. Deprecated param names, accepted for one release: kind (now world).');
  });

  it('a misspelt name is still refused (only the listed old names are renamed)', async () => {
    const { result } = setup();
    expect(await result({ wrold: 'tasks' })).toMatchObject({ code: -32602 });
  });
});
