/**
 * The `bots.*` methods fuzzed against real rows (the app-wide fuzz suite starts with no bots, so
 * its calls rarely reach one): two bots, their direct threads and a group, finished, failed and
 * cancelled tasks, a reply waiting on an approval, routines — then arbitrary, mutated and valid
 * params (derived from each method's schema, with the stored ids as vocabulary), on both
 * dialects. Every answer is typed (never -32603); a rejected call leaves every bots table's
 * rows exactly as they were, and the ledger and approvals untouched; an accepted call's work
 * (a run, a stop) is awaited before the next. The model is unreachable for the fuzzed runs: a
 * valid send starts a run that fails fast (connection refused) and never blocks the suite.
 * Every method gets every kind, and every targeted call its share: `FUZZ_RUNS` (default 2)
 * calls per method and kind, three times as many per kind of targeted call (`FUZZ_RUNS=25` is a
 * deep run); the seed is new each run, `FUZZ_SEED` replays one.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Bot, SendResult, Snapshot } from '../../src/protocol/bots.js';
import { anyJson, jsonSchemaOf, mutate, validParams } from '../fuzz/support/params.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, dumpTables, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 2);
const mcpHolder = sharedMcpForFile();

type Kind = 'arbitrary' | 'mutated' | 'valid' | 'targeted';

describe.each(await testDialects())('bots RPC fuzz on %s', (dialect) => {
  it('typed answers only; rejected calls change nothing; valid sends to an unreachable model settle fast', async () => {
    const h: BotsHarness = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    try {
      await seed(h);
      // From here on no model answers: the scripted server is gone and nothing listens on its
      // port, so a valid send's run fails at once (connection refused).
      await h.model.close();

      const words = await vocabulary(h);
      const methods = h.rpc
        .list()
        .map((m) => m.name)
        .filter((n) => n.startsWith('bots.'));
      expect(methods.length).toBe(18);
      // One arbitrary per method and kind, each run on its own: none is left to chance.
      const arbitraries = methods.flatMap((method) => {
        const schema = h.rpc.paramsOf(method)!;
        const shaped = validParams(jsonSchemaOf(schema), words);
        const valid = shaped.filter((p) => schema.safeParse(p).success);
        return [
          anyJson.map((params) => ({ method, kind: 'arbitrary' as Kind, params })),
          mutate(shaped).map((params) => ({ method, kind: 'mutated' as Kind, params })),
          valid.map((params) => ({ method, kind: 'valid' as Kind, params })),
        ];
      });

      // Calls aimed at the real rows (schema-shaped ids rarely hit one): sends to each bot and
      // thread, stop, cancel, dismiss, approval answers — valid or with one thing wrong.
      const ids = await realIds(h);
      const text = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('@ada please look', '@grace and @ada, go', '@nobody hi', 'x'.repeat(100_001), ''));
      const targeted = [
        fc.record({ bot_id: fc.constantFrom(...ids.bots), text }).map((params) => ({ method: 'bots.send_message', kind: 'targeted' as Kind, params })),
        fc.record({ thread_id: fc.constantFrom(...ids.threads), text }).map((params) => ({ method: 'bots.send_message', kind: 'targeted' as Kind, params })),
        fc.record({ bot_id: fc.constantFrom(...ids.bots) }).map((params) => ({ method: 'bots.stop_bot', kind: 'targeted' as Kind, params })),
        fc
          .tuple(fc.constantFrom('bots.cancel_intent', 'bots.dismiss_task'), fc.constantFrom(...ids.tasks))
          .map(([method, task_id]) => ({ method, kind: 'targeted' as Kind, params: { task_id } })),
        fc
          .record({ id: fc.constantFrom(...ids.approvals), approve: fc.boolean() })
          .map((params) => ({ method: 'bots.answer_approval', kind: 'targeted' as Kind, params })),
      ];

      const outcomes = new Map<string, number>();
      const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
      let before = await state(h);
      let id = 0;
      let sendsRun = 0;
      const fuzzSeed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
      const call = async ({ method, kind, params }: { method: string; kind: Kind; params: unknown }) => {
        const res = await h.rpc.handle({ jsonrpc: '2.0', id: ++id, method, params });
        const answer = res as { result?: unknown; error?: { code: number; message: string; data?: { code?: string } } };
        expect('result' in answer !== 'error' in answer).toBe(true);
        if (answer.error) {
          const what = `${method} (${kind}) ${JSON.stringify(params).slice(0, 200)} → ${JSON.stringify(answer.error).slice(0, 300)}`;
          expect([-32600, -32602, -32000], what).toContain(answer.error.code);
          if (answer.error.code === -32000) expect(typeof answer.error.data?.code, what).toBe('string');
          expect(answer.error.message, what).not.toMatch(/\n\s+at /);
          count(`${answer.error.code}${answer.error.data?.code ? ` ${answer.error.data.code}` : ''}`);
          expect(await state(h), what).toEqual(before);
          return;
        }
        count('result');
        if (method === 'bots.send_message') sendsRun += (answer.result as SendResult).dispatched.length;
        await settled(h);
        before = await state(h);
      };
      // A seed per property: the same seed would give every method the same arbitrary JSON.
      let property = 0;
      for (const arbitrary of arbitraries)
        await fc.assert(fc.asyncProperty(arbitrary, call), { numRuns: RUNS, seed: fuzzSeed + property++, endOnFailure: true });
      for (const arbitrary of targeted)
        await fc.assert(fc.asyncProperty(arbitrary, call), { numRuns: 3 * RUNS, seed: fuzzSeed + property++, endOnFailure: true });
      console.log(
        `[bots fuzz ${dialect}] ${id} calls over ${methods.length} methods (seed ${fuzzSeed}): ${[...outcomes.entries()]
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k}: ${n}`)
          .join(', ')}; ${sendsRun} runs started by valid sends, each settled against an unreachable model; 0 internal errors`,
      );
    } finally {
      await h.dispose();
    }
  }, 300_000);
});

/** Two bots with direct threads and a group; done, failed, cancelled tasks; a reply waiting on an approval; routines. */
async function seed(h: BotsHarness): Promise<void> {
  const a = await h.createBot('ada', { label: 'Ada', description: 'Analyses.' });
  const b = await h.createBot('grace', { label: 'Grace' });
  const group = await h.call<{ id: string }>('bots.create_group', { name: 'Crew', bot_ids: [a.id, b.id] });
  h.model.enqueue({ text: 'Done.\nMEMORY: likes tables' });
  await h.call<SendResult>('bots.send_message', { bot_id: a.id, text: 'Summarise the week' });
  await settled(h);
  h.model.enqueue({ status: 500, message: 'upstream down' });
  await h.call<SendResult>('bots.send_message', { thread_id: group.id, text: '@grace check the build' });
  await settled(h);
  h.model.handle(() => ({ hang: true }));
  await h.call<SendResult>('bots.send_message', { bot_id: b.id, text: 'Write the long report' });
  await until(() => h.model.chatRequests.length === 3);
  await h.call('bots.stop_bot', { bot_id: b.id });
  h.model.handle(undefined);
  // A reply that waits on the person's approval (an attended run holds it).
  h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: `${h.dir}/fuzz.txt`, content: 'x' } }] });
  await h.call<SendResult>('bots.send_message', { bot_id: a.id, text: 'File it' });
  await until(async () => (await h.call<Snapshot>('bots.snapshot')).pending_approvals.length === 1);
  await h.call('bots.routines_add', { bot_id: a.id, schedule: '0 9 * * 1-5', prompt: 'Morning summary' });
  await h.call('bots.routines_add', { bot_id: b.id, schedule: '*/30 * * * *', prompt: 'Check the build', enabled: false });
}

