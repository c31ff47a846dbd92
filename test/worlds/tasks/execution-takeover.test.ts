/**
 * Issue 17 for task executions, on both dialects: an execution cut off inside its tick's commit is
 * continued by the resumed tick (on another worker once the tick lease lapsed, or the same one
 * after a restart) from the row's checkpoint, instead of ending `failed: interrupted`. Worker A (its
 * own world, engine instance, runner and fake clock) runs a tick and is "killed" at a chosen stage
 * by never being advanced or answered again; worker B (the harness) resumes the tick. Stages: a
 * text execution mid-call; an agent run mid-call after its write returned; an agent run whose
 * answer arrived; a write in flight; the commit after an execution finished. Each: one effect at
 * most, the ledger's rows equal the model server's requests, no row left running, the schedule
 * advanced once (a `once` task is not due again), and the row's detail says "taken over from" A.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { EventBus, FakeClock, silentLogger, uuid } from '../../../src/core/index.js';
import { Instance, LEASE_TTL_MS } from '../../../src/engine/index.js';
import { StoreCheckpointer } from '../../../src/graph/index.js';
import { createTasksWorld, type LogEntry, type TasksTables } from '../../../src/worlds/tasks/index.js';
import type { RecordedRequest, ScriptedReply } from '../../support/model-server.js';
import { testDialects } from '../../support/stores.js';
import {
  createTasksHarness,
  dyingRunner,
  passThrough,
  hasToolResult,
  isAgent,
  isEvaluation,
  isLocalExecution,
  systemOf,
  tasksInPrompt,
  userOf,
  type RunnerDeath,
  type TasksHarness,
} from './harness.js';

const dialects = await testDialects();

/** How worker A dies: as its runs do (`RunnerDeath`), or its commit never applies. */
interface Death extends RunnerDeath {
  hangBeforeApplying?: boolean;
}

/** Worker A: the tasks world on its own clock, runner and engine instance (its own tick-lease holder), on B's database and model server. */
function workerA(h: TasksHarness, n: number, o: Death = {}): { instance: Instance; worker: string; tick: Promise<unknown> } {
  const clock = new FakeClock(h.clock.now());
  const { llm, approvals, agent } = dyingRunner(h, clock, o);
  const db = h.store.db as Kysely<TasksTables>;
  // Killed in the commit, after an execution finished and before its outcome was applied.
  const stopBeforeApplying = passThrough(db, (target, prop) =>
    prop === 'transaction'
      ? () => ({
          execute: async <T>(fn: (trx: never) => Promise<T>): Promise<T> => {
            if (await target.selectFrom('subconscious_log').select('id').where('exec_state', '=', 'executed').executeTakeFirst()) {
              return new Promise<never>(() => undefined);
            }
            return target.transaction().execute(fn as never) as Promise<T>;
          },
        })
      : undefined,
  );
  const worker = `worker-A${n}`;
  const world = createTasksWorld({
    db: o.hangBeforeApplying ? stopBeforeApplying : db,
    clock,
    ids: uuid,
    events: new EventBus(),
    log: silentLogger,
    workspace: h.store.workspace,
    settings: () => h.settings,
    agent,
    approvals,
    skills: h.mcp,
    models: llm,
    worker,
  });
  const instance = new Instance(world, { ...h.engineDeps, llm, clock, checkpointer: new StoreCheckpointer(h.store.db, clock) }, { holderTag: worker });
  const tick = instance.tick().catch(() => undefined); // never awaited: A dies mid-tick
  return { instance, worker, tick };
}

/**
 * The model: every due task is acted on (text) or escalated (a write task's agent run). A write
 * task's run writes its file once, then says so; a continued run told the steps already taken says
 * so without writing again. Titles in `hang` hang every request; in `hangAfterTool`, the request
 * after the tool result (A dies between its write and its answer).
 */
function script(h: TasksHarness) {
  const hang = new Set<string>();
  const hangAfterTool = new Set<string>();
  const writes = new Map<string, number>();
  const approved = { hang: false };
  h.server.handle((req): ScriptedReply => {
    if (approved.hang && systemOf(req).startsWith('The user approved')) return { hang: true };
    if (isEvaluation(req)) {
      return {
        json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: t.title.startsWith('Write') ? 'escalate' : 'act', reason: 'due' })) },
      };
    }
    const title = titleOf(req) ?? '';
    if (hang.has(title)) return { hang: true };
    if (isLocalExecution(req)) return { text: `Summary: ${title}.` };
    if (!isAgent(req)) return { status: 500, message: 'unscripted' };
    if (hasToolResult(req)) return hangAfterTool.has(title) ? { hang: true } : { text: `Wrote ${fileOf(title)}.` };
    if (systemOf(req).includes('Tool steps already taken')) return { text: `Already wrote ${fileOf(title)}.` };
    writes.set(title, (writes.get(title) ?? 0) + 1);
    return { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(h.store.workspace, fileOf(title)), content: title } }] };
  });
  return {
    hang,
    hangAfterTool,
    writes,
    approved,
    requests: (title: string, is: (r: RecordedRequest) => boolean) => h.server.chatRequests.filter((r) => is(r) && titleOf(r) === title).length,
  };
}

