/**
 * Restart repair (issue 11 §5): a real crash (a child process on a SQLite file, killed with
 * SIGKILL mid-run) and the repair rules on both dialects, including rows of other processes. A
 * dead process's run is continued by its durable job (issue 17 §1), not left `failed` for the
 * heartbeat: that one skipped it as superseded once the bot had answered a newer message, and the
 * person's message stayed unanswered (the chaos run's unanswered messages).
 */
import { createCoordinator } from '../../src/coordination/index.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { ApprovalLinks } from '../../src/bots/approval-links.js';
import { botsMigrations, createBotsHost, parseBotsConfig, type BotsTables } from '../../src/bots/index.js';
import { BOTS_RUN_QUEUE, jobKey } from '../../src/bots/jobs.js';
import { cutOffTooOftenError, MAX_CUT_OFF_RUNS } from '../../src/bots/runtime.js';
import { TaskStore } from '../../src/bots/task-store.js';
import { ThreadStore } from '../../src/bots/thread-store.js';
import { FakeClock, silentLogger, uuid } from '../../src/core/index.js';
import { createLlm } from '../../src/llm/index.js';
import { applyMigrations, tablesView } from '../../src/store/index.js';
import { openProductStore as openStore } from '../support/stores.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const fixture = path.join(here, 'fixtures', 'crash-host.ts');

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

describe('a daemon killed with SIGKILL mid-run (SQLite file, a real child process)', () => {
  let dir: string;
  let model: ModelServer;
  const children: ChildProcess[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bots-crash-'));
    model = await startModelServer();
  });
  afterEach(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('restarts and continues the cut-off reply in the same message, told its partial text; the restarted host works', async () => {
    const file = path.join(dir, 'bots.db');
    const partial = 'Wrote launch-checklist.md; 3 of 7 items are checked so far and the rest';
    model.enqueue({ text: partial, stall: true });
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, file, model.baseUrl], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    await new Promise<void>((resolve, reject) => {
      const onData = () => out.includes('\n') && out.startsWith('READY') && resolve();
      child.stdout!.on('data', onData);
      child.once('exit', (code, signal) => reject(new Error(`child exited (${code ?? signal}) before READY: ${err}`)));
    });
    const ids = JSON.parse(out.slice('READY '.length).trim()) as { botId: string; taskId: string; messageId: string };
    child.kill('SIGKILL');
    expect(await exited(child)).toEqual({ code: null, signal: 'SIGKILL' });

    // The restarted daemon: same file, a new host; repair runs first thing in start().
    const store = await openStore({ sqliteFile: file });
    try {
      await applyMigrations(store.db, store.dialect, botsMigrations);
      const db = tablesView<BotsTables>(store.db);
      const before = await db.selectFrom('bots_tasks').selectAll().where('id', '=', ids.taskId).executeTakeFirstOrThrow();
      expect(before.status).toBe('working');
      const clock = new FakeClock(Date.now());
      const endpoint = { baseUrl: model.baseUrl, model: 'scripted-model', timeoutMs: 30_000 };
      const llm = createLlm({ models: { local: endpoint, agent: endpoint }, db: store.db, clock, ids: uuid });
      const approvals = new ApprovalStore({ db: store.db, clock, ids: uuid });
      const mcp = new McpManager({ servers: [], clock });
      const runner = new AgentRunner({ llm, mcp, approvals, clock, ids: uuid });
      const host = createBotsHost({
        coordinator: await createCoordinator({ store, clock, ids: uuid }),
        db,
        clock,
        ids: uuid,
        runner,
        approvals,
        emit: () => undefined,
        log: silentLogger,
        presence: () => true,
        config: parseBotsConfig({ next_job_delay_ms: 0 }),
      });
      // The continued run is told what the cut-off one had written.
      model.handle((req) => ({ text: JSON.stringify(req.body?.messages ?? []).includes('3 of 7 items') ? 'All 7 items are checked.' : 'not told' }));
      expect(await host.start()).toEqual({ tasks: 0, messages: 0, approvals: 0 });
      await until(async () => (await host.heartbeat.getTask(ids.taskId))?.status === 'done');
      expect(await host.heartbeat.getTask(ids.taskId)).toMatchObject({ status: 'done', interrupted: false, attempts: 0 });
      const msg = await db.selectFrom('bots_messages').selectAll().where('id', '=', ids.messageId).executeTakeFirstOrThrow();
      expect(msg).toMatchObject({ status: 'done', text: 'All 7 items are checked.' });
      const replies = await db.selectFrom('bots_messages').select('id').where('task_id', '=', ids.taskId).where('role', '=', 'bot').execute();
      expect(replies).toHaveLength(1);
      model.handle(undefined);

      // And the restarted host serves new work.
      model.enqueue({ text: 'Back online.' });
      const sent = await host.service.sendMessage({ bot_id: ids.botId, text: 'are you there?' });
      await until(async () => (await host.heartbeat.getTask(sent.dispatched[0]!.task_id))?.status === 'done');
      await host.stop();
    } finally {
      await store.close();
    }
  });
});

