/**
 * One naming convention for params across all methods (issue 18 item 7; the README's "Naming
 * convention"): snake_case; the things passed between methods (a bot, a thread, a task, a world, a
 * runtime) have one name everywhere (`bot_id`, `thread_id`, `task_id`, `world`, `runtime_id`); a
 * plain `id` only for a record one family of methods handles; `timezone`, never `time_zone`.
 * Every renamed param keeps working for one release under its old name, with one deprecation line.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RpcDispatcher, type RpcResponse } from '../../src/core/rpc.js';
import { implement, productContracts, type MethodSpec } from '../../src/protocol/index.js';

const specs = new Map<string, MethodSpec>(productContracts.flatMap((c) => Object.entries(c.methods)));

/** Every rename, with a valid call under the new names (the old name is swapped in below). */
const RENAMES: Record<string, { renamed: Record<string, string>; params: Record<string, unknown> }> = {
  'subconscious.trigger': { renamed: { kind: 'world' }, params: { world: 'tasks' } },
  'subconscious.tasks_update': { renamed: { id: 'task_id' }, params: { task_id: 't1', enabled: false } },
  'subconscious.tasks_remove': { renamed: { id: 'task_id' }, params: { task_id: 't1' } },
  'subconscious.tasks_restore': { renamed: { id: 'task_id' }, params: { task_id: 't1' } },
  'usage.summary': { renamed: { time_zone: 'timezone' }, params: { timezone: 'Asia/Tokyo' } },
  'bots.update': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1', name: 'ops' } },
  'bots.delete': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1' } },
  'bots.thread': { renamed: { id: 'thread_id' }, params: { thread_id: 'th1' } },
  'bots.stop_bot': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1' } },
  'bots.set_heartbeat': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1', enabled: true } },
  'bots.heartbeat_now': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1' } },
  'bots.set_heartbeat_settings': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1', interval_seconds: 600 } },
  'bots.heartbeat_usage': { renamed: { time_zone: 'timezone' }, params: { days: 2, timezone: 'UTC' } },
  'bots.add_followup': { renamed: { id: 'bot_id' }, params: { bot_id: 'b1', in_minutes: 10, note: 'check the build' } },
};

/** Methods whose plain `id` names a record handled by their own family of methods only. */
const PLAIN_ID = [
  'approvals.answer',
  'approvals.approve',
  'approvals.deny',
  'memory.todos_update',
  'memory.goals_update',
  'memory.delegation_accept',
  'memory.delegation_decline',
  'subconscious.log_detail',
  'subconscious.escalations_approve',
  'subconscious.escalations_dismiss',
  'subconscious.escalations_answer',
  'conscious.dismiss',
  'conscious.complete',
  'conscious.reopen',
  'bots.answer_approval',
  'bots.routines_update',
  'bots.routines_remove',
  'bots.resolve_checkin',
].sort();

function paramNames(spec: MethodSpec): string[] {
  const schema = z.toJSONSchema(spec.params, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, unknown> };
  return Object.keys(schema.properties ?? {});
}

describe('the naming convention', () => {
  it('every param is snake_case, and no method takes a retired name', () => {
    for (const [name, spec] of specs) {
      for (const param of paramNames(spec)) {
        expect(param, `${name} {${param}}`).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
        expect(['kind', 'time_zone'], `${name} {${param}}`).not.toContain(param);
      }
    }
  });

  it('a plain id only where the method’s own family handles that record; bots, threads and tasks are named', () => {
    const withId = [...specs].filter(([, spec]) => paramNames(spec).includes('id')).map(([name]) => name);
    expect(withId.sort()).toEqual(PLAIN_ID);
  });

  it('the contracts list exactly these renames', () => {
    const listed = Object.fromEntries([...specs].filter(([, s]) => s.renamed).map(([name, s]) => [name, s.renamed]));
    expect(listed).toEqual(Object.fromEntries(Object.entries(RENAMES).map(([name, r]) => [name, r.renamed])));
  });
});

describe.each(Object.entries(RENAMES))('%s: the old name works for a release', (name, { renamed, params }) => {
  it('answers the old name as the new one and logs one deprecation line', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const spec = specs.get(name)!;
    // The real params schema and renames; the handler echoes what it was given after parsing.
    const rpc = new RpcDispatcher(implement({ methods: { [name]: spec } }, { [name]: (p: unknown) => p }), { log });
    const answer = async (p: Record<string, unknown>) => {
      const res = (await rpc.handle({ jsonrpc: '2.0', id: 1, method: name, params: p })) as RpcResponse;
      if (!('result' in res)) throw new Error(`${name}: ${JSON.stringify(res.error)}`);
      return res.result;
    };
    const expected = await answer(params);
    expect(lines).toHaveLength(0);
    const old = { ...params };
    for (const [from, to] of Object.entries(renamed)) {
      old[from] = old[to];
      delete old[to];
    }
    expect(await answer(old)).toEqual(expected);
    expect(await answer(old)).toEqual(expected);
    const said = lines.filter((l) => l.method === name);
    expect(said).toHaveLength(Object.keys(renamed).length);
    for (const [from, to] of Object.entries(renamed)) {
      expect(said.find((l) => l.param === from)).toMatchObject({ now: to, level: 40 });
    }
    expect(spec.description).toContain('Deprecated param names, accepted for one release');
  });
});