/** The task an execution prompt is about: its last fenced title (the situation report before it may quote others, e.g. a failure). */
function titleOf(req: RecordedRequest): string | undefined {
  const all = [...userOf(req).matchAll(/<untrusted-data label="task_title">\n("(?:[^"\\]|\\.)*")\n<\/untrusted-data>/g)];
  return all.length ? (JSON.parse(all.at(-1)![1]!) as string) : undefined;
}

const fileOf = (title: string) => `${/to (\S+)$/.exec(title)?.[1] ?? 'none.txt'}`;

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting: ${what}`);
}

async function rowOf(h: TasksHarness, taskId: string): Promise<LogEntry> {
  const [row] = await h.world.service.listLog({ taskId });
  return row!;
}

/** The checkpoint of the task's execution (null: no row yet, or none). */
async function checkpointOf(h: TasksHarness, taskId: string) {
  const [row] = await h.world.service.listLog({ taskId });
  return row ? (await h.world.service.logs.execCheckpoint(row.id)).checkpoint : null;
}

/** B resumes the tick A left open once A's tick lease lapsed. */
async function resume(h: TasksHarness): Promise<void> {
  await h.clock.advance(LEASE_TTL_MS + 1);
  const outcome = await h.instance.tick();
  expect(outcome, outcome.message).toMatchObject({ kind: 'committed', resumed: true });
}

async function ledgerRows(h: TasksHarness): Promise<number> {
  return (await h.store.db.selectFrom('model_calls').select('id').execute()).length;
}

describe.each(dialects)('a task execution whose worker was killed mid-tick, on %s', (dialect) => {
  it('is continued by the resumed tick from its checkpoint: once, paid once, its schedule advanced once', { timeout: 240_000 }, async () => {
    const h = await createTasksHarness({ dialect });
    try {
      for (const t of await h.world.service.listTasks()) await h.world.service.updateTask(t.id, { enabled: false });
      const model = script(h);
      const add = (title: string, writes = false) => h.world.service.addTask({ title, recurrence: 'once', needs_tools: writes });

      // 1. A text execution cut off mid-call: its answer never arrived, so the resumed tick asks again (once).
      const text = await add('Summarize the release notes');
      model.hang.add(text.title);
      let a = workerA(h, 1);
      await until(() => model.requests(text.title, isLocalExecution) === 1, 'A’s text execution');
      model.hang.delete(text.title);
      await resume(h);
      expect(await rowOf(h, text.id)).toMatchObject({ decision: 'act', result: 'Summary: Summarize the release notes.', exec_state: 'done' });
      expect(model.requests(text.title, isLocalExecution)).toBe(2);
      expect((await h.world.service.logDetail((await rowOf(h, text.id)).id)).execution).toMatchObject({ taken_over_from: a.worker });

      // 2. An agent run whose write returned, cut off in its next model call: continued, told the
      // step it took (fenced), and it does not write again.
      const effect = await add('Write note one to one.txt', true);
      model.hangAfterTool.add(effect.title);
      a = workerA(h, 2);
      await until(() => model.requests(effect.title, (r) => isAgent(r) && hasToolResult(r)) === 1, 'A’s second model call');
      model.hangAfterTool.delete(effect.title);
      await resume(h);
      const continued = await rowOf(h, effect.id);
      expect(continued).toMatchObject({ decision: 'act', result: 'Already wrote one.txt.', exec_state: 'done' });
      expect(model.writes.get(effect.title)).toBe(1);
      expect(readFileSync(path.join(h.store.workspace, 'one.txt'), 'utf8')).toBe(effect.title);
      const told = h.server.chatRequests.filter((r) => isAgent(r) && titleOf(r) === effect.title).at(-1)!;
      expect(systemOf(told)).toMatch(
        /this run continues it[\s\S]*Tool steps already taken \(do not repeat them[\s\S]*<untrusted-data label="checkpoint steps">/,
      );
      const detail = (await h.world.service.logDetail(continued.id)).execution!;
      // A's call that wrote, and B's answer (A's cut-off call never finished: the ledger says interrupted, not here).
      expect(detail).toMatchObject({ taken_over_from: a.worker, calls: { calls: 2 } });
      expect(detail.tool_calls.map((t) => [t.tool, t.outcome])).toEqual([['fs__write_file', 'ok']]);

      // 3. An agent run whose final answer arrived, A dying before the row: applied from the checkpoint, no model call.
      const answered = await add('Write note two to two.txt', true);
      a = workerA(h, 3, { freezeAfterAnswer: true });
      await until(async () => (await checkpointOf(h, answered.id))?.answer != null, 'A’s answer');
      let paid = h.server.chatRequests.length;
      await resume(h);
      expect(await rowOf(h, answered.id)).toMatchObject({ decision: 'act', result: 'Wrote two.txt.', exec_state: 'done' });
      expect(h.server.chatRequests.length).toBe(paid);
      expect(model.writes.get(answered.title)).toBe(1);

      // 4. A write in flight (it happened; A died before hearing back): not run again; the row says it may have happened.
      const inFlight = await add('Write note three to three.txt', true);
      a = workerA(h, 4, { hangAfterWrite: true });
      await until(async () => (await checkpointOf(h, inFlight.id))?.in_flight.length === 1, 'A’s write');
      paid = h.server.chatRequests.length;
      await resume(h);
      const stopped = await rowOf(h, inFlight.id);
      expect(stopped).toMatchObject({ decision: 'failed', exec_state: 'done' });
      expect(stopped.result).toContain(
        `Cut off while fs__write_file (on fs) was running, when its worker (${a.worker}) stopped: it may or may not have happened`,
      );
      expect(h.server.chatRequests.length).toBe(paid);
      expect(model.writes.get(inFlight.title)).toBe(1);

      // 5. Mid-commit: the execution finished and was recorded, its outcome not applied: applied, not run again.
      const applied = await add('Summarize the open tickets');
      a = workerA(h, 5, { hangBeforeApplying: true });
      await until(async () => (await rowOf(h, applied.id))?.exec_state === 'executed', 'A’s executed row');
      paid = h.server.chatRequests.length;
      await resume(h);
      expect(await rowOf(h, applied.id)).toMatchObject({ decision: 'act', result: 'Summary: Summarize the open tickets.', exec_state: 'done' });
      expect(h.server.chatRequests.length).toBe(paid);

      // Nothing left running; every call the server saw is in the ledger; one evaluation per tick.
      const open = await h.store.db.selectFrom('subconscious_log').select('id').where('exec_state', 'in', ['running', 'executed']).execute();
      expect(open).toEqual([]);
      expect(await ledgerRows(h)).toBe(h.server.chatRequests.length);
      expect(h.server.chatRequests.filter(isEvaluation)).toHaveLength(5);
      // Each schedule moved once: the `once` tasks are done, so the next tick finds nothing due and asks nothing.
      await h.clock.advance(5 * 60_000);
      expect((await h.instance.tick()).kind).toBe('quiet');
      expect(h.server.chatRequests.filter(isEvaluation)).toHaveLength(5);
      for (const t of [text, effect, answered, inFlight, applied]) expect(await h.world.service.listLog({ taskId: t.id })).toHaveLength(1);
    } finally {
      await h.dispose();
    }
  });

  it(
    'a row whose card was approved while its tick was cut off is the approved action’s: the resumed commit does not run its execution again',
    { timeout: 120_000 },
    async () => {
      const h = await createTasksHarness({ dialect });
      try {
        for (const t of await h.world.service.listTasks()) await h.world.service.updateTask(t.id, { enabled: false });
        const model = script(h);
        // Its write is not named by its words: the gate holds it, and the commit leaves a card.
        const carded = await h.world.service.addTask({ title: 'Write the launch plan', recurrence: 'once', needs_tools: true });
        await h.clock.advance(1); // due in this order: the card first, then the text execution A dies in
        const text = await h.world.service.addTask({ title: 'Summarize the backlog', recurrence: 'once' });
        model.hang.add(text.title);
        model.approved.hang = true; // the approved action's run is still going when B resumes the tick
        const a = workerA(h, 1);
        const cardOf = async () => {
          const row = await rowOf(h, carded.id);
          return row ? h.world.service.escalations.forLog(row.id) : undefined;
        };
        await until(async () => (await cardOf()) !== undefined, 'the card A’s commit left');
        await until(() => model.requests(text.title, isLocalExecution) === 1, 'A’s text execution');
        await h.world.service.approve((await cardOf())!.id);
        expect(await rowOf(h, carded.id)).toMatchObject({ exec_state: 'running' });
        const ownRun = (r: RecordedRequest) => isAgent(r) && !systemOf(r).startsWith('The user approved');
        const runs = model.requests(carded.title, ownRun);
        model.hang.delete(text.title);
        await resume(h);
        // The tick finished its own row and left the approved one to its job: no second execution.
        expect(model.requests(carded.title, ownRun)).toBe(runs);
        expect(await rowOf(h, text.id)).toMatchObject({ decision: 'act', exec_state: 'done' });
        expect(await rowOf(h, carded.id)).toMatchObject({ exec_state: 'running' });
        void a.tick;
      } finally {
        await h.dispose();
      }
    },
  );
});
