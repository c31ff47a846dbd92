/**
 * The cut-off rule (src/bots/cut-offs.ts), with real take-overs on both dialects. A chain of
 * workers on one database, each with its own fake clock, takes the job over in turn and is
 * "killed" by never being advanced again: either in the gap before its run (nothing cut off) or
 * with its run's model call hung (a run cut off). Then the harness host (B) takes the job over:
 * - kills that left no run begun are not cut-offs, however many: the message is answered;
 * - a run cut off one time fewer than the cap is answered, after a backoff on B's clock;
 * - a run cut off at the cap, with one holder killed before its run began in between, is answered;
 * - a poison run (cut off on every worker that runs it) is stopped at the cap with the clear error.
 */
import { describe, expect, it } from 'vitest';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { createBotsHost, parseBotsConfig, type BotsHost } from '../../src/bots/index.js';
import { CUT_OFF_BACKOFF_MAX_MS, chargedCutOffs, cutOffBackoffMs, cutOffsOf, runCountOf } from '../../src/bots/cut-offs.js';
import { cutOffTooOftenError, MAX_CUT_OFF_RUNS } from '../../src/bots/runtime.js';
import { createCoordinator, type Coordinator } from '../../src/coordination/index.js';
import { FakeClock, silentLogger, uuid } from '../../src/core/index.js';
import { createLlm } from '../../src/llm/index.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, gate, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const dialects = await testDialects();
const mcpHolder = sharedMcpForFile();

describe('the cut-off count and backoff', () => {
  it('counts runs from the job checkpoint (none: 0), waits nothing after one cut-off, then doubles to a minute', () => {
    expect(runCountOf(null)).toEqual({ runs: 0 });
    expect(runCountOf({ runs: 3, resumeAt: 42 })).toEqual({ runs: 3, resumeAt: 42 });
    expect(runCountOf({ runs: 'x' })).toEqual({ runs: 0 });
    expect(cutOffsOf(null)).toBe(1); // found `working`: at least its last run was cut off
    expect(cutOffsOf({ runs: 4 })).toBe(4);
    // Earlier holders that began no run forgive one cut-off each; a poison job's holders all ran it.
    expect(chargedCutOffs({ runs: 10 }, 10)).toBe(10);
    expect(chargedCutOffs({ runs: 10 }, 13)).toBe(7);
    expect(chargedCutOffs({ runs: 2 }, 9)).toBe(0);
    expect([0, 1, 2, 3, 4, 7, 8, 30].map(cutOffBackoffMs)).toEqual([0, 0, 2000, 4000, 8000, 60_000, 60_000, CUT_OFF_BACKOFF_MAX_MS]);
  });
});

interface Worker {
  host: BotsHost;
  coordinator: Coordinator;
  clock: FakeClock;
}

/** A worker on the harness's database with its own clock, starting at `at` (past every earlier lease). */
async function worker(h: BotsHarness, at: number): Promise<Worker> {
  const clock = new FakeClock(at);
  const endpoint = { baseUrl: h.model.baseUrl, model: 'scripted-model', timeoutMs: 600_000 };
  const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: h.store.db, clock, ids: uuid });
  const approvals = new ApprovalStore({ db: h.store.db, clock, ids: uuid });
  const runner = new AgentRunner({ llm, mcp: new McpManager({ servers: [], clock }), approvals, clock, ids: uuid });
  const coordinator = await createCoordinator({ store: h.store, clock, ids: uuid });
  const config = parseBotsConfig({ next_job_delay_ms: 1000 }); // a gap to be killed in, before the run
  const host = createBotsHost({ coordinator, db: h.db, clock, ids: uuid, runner, approvals, emit: () => undefined, log: silentLogger, config });
  return { host, coordinator, clock };
}