const mcpHolder = sharedMcpForFile();

/** `host:pid` of a process that existed and is gone. */
function deadOwner(): string {
  const r = spawnSync(process.execPath, ['-e', '']);
  return `${os.hostname()}:${r.pid}`;
}

describe.each(await testDialects())('restart repair on %s', (dialect) => {
  let h: BotsHarness;
  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value!, start: false });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('continues only dead processes’ cut-off work (told its text), expires their approvals and those past expiry', async () => {
    const tasks = new TaskStore({ db: h.db, clock: h.clock, ids: uuid });
    const threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
    const links = new ApprovalLinks(h.db);
    const bot = await h.host.service.createBot({ name: 'growth', tools: [] });
    const thread = await threads.direct(bot);
    const live = `${os.hostname()}:${process.ppid}`; // another process that is alive
    const make = async (owner: string | null, status: 'queued' | 'working', text: string) => {
      const t = await tasks.create({ botId: bot.id, threadId: thread.id, title: text, prompt: text, source: 'user', owner });
      const m = await threads.addMessage({
        threadId: thread.id,
        role: 'bot',
        botId: bot.id,
        taskId: t.id,
        text,
        status: status === 'working' ? 'streaming' : 'queued',
      });
      await tasks.update(t.id, { status, message_id: m.id, attempts: 2 });
      return { task: t.id, message: m.id };
    };
    const dead = await make(deadOwner(), 'working', 'half a sentence');
    const mine = await make(`${os.hostname()}:${process.pid}`, 'queued', '');
    const none = await make(null, 'working', 'x');
    const elsewhere = await make(live, 'working', 'still going');
    const remote = await make('another-host:42', 'working', 'far away');

    const approval = async (taskId: string, expiresAt: number | null) => {
      const a = await h.approvals.create({ runId: `run-${taskId}`, world: 'bots', tool: 'write_file', server: 'fs', arguments: {}, reason: 'r', expiresAt });
      await links.link(a, { botId: bot.id, threadId: thread.id, taskId, messageId: null });
      return a.id;
    };
    const ofDeadRun = await approval(dead.task, null);
    const pastExpiry = await approval(elsewhere.task, h.clock.now() - 1);
    const stillWaiting = await approval(elsewhere.task, h.clock.now() + 60_000);
    const answeredElsewhere = await approval(remote.task, null);
    await h.approvals.approve(answeredElsewhere);

    // Issue 17: `mine` was queued and never started: it is a durable job now and simply runs (never
    // "cut off"); `dead` and `none` were cut off mid-run: their jobs continue them (nothing marked).
    h.model.handle(() => ({ text: 'Continued.' }));
    expect(await h.host.start()).toEqual({ tasks: 0, messages: 0, approvals: 3 });
    expect(await h.host.heartbeat.getTask(mine.task)).not.toMatchObject({ error_kind: 'interrupted' });
    expect((await h.db.selectFrom('bots_messages').select('status').where('id', '=', mine.message).executeTakeFirstOrThrow()).status).not.toBe('error');

    for (const r of [dead, none]) {
      await until(async () => (await h.host.heartbeat.getTask(r.task))?.status === 'done');
      expect(await h.host.heartbeat.getTask(r.task)).toMatchObject({ status: 'done', interrupted: false, attempts: 2 });
      expect(await h.db.selectFrom('bots_messages').select(['status', 'text']).where('id', '=', r.message).executeTakeFirst()).toEqual({
        status: 'done',
        text: 'Continued.',
      });
    }
    // What the cut-off run had written was in the continued run's prompt.
    expect(h.model.chatRequests.some((q) => JSON.stringify(q.body?.messages ?? []).includes('half a sentence'))).toBe(true);
    for (const r of [elsewhere, remote]) {
      expect((await h.host.heartbeat.getTask(r.task))!.status).toBe('working');
      expect((await h.db.selectFrom('bots_messages').select('status').where('id', '=', r.message).executeTakeFirstOrThrow()).status).toBe('streaming');
    }
    const state = async (id: string) =>
      (await h.db.selectFrom('bots_approvals').select(['state', 'expired_at']).where('approval_id', '=', id).executeTakeFirstOrThrow()) as {
        state: string;
        expired_at: number | null;
      };
    expect(await state(ofDeadRun)).toEqual({ state: 'expired', expired_at: h.clock.now() });
    expect(await state(pastExpiry)).toEqual({ state: 'expired', expired_at: h.clock.now() });
    expect(await state(stillWaiting)).toEqual({ state: 'pending', expired_at: null });
    expect(await state(answeredElsewhere)).toMatchObject({ state: 'approved', expired_at: null });
    expect((await h.approvals.get(ofDeadRun))!.state).toBe('expired');
    expect(h.events.filter((e) => e.type === 'bots.repaired').map((e) => e.data)).toEqual([{ tasks: 0, messages: 0, approvals: 3 }]);
  });

  it('open tasks an older release left claimed by a process gone elsewhere, with no job, are repaired at start, once', async () => {
    const threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
    const bot = await h.host.service.createBot({ name: 'growth', tools: [] });
    const thread = await threads.direct(bot);
    const long = h.clock.now() - 10 * h.coordinator.leaseMs; // the old process's last write
    let seq = 1000;
    // Rows as a release before the coordinator wrote them: claimed by a process on another host
    // (so not known dead from here), its jobs in memory, gone with it.
    const legacy = async (id: string, owner: string, status: 'queued' | 'working', text: string) => {
      await h.db
        .insertInto('bots_messages')
        .values({
          id: `m-${id}`,
          thread_id: thread.id,
          seq: seq++,
          role: 'bot',
          bot_id: bot.id,
          task_id: id,
          text,
          status: status === 'working' ? 'streaming' : 'queued',
          error: null,
          interrupted: 0,
          heartbeat: 0,
          created_at: long,
          updated_at: long,
        })
        .execute();
      await h.db
        .insertInto('bots_tasks')
        .values({
          id,
          bot_id: bot.id,
          thread_id: thread.id,
          message_id: `m-${id}`,
          request_message_id: null,
          title: id,
          prompt: `do ${id}`,
          source: 'user',
          from_bot_id: null,
          routine_id: null,
          handoff_depth: 0,
          status,
          error_kind: null,
          error: null,
          checkpoint: null,
          interrupted: 0,
          attempts: 1,
          last_heartbeat_at: null,
          claim_token: null,
          claim_at: null,
          claim_by: null,
          owner,
          owner_seen_at: long,
          run_id: status === 'working' ? `run-${id}` : null,
          taken_over_from: null,
          review_note: null,
          version: 3,
          created_at: long,
          updated_at: long,
          started_at: status === 'working' ? long : null,
          finished_at: null,
        })
        .execute();
      return { task: id, message: `m-${id}` };
    };
    const working = await legacy('legacy-working', 'old-release-host:4242', 'working', 'the first half of the legacy answer');
    const queued = await legacy('legacy-queued', 'old-release-host:4242', 'queued', '');
    // A live worker's task of this release on another host: its job is active there; left to it.
    const held = await legacy('held-elsewhere', 'busy-host:7', 'working', 'going');
    const other = await h.newCoordinator();
    const heldJob = await other.send({ queue: BOTS_RUN_QUEUE, payload: {}, key: jobKey(held.task, held.message), group: 'another-bot' });
    expect((await other.fetch(BOTS_RUN_QUEUE)).map((j) => j.id)).toEqual([heldJob]);

    h.model.handle((req) => ({ text: JSON.stringify(req.body?.messages ?? []).includes('first half of the legacy answer') ? 'Continued.' : 'Answered.' }));
    expect(await h.host.start()).toEqual({ tasks: 0, messages: 0, approvals: 0 });
    for (const [r, text] of [
      [working, 'Continued.'],
      [queued, 'Answered.'],
    ] as const) {
      await until(async () => (await h.host.heartbeat.getTask(r.task))?.status === 'done');
      expect(await h.db.selectFrom('bots_messages').select(['status', 'text']).where('id', '=', r.message).executeTakeFirst()).toEqual({
        status: 'done',
        text,
      });
      expect(await h.db.selectFrom('bots_messages').select('id').where('task_id', '=', r.task).where('role', '=', 'bot').execute()).toHaveLength(1);
    }
    expect(h.model.chatRequests).toHaveLength(2);
    expect((await h.host.heartbeat.getTask(held.task))!.status).toBe('working');
    expect(await h.coordinator.getJob(heldJob)).toMatchObject({ state: 'active' });

    // Once: a later start (another host on the same database) finds nothing left to repair or run.
    const again = createBotsHost({
      coordinator: await h.newCoordinator(),
      db: h.db,
      clock: h.clock,
      ids: uuid,
      runner: h.runner,
      approvals: h.approvals,
      emit: () => undefined,
      log: silentLogger,
      presence: () => true,
      config: parseBotsConfig({ next_job_delay_ms: 0 }),
    });
    expect(await again.start()).toEqual({ tasks: 0, messages: 0, approvals: 0 });
    await again.runtime.pump();
    await again.stop();
    expect(h.model.chatRequests).toHaveLength(2);
    expect((await h.host.heartbeat.getTask(held.task))!.status).toBe('working');
  });

  it('a run cut off too often is not continued at restart: failed + interrupted with the one cut-off message, its job cancelled', async () => {
    const tasks = new TaskStore({ db: h.db, clock: h.clock, ids: uuid });
    const threads = new ThreadStore({ db: h.db, clock: h.clock, ids: uuid });
    const bot = await h.host.service.createBot({ name: 'growth', tools: [] });
    const thread = await threads.direct(bot);
    const owner = deadOwner();
    const t = await tasks.create({ botId: bot.id, threadId: thread.id, title: 'cut', prompt: 'cut', source: 'user', owner });
    const m = await threads.addMessage({ threadId: thread.id, role: 'bot', botId: bot.id, taskId: t.id, text: 'half of it', status: 'streaming' });
    await tasks.update(t.id, { status: 'working', message_id: m.id });
    // Its job survived the kill, and counted MAX_CUT_OFF_RUNS runs started already (each cut off).
    const jobId = await h.coordinator.send({ queue: BOTS_RUN_QUEUE, payload: {}, key: jobKey(t.id, m.id), group: bot.id });
    const table = dialect === 'postgres' ? 'coord_holds' : 'coord_jobs';
    const idColumn = dialect === 'postgres' ? 'job_id' : 'id';
    await h.store.db
      .updateTable(table)
      .set({ checkpoint: JSON.stringify({ runs: MAX_CUT_OFF_RUNS }) })
      .where(idColumn, '=', jobId)
      .execute();

    expect(await h.host.start()).toEqual({ tasks: 1, messages: 0, approvals: 0 });
    const error = cutOffTooOftenError(MAX_CUT_OFF_RUNS, owner);
    expect(error).toMatch(new RegExp(`cut off ${MAX_CUT_OFF_RUNS} times.*heartbeat to resume`));
    expect(await h.host.heartbeat.getTask(t.id)).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'interrupted', error });
    expect(await h.db.selectFrom('bots_messages').select(['status', 'interrupted', 'error', 'text']).where('id', '=', m.id).executeTakeFirst()).toEqual({
      status: 'error',
      interrupted: 1,
      error,
      text: 'half of it',
    });
    expect((await h.coordinator.getJob(jobId))!.state).toBe('cancelled');
    expect(h.model.chatRequests).toHaveLength(0);
  });
});
