/**
 * Restart repair (issue 11 §5): a real crash (a child process on a SQLite file, killed with
 * SIGKILL mid-run) and the repair rules on both dialects, including rows of other processes.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentRunner, ApprovalStore, McpManager } from '../../src/agent/index.js';
import { ApprovalLinks } from '../../src/bots/approval-links.js';
import { botsMigrations, createBotsHost, parseBotsConfig, INTERRUPTED_ERROR, type BotsTables } from '../../src/bots/index.js';
import { TaskStore } from '../../src/bots/task-store.js';
import { ThreadStore } from '../../src/bots/thread-store.js';
import { FakeClock, silentLogger, uuid } from '../../src/core/index.js';
import { createLlm } from '../../src/llm/index.js';
import { applyMigrations, tablesView } from '../../src/store/index.js';
import { openProductStore as openStore } from '../support/stores.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, sharedMcp, until, type BotsHarness } from './harness.js';

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

  it('restarts with the task failed + interrupted and the partial text kept; the restarted host works', async () => {
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
      expect(await host.start()).toEqual({ tasks: 1, messages: 1, approvals: 0 });

      const task = (await host.heartbeat.getTask(ids.taskId))!;
      expect(task).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'interrupted', error: INTERRUPTED_ERROR, attempts: 0 });
      const msg = await db.selectFrom('bots_messages').selectAll().where('id', '=', ids.messageId).executeTakeFirstOrThrow();
      expect(msg).toMatchObject({ status: 'error', interrupted: 1 });
      expect(msg.text.length).toBeGreaterThan(0);
      expect(partial.startsWith(msg.text)).toBe(true); // the text streamed before the kill, kept
      // The heartbeat will find it (an indexed query) and may claim it.
      expect((await host.heartbeat.openWork()).map((t) => t.id)).toEqual([ids.taskId]);
      expect(await host.heartbeat.claimTask(task.id, { version: task.version, token: 't', by: 'heartbeat' })).toMatchObject({ attempts: 1 });

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

const mcpHolder: { value?: Awaited<ReturnType<typeof sharedMcp>> } = {};
beforeAll(async () => {
  mcpHolder.value = await sharedMcp();
});
afterAll(async () => {
  await mcpHolder.value?.close();
});

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

  it('marks only dead processes’ work interrupted, keeps text, expires their approvals and those past expiry', async () => {
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

    expect(await h.host.start()).toEqual({ tasks: 3, messages: 3, approvals: 3 });

    for (const r of [dead, mine, none]) {
      expect(await h.host.heartbeat.getTask(r.task)).toMatchObject({ status: 'failed', interrupted: true, error_kind: 'interrupted', attempts: 2 });
      expect(await h.db.selectFrom('bots_messages').select(['status', 'interrupted']).where('id', '=', r.message).executeTakeFirst()).toEqual({
        status: 'error',
        interrupted: 1,
      });
    }
    expect((await h.db.selectFrom('bots_messages').select('text').where('id', '=', dead.message).executeTakeFirstOrThrow()).text).toBe('half a sentence');
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
    expect(h.events.filter((e) => e.type === 'bots.repaired').map((e) => e.data)).toEqual([{ tasks: 3, messages: 3, approvals: 3 }]);
  });
});