/** The job's row as its coordinator keeps it: attempt (fetches) and the checkpoint (the runs counted). */
async function jobRow(h: BotsHarness, dialect: string, jobId: string): Promise<{ attempt: number; checkpoint: string | null; leaseUntil: number }> {
  const table = dialect === 'postgres' ? 'coord_holds' : 'coord_jobs';
  const idColumn = dialect === 'postgres' ? 'job_id' : 'id';
  const row = await h.store.db.selectFrom(table).select(['attempt', 'checkpoint', 'lease_until']).where(idColumn, '=', jobId).executeTakeFirstOrThrow();
  return { attempt: Number(row.attempt), checkpoint: row.checkpoint, leaseUntil: Number(row.lease_until) };
}

describe.each(dialects)('a bot job taken over again and again on %s', (dialect) => {
  /**
   * Sends a message through a first worker, then one take-over per `pattern` entry by fresh workers,
   * each killed either in its gap (`gap`) or with its run's model call hung (`run`).
   * Returns the ids and the time after which B may take the job over.
   */
  async function chain(h: BotsHarness, pattern: readonly ('run' | 'gap')[]) {
    await h.host.runtime.pump(); // B's coordinator is up first (two pg-boss instances must not create one schema at once)
    const bot = await h.createBot('ops', { tools: [] });
    const thread = await h.host.heartbeat.directThread(bot.id);
    const lapse = () => 2 * h.coordinator.leaseMs + 1;
    let w = await worker(h, h.clock.now());
    const sent = await w.host.runtime.dispatchToBot(bot.id, thread.id, 'a question', { source: 'external' });
    let last = w;
    let runs = 0;
    for (let k = 1; k <= pattern.length; k++) {
      if (k > 1) {
        w = await worker(h, last.clock.now() + lapse());
        await w.host.runtime.pump(); // takes the job over from the last (its lease lapsed on this clock)
      }
      await until(async () => (await jobRow(h, dialect, sent.jobId)).attempt === k);
      if (pattern[k - 1] === 'run') {
        // Its gap ends, then its backoff (if any): the run calls the model, which never answers.
        const calls = h.model.chatRequests.length;
        await until(async () => {
          await w.clock.advance(2000);
          return h.model.chatRequests.length === calls + 1;
        });
        expect(runCountOf(JSON.parse((await jobRow(h, dialect, sent.jobId)).checkpoint!)).runs).toBe(++runs);
      }
      last = w; // killed: never advanced again
    }
    // The first moment B may take it over (B's own timers may pump on the way there, never earlier).
    const takeOverAt = (await jobRow(h, dialect, sent.jobId)).leaseUntil + 1;
    return { sent, takeOverAt, lastWorker: last.coordinator.workerId };
  }

  it('kills before a run began are no cut-offs, however many: answered once', { timeout: 120_000 }, async () => {
    const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    try {
      h.model.handle(() => ({ text: 'The answer.' }));
      const { sent, takeOverAt } = await chain(h, Array<'gap'>(MAX_CUT_OFF_RUNS + 2).fill('gap'));
      expect(h.model.chatRequests).toHaveLength(0);
      await h.clock.advance(takeOverAt - h.clock.now());
      await h.host.runtime.pump();
      await until(async () => (await h.host.heartbeat.getTask(sent.taskId))?.status === 'done');
      expect(h.model.chatRequests).toHaveLength(1);
      expect((await h.db.selectFrom('bots_messages').select(['status', 'text']).where('id', '=', sent.messageId).executeTakeFirstOrThrow()).text).toBe(
        'The answer.',
      );
    } finally {
      await h.dispose();
    }
  });

  it('a run cut off one time fewer than the cap is continued after its backoff, and answered', { timeout: 180_000 }, async () => {
    const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    const hung = gate();
    const answer = { now: false };
    try {
      h.model.handle(async () => {
        if (answer.now) return { text: 'The continued answer.' };
        await hung.wait;
        return { text: 'too late' };
      });
      const cutOffs = MAX_CUT_OFF_RUNS - 1;
      const { sent, takeOverAt } = await chain(h, Array<'run'>(cutOffs).fill('run'));
      expect(h.model.chatRequests).toHaveLength(cutOffs);
      answer.now = true;
      await h.clock.advance(takeOverAt - h.clock.now());
      await h.host.runtime.pump();
      // B took it over and waits its backoff, its end kept with the job, before calling the model.
      const resumeAt = async () => runCountOf(JSON.parse((await jobRow(h, dialect, sent.jobId)).checkpoint!)).resumeAt;
      await until(async () => (await resumeAt()) !== undefined);
      const end = (await resumeAt())!;
      expect(cutOffBackoffMs(cutOffs)).toBe(CUT_OFF_BACKOFF_MAX_MS);
      expect(end - h.clock.now()).toBeGreaterThanOrEqual(CUT_OFF_BACKOFF_MAX_MS - 1); // a minute from the take-over
      await h.clock.advance(end - 1 - h.clock.now());
      expect(h.model.chatRequests).toHaveLength(cutOffs);
      expect((await h.host.heartbeat.getTask(sent.taskId))!.status).toBe('queued');
      await h.clock.advance(1);
      await until(async () => (await h.host.heartbeat.getTask(sent.taskId))?.status === 'done');
      expect(h.model.chatRequests).toHaveLength(cutOffs + 1);
      const reply = await h.db.selectFrom('bots_messages').select(['status', 'text']).where('id', '=', sent.messageId).executeTakeFirstOrThrow();
      expect(reply).toEqual({ status: 'done', text: 'The continued answer.' });
    } finally {
      await h.dispose();
      hung.open();
    }
  });

  it(
    'a worker that died before its run began forgives a cut-off: cut off at the cap with one such death between, it is still answered',
    { timeout: 180_000 },
    async () => {
      const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
      const hung = gate();
      const answer = { now: false };
      try {
        h.model.handle(async () => {
          if (answer.now) return { text: 'Answered at last.' };
          await hung.wait;
          return { text: 'too late' };
        });
        const pattern = Array<'run' | 'gap'>(MAX_CUT_OFF_RUNS).fill('run');
        pattern.splice(5, 0, 'gap'); // killed in its backoff: not the run's doing
        const { sent, takeOverAt } = await chain(h, pattern);
        expect(h.model.chatRequests).toHaveLength(MAX_CUT_OFF_RUNS);
        answer.now = true;
        await h.clock.advance(takeOverAt - h.clock.now());
        await h.host.runtime.pump();
        await until(async () => {
          await h.clock.advance(CUT_OFF_BACKOFF_MAX_MS / 4);
          return (await h.host.heartbeat.getTask(sent.taskId))?.status === 'done';
        });
        expect(h.model.chatRequests).toHaveLength(MAX_CUT_OFF_RUNS + 1);
        expect((await h.db.selectFrom('bots_messages').select('text').where('id', '=', sent.messageId).executeTakeFirstOrThrow()).text).toBe(
          'Answered at last.',
        );
      } finally {
        await h.dispose();
        hung.open();
      }
    },
  );

  it('a poison run, cut off on every worker that runs it, is stopped at the cap with the clear error', { timeout: 180_000 }, async () => {
    const h = await createBotsHarness({ dialect, mcp: mcpHolder.value! });
    const hung = gate();
    try {
      h.model.handle(async () => {
        await hung.wait;
        return { text: 'too late' };
      });
      const { sent, takeOverAt, lastWorker } = await chain(h, Array<'run'>(MAX_CUT_OFF_RUNS).fill('run'));
      await h.clock.advance(takeOverAt - h.clock.now());
      await h.host.runtime.pump();
      await until(async () => (await h.host.heartbeat.getTask(sent.taskId))?.status === 'failed');
      const error = cutOffTooOftenError(MAX_CUT_OFF_RUNS, lastWorker);
      expect(error).toMatch(new RegExp(`cut off ${MAX_CUT_OFF_RUNS} times`));
      expect(await h.host.heartbeat.getTask(sent.taskId)).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'interrupted', error });
      const msg = () => h.db.selectFrom('bots_messages').select(['status', 'error']).where('id', '=', sent.messageId).executeTakeFirstOrThrow();
      await until(async () => (await msg()).status === 'error');
      expect(await msg()).toEqual({ status: 'error', error });
      expect(h.model.chatRequests).toHaveLength(MAX_CUT_OFF_RUNS); // one call per run, none by B
    } finally {
      await h.dispose();
      hung.open();
    }
  });
});
