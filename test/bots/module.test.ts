/**
 * The bots module through the app's front door (createApp with the module list), on both
 * dialects: `start()` repairs before anything else; `BotsHeartbeatKey` reaches a module that
 * needs it; an unattended approval waits its expiry, attached or not; `MEMORY:` and
 * `TEAM_MEMORY:` lines become memory documents (the same ids `noteDocument` gives) when a
 * memory store is provided; a bot's tools must be configured MCP servers; run caps come from
 * `[worlds.bots]`, else from the app's agent runner.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { BotsHeartbeatKey, type BotsHeartbeatApi } from '../../src/bots/index.js';
import { botsModule } from '../../src/bots/module.js';
import { FakeClock, silentLogger, uuid } from '../../src/core/index.js';
import { defineModule } from '../../src/engine/index.js';
import { MemoryStore, MemoryStoreKey, memoryMigrations, noteDocument, type MemoryTables } from '../../src/memory/index.js';
import { defineContract } from '../../src/protocol/contract.js';
import type { Bot, BotWithStatus, SendResult, Task, ThreadView } from '../../src/protocol/bots.js';
import { tablesView, type DialectName } from '../../src/store/index.js';
import { filesystemServer } from '../support/mcp-servers.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';
import { until } from './harness.js';

const emptyContract = defineContract<Record<string, never>>()({ methods: {}, events: [] });

/** A module that needs the bots host by key, as the heartbeat world will. */
function heartbeatProbe(seen: { api?: BotsHeartbeatApi }) {
  return defineModule({
    kind: 'probe',
    host: true,
    description: 'test: needs BotsHeartbeatKey',
    config: z.strictObject({}),
    contract: emptyContract,
    needs: [BotsHeartbeatKey],
    create(ctx) {
      seen.api = ctx.services.get(BotsHeartbeatKey);
      return { handlers: {} };
    },
  });
}

/** The memory store as the memory module provides it (by `MemoryStoreKey`), on the test's store. */
function memoryProvider(dialect: DialectName, holder: { store?: MemoryStore }) {
  return defineModule({
    kind: 'memory',
    host: true,
    description: 'test: provides the memory store',
    config: z.strictObject({}),
    tables: { names: [], migrations: memoryMigrations },
    contract: emptyContract,
    provides: [MemoryStoreKey],
    create(ctx) {
      holder.store = new MemoryStore({ db: tablesView<MemoryTables>(ctx.db as never), dialect, clock: ctx.clock, ids: ctx.ids });
      return { handlers: {}, provides: [{ key: MemoryStoreKey, value: holder.store }] };
    },
  });
}

