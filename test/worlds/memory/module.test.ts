/**
 * The memory and conscious modules wired by the real app (`createApp`), on a workspace whose
 * `[[worlds.memory.sources]]` is a folder of notes and an email, against the scripted model
 * server:
 *
 * - what `subconscious status` and a one-shot `subconscious tick` do (no module `start()`): status
 *   touches no folder; the tick's observe runs the sources' first sync, so the memory world's
 *   baseline and the conscious loop's run both see the folder;
 * - what the daemon does (`start()`): the sources sync at start, both worlds wait their initial
 *   delay, and a change pushed over RPC reaches the memory world's decision agent, whose
 *   `notify_user` becomes a notification on `subconscious:user` and an event;
 * - `close()` stops the sources.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app/app.js';
import { FakeClock, silentLogger, type RpcResponse } from '../../../src/core/index.js';
import { DECISION_SYSTEM, memoryModule } from '../../../src/worlds/memory/index.js';
import { consciousModule } from '../../../src/worlds/conscious/index.js';
import type { Actionable, MemoryNamespace, MemoryNotification } from '../../../src/protocol/index.js';
import { startModelServer, type ModelServer, type RecordedRequest } from '../../support/model-server.js';

const FIXTURES = fileURLToPath(new URL('../../memory/fixtures/inbox', import.meta.url));
const MODEL = 'scripted';

function text(req: RecordedRequest, role: string): string {
  return (req.body?.messages ?? [])
    .filter((m) => m.role === role)
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
}

describe('memory and conscious modules in the app', () => {
  let workspace: string;
  let server: ModelServer;
  let app: App | undefined;
  const extractions = () => server.chatRequests.filter((r) => text(r, 'user').includes('Recalled memory from'));
  const reviews = () => server.chatRequests.filter((r) => text(r, 'system').includes(DECISION_SYSTEM.split('\n')[0]!));

  beforeEach(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-memory-module-'));
    cpSync(FIXTURES, path.join(workspace, 'inbox'), { recursive: true });
    writeFileSync(
      path.join(workspace, 'subconscious.toml'),
      ['[[worlds.memory.sources]]', 'kind = "folder"', 'path = "inbox"', 'namespace = "inbox"', 'label = "Inbox"', 'watch = false', ''].join('\n'),
    );
    server = await startModelServer({ models: [MODEL] });
    server.handle((req) => {
      if (text(req, 'user').includes('Recalled memory from')) {
        return {
          json: [
            {
              title: 'Pay ACME invoice 2291',
              description: 'Invoice 2291 is 30 days overdue; hosting is suspended Monday.',
              source: 'gmail',
              priority: 'critical',
              actionable: true,
              requires_confirmation: true,
              has_complex_action: false,
              source_label: 'Inbox',
            },
          ],
        };
      }
      if (text(req, 'system').includes(DECISION_SYSTEM.split('\n')[0]!)) {
        // First step: tell the user; second (after the tool result): close.
        if ((req.body?.messages ?? []).some((m) => m.role === 'tool')) return { text: 'Told the user about the contract renewal.' };
        return {
          toolCalls: [{ name: 'notify_user', arguments: { message: 'The Initech contract renews on Monday: decide by Friday.', priority: 'important' } }],
        };
      }
      return { status: 400, message: 'unscripted request' };
    });
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await server.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  const open = (clock = new FakeClock()) =>
    createApp({
      workspace,
      modules: [memoryModule, consciousModule],
      clock,
      log: silentLogger,
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_LOCAL_MODEL: MODEL,
        SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
        SUBCONSCIOUS_AGENT_MODEL: MODEL,
      },
    });
  const call = async <T>(method: string, params: Record<string, unknown> = {}): Promise<T> => {
    const res = (await app!.rpc.handle({ jsonrpc: '2.0', id: 1, method, params })) as RpcResponse;
    if ('error' in res && res.error) throw new Error(`${method}: ${res.error.message}`);
    return (res as { result: T }).result;
  };

  it('status reads no folder; a one-shot tick syncs the sources first, then both worlds see them', async () => {
    app = await open();
    expect(await call<MemoryNamespace[]>('memory.namespaces')).toEqual([]); // nothing started, nothing synced

    const outcomes = await app.registry.tickOnce('all');
    expect(outcomes.map((o) => [o.world, o.kind, o.message])).toEqual([
      ['memory', 'quiet', 'baseline created'],
      ['conscious', 'committed', '1 actionable (1 new)'],
    ]);
    // The conscious loop's actionables are memory documents too (their own `conscious` namespace).
    const ns = (await call<MemoryNamespace[]>('memory.namespaces')).find((n) => n.namespace === 'inbox');
    expect(ns).toMatchObject({ namespace: 'inbox', label: 'Inbox', kind: 'folder', documents: 4, last_error: null });
    expect(ns!.last_sync_at).not.toBeNull();
    // The conscious loop read the email and the notes, fenced.
    const prompt = text(extractions()[0]!, 'user');
    expect(prompt).toContain('Invoice 2291 is 30 days overdue');
    expect(prompt).toContain('From: ACME Billing <billing@acme.example>');
    expect(prompt).toContain('Team standup');
    const [item] = await call<Actionable[]>('conscious.list');
    expect(item).toMatchObject({ title: 'Pay ACME invoice 2291', source: 'email', priority: 'critical', source_label: 'Inbox', state: 'new' });
    // The memory world's baseline holds the first sync: nothing to review.
    // Since the baseline: only the conscious loop's actionable, a memory document of its own namespace.
    expect(await call('memory.diff')).toMatchObject({ totals: { added: 1, modified: 0, removed: 0 } });
    expect(reviews()).toHaveLength(0);

    // A second tick: the memory world reviews the conscious loop's new actionable (a memory
    // document since its baseline); the conscious loop is quiet (its own writes never wake it).
    expect((await app.registry.tickOnce('all')).map((o) => o.kind)).toEqual(['committed', 'quiet']);
    // A third tick: nothing changed, both quiet, no model call.
    const calls = server.chatRequests.length;
    expect((await app.registry.tickOnce('all')).map((o) => o.kind)).toEqual(['quiet', 'quiet']);
    expect(server.chatRequests).toHaveLength(calls);
  });

  it('the daemon: sources sync at start, both worlds wait their initial delay, a pushed change reaches the decision agent', async () => {
    const clock = new FakeClock();
    app = await open(clock);
    const synced = app.events.next('memory.synced', (d) => d.namespace === 'inbox');
    await app.start();
    await synced;
    expect((await call<MemoryNamespace[]>('memory.namespaces'))[0]).toMatchObject({ documents: 4 });
    expect(await call('memory.sources')).toEqual([
      expect.objectContaining({
        namespace: 'inbox',
        path: path.join(workspace, 'inbox'),
        watching: false,
        last_sync: expect.objectContaining({ files: 4, added: 4 }),
        skipped_total: 0,
      }),
    ]);

    // Seed 3's 60 s for sources to settle: no tick before it, both worlds right after it.
    const ticks = () => call<{ instances: { world: string; total_ticks: number }[] }>('subconscious.status');
    await clock.advance(59_000);
    expect((await ticks()).instances.map((i) => [i.world, i.total_ticks])).toEqual([
      ['memory', 0],
      ['conscious', 0],
    ]);
    const baseline = app.events.next('tick.finished', (d) => d.world === 'memory');
    const digested = app.events.next('conscious.completed');
    await clock.advance(1_000);
    expect((await baseline).data).toMatchObject({ outcome: 'quiet', message: 'baseline created' });
    expect((await digested).data).toMatchObject({ count: 1, new: 1 });

    // A host pushes a document over RPC; Run now for the memory world: the agent notifies.
    await call('memory.store_document', {
      namespace: 'crm',
      external_id: 'deal-7',
      title: 'Initech contract renewal',
      body: 'The Initech contract renews automatically on Monday unless cancelled by Friday.',
      namespace_label: 'CRM',
    });
    // Added since the baseline: the pushed document and the conscious loop's actionable (a memory document).
    expect(await call('memory.diff')).toMatchObject({ totals: { added: 2 }, text: expect.stringContaining('### CRM (rpc)\n[added] Initech contract renewal') });
    const notified = app.events.next('memory.notification');
    await call('subconscious.trigger', { world: 'memory' });
    expect((await notified).data).toMatchObject({ thread: 'subconscious:user', priority: 'important', message: expect.stringContaining('Initech') });
    const [note] = await call<MemoryNotification[]>('memory.notifications_list');
    expect(note).toMatchObject({ thread: 'subconscious:user', message: 'The Initech contract renews on Monday: decide by Friday.' });
    // The review's prompt carried the change, fenced.
    expect(text(reviews()[0]!, 'user')).toMatch(/<untrusted-data label="memory_diff">[\s\S]*Initech contract renewal/);
  });
});
