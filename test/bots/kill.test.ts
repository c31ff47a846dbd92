/**
 * Issue 17's short deterministic kill test, on both dialects: worker A (its own fake clock, never
 * advanced after the "kill", its runtime dropped without stop) takes a bot job; worker B (the
 * harness host) takes the job over once A's lease lapsed. Stages: queued (A held it, its run not
 * begun), mid-call (A's model call never returns), mid-commit (A committed the answer, not the
 * job's completion). Nothing is lost, nothing is answered twice, nothing stays queued/working: a run
 * cut off mid-call is continued by its own job (not left `failed` for the heartbeat, which would
 * skip it as superseded once the bot answered a newer message: the chaos run's unanswered ones).
 */
import { describe, expect, it } from 'vitest';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { createBotsHost, parseBotsConfig, type BotsHost } from '../../src/bots/index.js';
import { cutOffTooOftenError, MAX_CUT_OFF_RUNS } from '../../src/bots/runtime.js';
import { createCoordinator, type Coordinator } from '../../src/coordination/index.js';
import { FakeClock, silentLogger, uuid } from '../../src/core/index.js';
import { createLlm } from '../../src/llm/index.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, gate, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const dialects = await testDialects();
const mcpHolder = sharedMcpForFile();

interface WorkerA {
  host: BotsHost;
  coordinator: Coordinator;
  clock: FakeClock;
}

/**
 * A second worker on the same database with its own clock: "killed" by never advancing it again.
 * `freezeAfterAnswer`: its runs' outcomes never reach its host (killed once the answer arrived, before the settle).
 */
async function workerA(h: BotsHarness, o: { freezeAfterAnswer?: boolean } = {}): Promise<WorkerA> {
  const clock = new FakeClock(h.clock.now());
  const endpoint = { baseUrl: h.model.baseUrl, model: 'scripted-model', timeoutMs: 600_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: h.store.db, clock, ids: uuid });
  const approvals = new ApprovalStore({ db: h.store.db, clock, ids: uuid });
  const real = new AgentRunner({ llm, mcp: new McpManager({ servers: [], clock }), approvals, clock, ids: uuid });
  const runner: Pick<AgentRunner, 'start'> = o.freezeAfterAnswer
    ? { start: (options) => ({ ...real.start(options), settled: new Promise<never>(() => undefined) }) }
    : real;
  const coordinator = await createCoordinator({ store: h.store, clock, ids: uuid });
  // A gap before each run, so "queued" and "mid-commit" can be caught with the job held.
  const config = parseBotsConfig({ next_job_delay_ms: 5000 });
  const host = createBotsHost({ coordinator, db: h.db, clock, ids: uuid, runner, approvals, emit: () => undefined, log: silentLogger, config });
  return { host, coordinator, clock };
}

async function ledgerRows(h: BotsHarness): Promise<number> {
  return (await h.store.db.selectFrom('model_calls').select('id').execute()).length;
}

async function liveJobs(h: BotsHarness): Promise<number> {
  const size = (await h.coordinator.sizes()).find((s) => s.queue === 'bots.run');
  return (size?.queued ?? 0) + (size?.active ?? 0);
}