describe.each(await testDialects())('bots module on %s', (dialect) => {
  let store: TestStore;
  let app: App | undefined;
  let model: ModelServer;

  async function open(opts: {
    config?: (workspace: string) => string;
    clock?: FakeClock;
    seen?: { api?: BotsHeartbeatApi };
    memory?: { store?: MemoryStore };
  }) {
    store = await openTestStore(dialect);
    model = await startModelServer();
    if (opts.config !== undefined) writeFileSync(path.join(store.workspace, 'subconscious.toml'), opts.config(store.workspace));
    const modules = [...(opts.memory ? [memoryProvider(dialect, opts.memory)] : []), botsModule, ...(opts.seen ? [heartbeatProbe(opts.seen)] : [])];
    app = await createApp({
      workspace: store.workspace,
      modules,
      log: silentLogger,
      ids: uuid,
      ...(opts.clock ? { clock: opts.clock } : {}),
      env: { SUBCONSCIOUS_AGENT_BASE_URL: model.baseUrl, SUBCONSCIOUS_LOCAL_BASE_URL: model.baseUrl, SUBCONSCIOUS_AGENT_MODEL: 'scripted-model' },
      // The app closes the store it is given; the test store is disposed after.
      store: { ...store, close: async () => undefined },
    });
    return app;
  }
  const call = <T>(method: string, params: unknown = {}) => app!.rpc.call(method, params) as Promise<T>;
  const threadOf = async (botId: string) => {
    const list = await call<{ id: string; kind: string }[]>('bots.threads_list', { bot_id: botId });
    return call<ThreadView>('bots.thread', { thread_id: list.find((t) => t.kind === 'direct')!.id });
  };

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await model?.close();
    await store?.dispose();
  });

  it('start() repairs first: a task left working by no live process is continued by its job (issue 17); the heartbeat gets the host by key', async () => {
    const seen: { api?: BotsHeartbeatApi } = {};
    await open({ seen });
    expect(seen.api).toBeDefined();
    const bot = await call<Bot>('bots.create', { name: 'ops' });
    model.enqueue({ text: 'Checked.' });
    const sent = await call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Check the queue' });
    await until(async () => (await seen.api!.getTask(sent.dispatched[0]!.task_id))?.status === 'done');
    // A crash leaves no live run: let this one end wholly (its job completed, the bot idle) first.
    // The task is done before its job is: a repair run while the bot is still busy leaves the bot's
    // rows alone (they are its live work), and nothing would continue the task below.
    await until(async () => seen.api!.isIdle(bot.id));
    // As a crash would leave it: working, its message streaming, owned by no live process.
    await store.db.updateTable('bots_tasks').set({ status: 'working', owner: null }).where('id', '=', sent.dispatched[0]!.task_id).execute();
    await store.db.updateTable('bots_messages').set({ status: 'streaming' }).where('id', '=', sent.dispatched[0]!.message_id).execute();
    // Its job had completed (a hand-made row, or an old release's): a new one continues it, told its text.
    model.handle((req) => ({ text: JSON.stringify(req.body?.messages ?? []).includes('Checked.') ? 'Checked again: empty.' : 'not told' }));
    await app!.start();
    await until(
      async () => (await seen.api!.getTask(sent.dispatched[0]!.task_id))?.status === 'done',
      async () => ({ task: await seen.api!.getTask(sent.dispatched[0]!.task_id), idle: seen.api!.isIdle(bot.id), chatRequests: model.chatRequests.length }),
    );
    expect(await seen.api!.getTask(sent.dispatched[0]!.task_id)).toMatchObject({ status: 'done', interrupted: false });
    const reply = (await threadOf(bot.id)).messages.find((m) => m.id === sent.dispatched[0]!.message_id)!;
    expect(reply).toMatchObject({ status: 'done', interrupted: false, text: 'Checked again: empty.' });
    await until(async () => seen.api!.isIdle(bot.id));
  });

  it('an unattended approval waits its 10 minutes whether or not a page or client is attached (seed 2 §7.1)', async () => {
    const seen: { api?: BotsHeartbeatApi } = {};
    await open({ seen, config: mcpConfig });
    const bot = await call<Bot>('bots.create', { name: 'clerk', tools: ['fs'] });
    const thread = await seen.api!.directThread(bot.id);
    const write = () => ({ toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(store.workspace, 'x.txt'), content: 'x' } }] });

    // Nobody attached: the approval is pending with its expiry, the run waits (no fast failure).
    model.enqueue(write(), { text: 'Wrote it.' });
    const alone = await seen.api!.dispatchToBot(bot.id, thread.id, 'File the report', { source: 'external' });
    await until(async () => (await threadOf(bot.id)).approvals.some((a) => a.task_id === alone.taskId && a.state === 'pending'));
    const [approval] = (await threadOf(bot.id)).approvals;
    expect(approval).toMatchObject({ tool: 'write_file', state: 'pending' });
    expect(Number(approval!.expires_at)).toBeGreaterThan(Date.now() + 9 * 60_000); // the app's real clock: about 10 minutes from now
    expect((await seen.api!.getTask(alone.taskId))?.status).toBe('working');
    await call('bots.stop_bot', { bot_id: bot.id });
  });

  it('MEMORY: and TEAM_MEMORY: lines become memory documents in the bot’s and the team’s namespaces', async () => {
    const memory: { store?: MemoryStore } = {};
    await open({ memory });
    const bot = await call<Bot>('bots.create', { name: 'scout' });
    model.enqueue({ text: 'Noted.\nMEMORY: the user prefers short answers\nTEAM_MEMORY: releases go out on Fridays\nMEMORY: the user prefers short answers' });
    const sent = await call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Remember: short answers. We release on Fridays.' });
    await until(async () => (await threadOf(bot.id)).tasks.some((t: Task) => t.id === sent.dispatched[0]!.task_id && t.status === 'done'));
    await until(async () => (await memory.store!.listDocuments({ namespace: 'bots:team' })).total === 1);
    const own = await memory.store!.listDocuments({ namespace: 'bot:scout' });
    expect(own.total).toBe(1); // the same line twice is one document
    expect(own.documents[0]).toMatchObject({
      title: 'the user prefers short answers',
      external_id: noteDocument({ namespace: 'bot:scout', text: 'the user prefers short answers' }).external_id,
    });
    const team = await memory.store!.listDocuments({ namespace: 'bots:team' });
    expect(team.documents[0]).toMatchObject({ title: 'releases go out on Fridays', source_kind: 'note' });
    // And the notes are kept by the host as well.
    expect((await store.db.selectFrom('bots_notes').select('kind').execute()).map((r: { kind: string }) => r.kind).sort()).toEqual([
      'memory',
      'memory',
      'team_memory',
    ]);
  });

  it('a bot’s tools must be configured MCP servers (the refusal names the field and the servers there are)', async () => {
    await open({ config: mcpConfig });
    expect((await call<Bot>('bots.create', { name: 'clerk', tools: ['fs'] })).tools).toEqual(['fs']);
    const res = await app!.rpc.handle({ jsonrpc: '2.0', id: 1, method: 'bots.create', params: { name: 'mailer', tools: ['mail'] } });
    expect(res).toMatchObject({
      error: {
        code: -32602,
        message: 'tools: "mail" is not a configured MCP server',
        data: { code: 'invalid_params', field: 'tools', hint: 'Configured servers: fs.' },
      },
    });
    expect((await call<BotWithStatus[]>('bots.list')).map((b) => b.name)).toEqual(['clerk']);
  });

  it.each([
    ['[worlds.bots] run_cap_minutes = 1', 'run_cap_minutes = 1', 60_000, '1 minute'],
    ["the agent runner's cap ([agent] run_cap_minutes = 3) when [worlds.bots] says nothing", '', 3 * 60_000, '3 minutes'],
  ])('a run is capped by %s', async (_what, botsKey, capMs, shown) => {
    const clock = new FakeClock();
    await open({ clock, config: () => `[agent]\nrun_cap_minutes = 3\n\n[worlds.bots]\nnext_job_delay_ms = 0\n${botsKey}\n` });
    const bot = await call<Bot>('bots.create', { name: 'slow' });
    model.handle(() => ({ hang: true }));
    const sent = await call<SendResult>('bots.send_message', { bot_id: bot.id, text: 'Take your time' });
    const taskId = sent.dispatched[0]!.task_id;
    await until(() => model.chatRequests.length === 1);
    await clock.advance(capMs - 1000);
    expect((await threadOf(bot.id)).tasks.find((t) => t.id === taskId)?.status).toBe('working');
    await clock.advance(1000);
    await until(async () => (await threadOf(bot.id)).tasks.find((t) => t.id === taskId)?.status === 'failed');
    const task = (await threadOf(bot.id)).tasks.find((t) => t.id === taskId)!;
    expect(task.error_kind).toBe('timeout');
    expect(task.error).toContain(`(${shown})`);
    model.handle(undefined);
  });

  function mcpConfig(workspace: string): string {
    const fs = filesystemServer(workspace);
    return ['[[mcp.servers]]', 'name = "fs"', `command = ${JSON.stringify(fs.command)}`, `args = ${JSON.stringify(fs.args)}`, ''].join('\n');
  }
});