async function realIds(h: BotsHarness): Promise<{ bots: string[]; threads: string[]; tasks: string[]; approvals: string[] }> {
  const rows = async (t: 'bots_bots' | 'bots_threads' | 'bots_tasks') => (await h.db.selectFrom(t).select('id').execute()).map((r) => r.id);
  const approvals = (await h.db.selectFrom('bots_approvals').select('approval_id').execute()).map((r) => r.approval_id);
  return { bots: await rows('bots_bots'), threads: await rows('bots_threads'), tasks: await rows('bots_tasks'), approvals };
}

/** Every stored id and short text: the fuzzer's vocabulary, so calls reach real rows. */
async function vocabulary(h: BotsHarness): Promise<string[]> {
  const words = new Set<string>(['ada', 'grace', '@ada hi', '@grace and @ada', '0 9 * * *', 'UTC', 'Europe/Paris', 'agent', 'local:small']);
  for (const rows of Object.values(await dumpTables(h.db))) {
    for (const row of rows) {
      for (const v of Object.values(JSON.parse(row as string) as Record<string, unknown>))
        if (typeof v === 'string' && v.length > 0 && v.length <= 120) words.add(v);
    }
  }
  return [...words];
}

/** What a rejected call must leave alone: every bots row, the approvals and the ledger. */
async function state(h: BotsHarness): Promise<unknown> {
  const counts = await sql<{
    a: number | string;
    l: number | string;
  }>`select (select count(*) from approvals) as a, (select count(*) from model_calls) as l`.execute(h.store.db);
  return { tables: await dumpTables(h.db), approvals: Number(counts.rows[0]!.a), ledger: Number(counts.rows[0]!.l) };
}

/**
 * Until no bot has work going, except a run that waits on a pending approval and the jobs queued
 * behind it: nothing moves there until a person answers.
 */
async function settled(h: BotsHarness): Promise<void> {
  await until(async () => {
    const snap = await h.call<Snapshot>('bots.snapshot');
    const waiting = new Set(snap.pending_approvals.map((a) => a.task_id));
    return snap.bots.every(
      (bot: Bot & { status: string; task_id: string | null; queued: number }) => bot.status === 'idle' || (bot.task_id !== null && waiting.has(bot.task_id)),
    );
  });
}