describe.each(dialects)('a killed worker’s bot job on %s', (dialect) => {
  it('queued, mid-call, mid-commit: taken over after the lease, continued, answered once, nothing stuck', { timeout: 120_000 }, async () => {
    const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    const hung = gate();
    try {
      await h.host.runtime.pump(); // B's coordinator is up first (two pg-boss instances must not create one schema at once)
      // A fresh worker A per stage, its clock in step with B's when it starts (a killed one is never touched again).
      let a = await workerA(h);
      const bot = await h.createBot('ops', { tools: [] });
      const thread = await h.host.heartbeat.directThread(bot.id);
      const lapse = async () => {
        await h.clock.advance(2 * h.coordinator.leaseMs + 1);
        await h.host.runtime.pump();
      };

      // 1. Queued: A holds the job in its gap; killed there. B runs it, once.
      h.model.handle(() => ({ text: 'The answer.' }));
      const queued = await a.host.runtime.dispatchToBot(bot.id, thread.id, 'first', { source: 'external' });
      expect(await h.host.heartbeat.getTask(queued.taskId)).toMatchObject({ status: 'queued' });
      await lapse();
      await until(async () => (await h.host.heartbeat.getTask(queued.taskId))!.status === 'done');
      expect(await h.host.heartbeat.getTask(queued.taskId)).toMatchObject({ status: 'done', taken_over_from: a.coordinator.workerId });
      expect(h.model.chatRequests).toHaveLength(1);
      expect(await ledgerRows(h)).toBe(h.model.chatRequests.length);

      a = await workerA(h);
      // 2. Mid-commit: A committed the answer (task and message done) but not the job. B does not run it again.
      const committed = await a.host.runtime.dispatchToBot(bot.id, thread.id, 'second', { source: 'external' });
      await h.db.updateTable('bots_tasks').set({ status: 'done', finished_at: h.clock.now() }).where('id', '=', committed.taskId).execute();
      await h.db.updateTable('bots_messages').set({ status: 'done', text: 'Answered by A.' }).where('id', '=', committed.messageId).execute();
      await lapse();
      await until(async () => (await liveJobs(h)) === 0);
      expect(h.model.chatRequests).toHaveLength(1);
      expect(await h.host.heartbeat.getTask(committed.taskId)).toMatchObject({ status: 'done' });

      a = await workerA(h);
      // 3. Mid-call: A's model call never returns. B takes the job over and continues the task (a new
      // run into the same message, told A's partial text): the person's message is answered once.
      h.model.handle(async (req) => {
        if (h.model.chatRequests.length === 2) {
          await hung.wait; // A's call
          return { text: 'too late' };
        }
        const seen = JSON.stringify(req.body?.messages ?? []);
        return { text: seen.includes('this run continues it') ? 'The continued answer.' : 'not told it continues' };
      });
      const call = await a.host.runtime.dispatchToBot(bot.id, thread.id, 'third', { source: 'external' });
      await a.clock.advance(5000); // A's own clock: its gap ends, its run calls the model; then it is never advanced again
      await until(() => h.model.chatRequests.length === 2);
      await lapse();
      await until(async () => (await h.host.heartbeat.getTask(call.taskId))!.status === 'done');
      expect(await h.host.heartbeat.getTask(call.taskId)).toMatchObject({ status: 'done', interrupted: false, taken_over_from: a.coordinator.workerId });
      const reply = await h.db.selectFrom('bots_messages').select(['text', 'status']).where('id', '=', call.messageId).executeTakeFirstOrThrow();
      expect(reply).toEqual({ text: 'The continued answer.', status: 'done' });
      expect(h.model.chatRequests).toHaveLength(3);
      const replies = await h.db.selectFrom('bots_messages').select('id').where('task_id', '=', call.taskId).where('role', '=', 'bot').execute();
      expect(replies).toHaveLength(1); // one reply, not a second message
      await until(async () => (await liveJobs(h)) === 0);
      const open = await h.db.selectFrom('bots_tasks').select('id').where('status', 'in', ['queued', 'working']).execute();
      expect(open).toEqual([]);
    } finally {
      await h.dispose();
      hung.open();
    }
  });
});

describe.each(dialects)('a bot job cut off too often, taken over on %s', (dialect) => {
  it('is left failed + interrupted with the one cut-off message (as at a restart), not run again', { timeout: 120_000 }, async () => {
    const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    const hung = gate();
    try {
      await h.host.runtime.pump(); // B's coordinator first (see above)
      const a = await workerA(h);
      const bot = await h.createBot('ops', { tools: [] });
      const thread = await h.host.heartbeat.directThread(bot.id);
      h.model.handle(async () => {
        await hung.wait; // A's call never returns
        return { text: 'too late' };
      });
      const sent = await a.host.runtime.dispatchToBot(bot.id, thread.id, 'a question', { source: 'external' });
      await a.clock.advance(5000); // A's run calls the model, then A is never advanced again
      await until(() => h.model.chatRequests.length === 1);
      // A's run is the job's MAX_CUT_OFF_RUNS-th run (the ones before it were cut off too): runs are counted with the job.
      const jobId = sent.jobId;
      const table = dialect === 'postgres' ? 'coord_holds' : 'coord_jobs';
      const idColumn = dialect === 'postgres' ? 'job_id' : 'id';
      const counted = await h.store.db.selectFrom(table).select('checkpoint').where(idColumn, '=', jobId).executeTakeFirstOrThrow();
      expect(JSON.parse(counted.checkpoint!)).toEqual({ runs: 1 }); // A counted its run before calling the model
      await h.store.db
        .updateTable(table)
        .set({ checkpoint: JSON.stringify({ runs: MAX_CUT_OFF_RUNS }) })
        .where(idColumn, '=', jobId)
        .execute();

      await h.clock.advance(2 * h.coordinator.leaseMs + 1);
      await h.host.runtime.pump();
      await until(async () => (await h.host.heartbeat.getTask(sent.taskId))!.status === 'failed');
      const error = cutOffTooOftenError(MAX_CUT_OFF_RUNS, a.coordinator.workerId);
      expect(await h.host.heartbeat.getTask(sent.taskId)).toMatchObject({
        status: 'failed',
        interrupted: true,
        error_kind: 'interrupted',
        error,
        taken_over_from: a.coordinator.workerId,
      });
      const msg = () => h.db.selectFrom('bots_messages').select(['status', 'error']).where('id', '=', sent.messageId).executeTakeFirstOrThrow();
      await until(async () => (await msg()).status === 'error'); // written just after the task
      expect(await msg()).toEqual({ status: 'error', error });
      await until(async () => (await liveJobs(h)) === 0);
      expect(h.model.chatRequests).toHaveLength(1);
    } finally {
      await h.dispose();
      hung.open();
    }
  });
});

