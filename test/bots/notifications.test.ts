/**
 * The memory world's notify_user notifications reach the Bots tab: the bots host delivers each
 * one into the Subconscious thread (`subconscious:user`, kind system, created on the first one)
 * as a system message — once, whether it is woken by this process's commit, finds it at start
 * after a restart, or is asked again. On the real memory world's table (both dialects).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBotsHost, parseBotsConfig } from '../../src/bots/index.js';
import { silentLogger, uuid } from '../../src/core/index.js';
import { SUBCONSCIOUS_THREAD_ID, type SendResult, type ThreadSummary, type ThreadView } from '../../src/protocol/bots.js';
import { applyMigrations, tablesView } from '../../src/store/index.js';
import { notificationFeed, OutputStore, type NotificationFeed } from '../../src/worlds/memory/index.js';
import { memoryWorldMigrations } from '../../src/worlds/memory/migrations.js';
import type { MemoryWorldTables } from '../../src/worlds/memory/tables.js';
import { testDialects } from '../support/stores.js';
import { createBotsHarness, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

describe.each(await testDialects())('memory notifications in the Subconscious thread on %s', (dialect) => {
  let h: BotsHarness;
  let outputs: OutputStore;
  let feed: NotificationFeed;

  /** What the memory world's commit does: insert the notification, then emit (which wakes the feed). */
  async function notify(id: string, message: string, priority: 'normal' | 'important' = 'normal'): Promise<void> {
    await outputs.apply([{ op: 'notify', id, message, priority }], 'tick-1', h.clock.now());
    feed.notified();
  }

  const thread = () => h.call<ThreadView>('bots.thread', { thread_id: SUBCONSCIOUS_THREAD_ID });

  beforeEach(async () => {
    h = await createBotsHarness({ dialect, mcp: mcpHolder.value!, start: false });
    await applyMigrations(h.store.db, h.store.dialect, memoryWorldMigrations);
    outputs = new OutputStore(tablesView<MemoryWorldTables>(h.store.db));
    feed = notificationFeed(outputs);
  });
  afterEach(async () => {
    await h.dispose();
  });

  async function host(started: BotsHarness) {
    return createBotsHost({
      coordinator: await started.newCoordinator(),
      db: started.db,
      clock: started.clock,
      ids: uuid,
      runner: started.runner,
      approvals: started.approvals,
      emit: (type, data) => started.events.push({ type, data } as never),
      log: silentLogger,
      presence: () => true,
      config: parseBotsConfig({ next_job_delay_ms: 0, timezone: 'UTC' }),
      notifications: () => feed,
    });
  }

  it('delivers a notification once, as a system message, and the thread is listed with it unread', async () => {
    const a = await host(h);
    await a.start();
    expect(await h.call<ThreadSummary[]>('bots.threads_list')).toEqual([]);

    await notify('n1', 'The lease renewal is due Friday.', 'important');
    await a.deliverNotifications();
    await a.deliverNotifications();

    const view = await thread();
    expect(view.thread).toMatchObject({ id: SUBCONSCIOUS_THREAD_ID, kind: 'system', name: 'Subconscious', bot_ids: [] });
    expect(view.messages.map((m) => [m.id, m.role, m.text])).toEqual([['memory-notification:n1', 'system', 'Important: The lease renewal is due Friday.']]);
    const [summary] = await h.call<ThreadSummary[]>('bots.threads_list');
    expect(summary).toMatchObject({ id: SUBCONSCIOUS_THREAD_ID, unread: 1 });
    expect(h.events.filter((e) => e.type === 'bots.thread_changed' && e.data.thread_id === SUBCONSCIOUS_THREAD_ID)).toHaveLength(1);
    expect(h.events.filter((e) => e.type === 'bots.message_changed' && e.data.message.thread_id === SUBCONSCIOUS_THREAD_ID)).toHaveLength(1);

    // A person can read it, not write to it.
    await expect(h.call<SendResult>('bots.send_message', { thread_id: SUBCONSCIOUS_THREAD_ID, text: 'thanks' })).rejects.toThrow(/takes no messages/);
    await h.call('bots.mark_read', { thread_id: SUBCONSCIOUS_THREAD_ID });
    expect((await h.call<ThreadSummary[]>('bots.threads_list'))[0]).toMatchObject({ unread: 0 });
    await a.stop();
  });

  it('after a restart, delivers what was committed meanwhile and nothing twice', async () => {
    const a = await host(h);
    await a.start();
    await notify('n1', 'first');
    await a.deliverNotifications();
    await a.stop();

    // Committed while no host ran (a one-shot tick, a stopped daemon).
    h.clock.advance(1000);
    await notify('n2', 'second');
    h.clock.advance(1000);
    await notify('n3', 'third');

    const b = await host(h);
    await b.start();
    await b.deliverNotifications();
    expect((await thread()).messages.map((m) => m.text)).toEqual(['first', 'second', 'third']);
    expect((await thread()).messages.map((m) => m.seq)).toEqual([1, 2, 3]);
    await b.stop();

    // Another restart finds nothing new.
    const c = await host(h);
    await c.start();
    expect(await c.deliverNotifications()).toBe(0);
    expect((await thread()).messages).toHaveLength(3);
    await c.stop();
  });

  it('is woken by the commit itself (no poll needed)', async () => {
    const a = await host(h);
    await a.start();
    await notify('n9', 'woken');
    await until(() => h.events.some((e) => e.type === 'bots.message_changed' && e.data.message.id === 'memory-notification:n9'));
    expect((await thread()).messages.map((m) => m.text)).toEqual(['woken']);
    await a.stop();
  });
});
