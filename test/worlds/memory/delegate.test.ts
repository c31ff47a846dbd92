/**
 * Seed 4's delegation, wired by the real app (`createApp` with the memory module and the bots
 * host) against the scripted model server: the decision agent sees the changed documents'
 * content (fenced, bounded) and the bots, proposes handing a to-do to a bot with `delegate`;
 * nothing reaches the bot until a person accepts it over RPC, then it is that bot's new task in
 * its direct thread. Answering twice is a conflict; declining sends nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app/app.js';
import { botsModule } from '../../../src/bots/index.js';
import { FakeClock, silentLogger, type RpcResponse } from '../../../src/core/index.js';
import type { Bot, ThreadView } from '../../../src/protocol/bots.js';
import type { MemoryDelegation } from '../../../src/protocol/index.js';
import { DECISION_SYSTEM, DELEGATE_TOOL_NAME, delegationText, memoryModule } from '../../../src/worlds/memory/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../../support/model-server.js';

const MODEL = 'scripted';
const FACT = 'ACME suspends hosting on Monday unless invoice 2291 (1,240 EUR) is paid by Friday.';

function text(req: RecordedRequest, role: string): string {
  return (req.body?.messages ?? [])
    .filter((m) => m.role === role)
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
}

describe('memory world delegation through the bots host', () => {
  let workspace: string;
  let server: ModelServer;
  let app: App;
  const isReview = (r: RecordedRequest) => text(r, 'system').includes(DECISION_SYSTEM.split('\n')[0]!);
  const botRequests = () => server.chatRequests.filter((r) => !isReview(r));

  beforeEach(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-delegate-'));
    server = await startModelServer({ models: [MODEL] });
    server.handle((req) => {
      if (!isReview(req)) return { text: 'Paying it now.' };
      const tools = text(req, 'tool');
      const added = /Added to-do (\S+?)\./.exec(tools);
      if (!added) return { toolCalls: [{ name: 'update_task', arguments: { title: 'Pay ACME invoice 2291', note: 'by Friday' } }] };
      if (!tools.includes('Proposed:'))
        return {
          toolCalls: [{ name: 'delegate', arguments: { todo_id: added[1], bot: '@ops', instruction: 'Pay invoice 2291 to ACME before Friday and confirm.' } }],
        };
      return { text: 'Added a to-do and proposed it for @ops.' };
    });
    app = await createApp({
      workspace,
      modules: [memoryModule, botsModule],
      clock: new FakeClock(),
      log: silentLogger,
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: MODEL,
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: MODEL,
      },
    });
  });

  afterEach(async () => {
    await app.close();
    await server.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  const rpc = async (method: string, params: Record<string, unknown> = {}) =>
    (await app.rpc.handle({ jsonrpc: '2.0', id: 1, method, params })) as RpcResponse & { result?: unknown; error?: { message: string; data?: unknown } };
  const call = async <T>(method: string, params: Record<string, unknown> = {}): Promise<T> => {
    const res = await rpc(method, params);
    if (res.error) throw new Error(`${method}: ${res.error.message}`);
    return res.result as T;
  };

  async function proposed(): Promise<{ bot: Bot; delegation: MemoryDelegation }> {
    const bot = await call<Bot>('bots.create', { name: 'ops', label: 'Ops', description: 'Pays vendors and chases invoices.' });
    expect((await app.registry.tickOnce('memory'))[0]).toMatchObject({ kind: 'quiet', message: 'baseline created' });
    await call('memory.store_document', { namespace: 'mail', external_id: 'inv', title: 'Invoice 2291 overdue', body: FACT });
    const [outcome] = await app.registry.tickOnce('memory');
    expect(outcome).toMatchObject({ kind: 'committed', message: '1 change reviewed: 1 to-do, 1 delegation waiting for you' });
    const [delegation] = await call<MemoryDelegation[]>('memory.delegations_list', { status: 'pending' });
    return { bot, delegation: delegation! };
  }

  it('the agent sees the changed content and the bots; its delegation waits for the person, then becomes the bot’s task', async () => {
    const { bot, delegation } = await proposed();
    // The prompt: the changed document's content, not only its title, fenced; the bots, fenced.
    const first = server.chatRequests.find(isReview)!;
    const user = text(first, 'user');
    expect(user).toMatch(/<untrusted-data label="memory_changes">\n.*ACME suspends hosting on Monday.*\n<\/untrusted-data>/);
    expect(user).toMatch(/<untrusted-data label="bots">\n.*"name\\":\\"ops\\".*Pays vendors.*\n<\/untrusted-data>/);
    expect((first.body?.tools ?? []).map((t) => t.function.name)).toContain(DELEGATE_TOOL_NAME);

    const [todo] = await call<{ id: string; title: string }[]>('memory.todos_list', { status: 'open' });
    expect(delegation).toMatchObject({
      todo_id: todo!.id,
      todo_title: 'Pay ACME invoice 2291',
      bot_id: bot.id,
      bot_name: 'ops',
      instruction: 'Pay invoice 2291 to ACME before Friday and confirm.',
      status: 'pending',
      task_id: null,
    });
    // Isolation: nothing reached the bot by itself.
    expect(botRequests()).toHaveLength(0);

    const accepted = await call<MemoryDelegation>('memory.delegation_accept', { id: delegation.id });
    expect(accepted).toMatchObject({ status: 'accepted', task_id: expect.any(String), thread_id: expect.any(String), error: null });
    const view = await call<ThreadView>('bots.thread', { thread_id: accepted.thread_id });
    expect(view.messages.find((m) => m.role === 'user')?.text).toBe(delegationText(delegation));
    expect(view.tasks.map((t) => t.id)).toContain(accepted.task_id);

    // Answered once: a second answer is a conflict and changes nothing.
    const again = await rpc('memory.delegation_accept', { id: delegation.id });
    expect(again.error?.message).toMatch(/accepted, not pending/);
    expect((await call<MemoryDelegation[]>('memory.delegations_list', {}))[0]).toMatchObject({ status: 'accepted', task_id: accepted.task_id });
  });

  it('declining sends nothing; an unknown id is not_found', async () => {
    const { delegation } = await proposed();
    expect(await call<MemoryDelegation>('memory.delegation_decline', { id: delegation.id })).toMatchObject({ status: 'declined', task_id: null });
    expect(botRequests()).toHaveLength(0);
    expect((await rpc('memory.delegation_accept', { id: delegation.id })).error?.message).toMatch(/declined, not pending/);
    expect((await rpc('memory.delegation_accept', { id: 'nope' })).error?.message).toMatch(/No delegation "nope"/);
  });
});