describe.each(dialects)('a worker killed after its answer arrived, before the settle, on %s', (dialect) => {
  it('the take-over settles from the checkpointed answer: one model call, one ledger row, one settle', { timeout: 120_000 }, async () => {
    const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    try {
      await h.host.runtime.pump(); // B's coordinator first (see above)
      const a = await workerA(h, { freezeAfterAnswer: true });
      const bot = await h.createBot('ops', { tools: [] });
      const thread = await h.host.heartbeat.directThread(bot.id);
      const settled: { taskId: string; calls: number; status: string }[] = [];
      h.host.heartbeat.onSettled((i) => void settled.push({ taskId: i.task.id, calls: i.usage.calls, status: i.task.status }));
      h.model.handle(() => ({ text: 'The answer, once.\nMEMORY: the person likes short answers' }));

      const sent = await a.host.runtime.dispatchToBot(bot.id, thread.id, 'a question', { source: 'external' });
      await a.clock.advance(5000); // A's gap ends: its run calls the model, the answer arrives, A "dies" before settling
      const taskRow = () => h.db.selectFrom('bots_tasks').selectAll().where('id', '=', sent.taskId).executeTakeFirstOrThrow();
      await until(async () => (await taskRow()).checkpoint?.includes('"answer"') ?? false);
      const cut = await taskRow();
      expect(cut.status).toBe('working');
      expect(JSON.parse(cut.checkpoint!).answer).toMatchObject({ run_id: cut.run_id, text: 'The answer, once.', steps: 1, usage: { calls: 1 } });
      expect(JSON.parse(cut.checkpoint!).answer.controls).toEqual([{ kind: 'memory', text: 'the person likes short answers' }]);
      // The public task hides the record (the message carries the text).
      expect((await h.host.heartbeat.getTask(sent.taskId))!.checkpoint).not.toHaveProperty('answer');
      expect(h.model.chatRequests).toHaveLength(1);

      await h.clock.advance(2 * h.coordinator.leaseMs + 1);
      await h.host.runtime.pump();
      await until(async () => (await h.host.heartbeat.getTask(sent.taskId))!.status === 'done');
      expect(await h.host.heartbeat.getTask(sent.taskId)).toMatchObject({
        status: 'done',
        interrupted: false,
        error: null,
        taken_over_from: a.coordinator.workerId,
      });
      expect((await h.host.heartbeat.getTask(sent.taskId))!.checkpoint).toMatchObject({ summary: 'The answer, once.' });
      await until(async () => (await liveJobs(h)) === 0);

      // Paid once: one request to the model server, one ledger row, finished.
      expect(h.model.chatRequests).toHaveLength(1);
      const ledger = await h.store.db.selectFrom('model_calls').selectAll().execute();
      expect(ledger).toHaveLength(1);
      expect(ledger[0]).toMatchObject({ world: 'bots', purpose: 'bot_external' });
      // Answered once: one bot message with exactly that text, done once on this worker; one settle with A's usage.
      const replies = await h.db
        .selectFrom('bots_messages')
        .select(['id', 'text', 'status'])
        .where('task_id', '=', sent.taskId)
        .where('role', '=', 'bot')
        .execute();
      expect(replies).toEqual([{ id: sent.messageId, text: 'The answer, once.', status: 'done' }]);
      const doneEvents = h.events.filter((e) => e.type === 'bots.message_changed' && e.data.message.id === sent.messageId && e.data.message.status === 'done');
      expect(doneEvents).toHaveLength(1);
      expect(settled).toEqual([{ taskId: sent.taskId, calls: 1, status: 'done' }]);
      // Its control line acted once.
      const notes = await h.db.selectFrom('bots_notes').select(['kind', 'text']).where('task_id', '=', sent.taskId).execute();
      expect(notes).toEqual([{ kind: 'memory', text: 'the person likes short answers' }]);
    } finally {
      await h.dispose();
    }
  });
});
