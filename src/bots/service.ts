/**
 * What the `bots.*` methods do (issue 11 §6): bots, threads, messages with @mentions, groups,
 * stop/cancel/dismiss, approvals, routines, the snapshot. Every input is checked before
 * anything is written, so a refused call changes nothing; every change is an event.
 */
import type { AnswerInput, ApprovalStore } from '../agent/index.js';
import { SubconsciousError, isSubconsciousError, type Clock, type Logger } from '../core/index.js';
import {
  BOT_STATUSES,
  THREAD_PAGE_DEFAULT,
  type Bot,
  type BotApproval,
  type BotStatus,
  type BotWithStatus,
  type DispatchedTask,
  type Message,
  type Routine,
  type SendResult,
  type Snapshot,
  type StopResult,
  type Task,
  type Thread,
  type ThreadSummary,
  type ThreadView,
} from '../protocol/bots.js';
import type { ApprovalLinks } from './approval-links.js';
import type { BotInput, BotPatch, BotStore } from './bot-store.js';
import type { BotsEmit } from './events.js';
import type { RoutineStore } from './routine-store.js';
import type { SendKey, SendKeyStore } from './send-keys.js';
import { toTask } from './rows.js';
import type { BotRuntime } from './runtime.js';
import type { TaskStore } from './task-store.js';
import type { ThreadStore } from './thread-store.js';

/**
 * Something a person did (seed 2 §7.5, §6.5): the heartbeat resolves check-ins on a reply, a
 * cancel or a dismiss, clears "when user replies" follow-ups, and resets attempts.
 */
export interface HumanAction {
  kind: 'message' | 'read' | 'approval' | 'cancel' | 'dismiss' | 'stop';
  threadId: string | null;
  /** The bots concerned (a message's addressees, a task's bot, the stopped bot). */
  botIds: string[];
  taskId: string | null;
  at: number;
}

/** Extra needs-attention counts another module owns (the heartbeat's pending check-ins). */
export type AttentionSource = () => Promise<{ thread_id: string; bot_id: string; count: number }[]>;

const MENTION = /(?:^|[^\w@])@([a-z][a-z0-9_-]{0,31})\b/gi;
const DAY_MS = 24 * 3600_000;
/**
 * A key whose first send has not finished dispatching (another worker's under way, or one cut
 * off by a crash) is refused for this long after it was written; after that the send is taken as
 * cut off, and a repeat finishes it.
 */
export const SEND_KEY_UNDERWAY_MS = 60_000;

/** The @names a message mentions, lower-cased, in order, once each. */
export function mentions(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(MENTION)) {
    const name = m[1]!.toLowerCase();
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

export interface BotsServiceDeps {
  bots: BotStore;
  threads: ThreadStore;
  tasks: TaskStore;
  links: ApprovalLinks;
  routines: RoutineStore;
  runtime: BotRuntime;
  approvals: Pick<ApprovalStore, 'get' | 'approve' | 'deny' | 'answer'>;
  clock: Clock;
  log: Logger;
  emit: BotsEmit;
  sendKeys: SendKeyStore;
}

export class BotsService {
  private readonly attention = new Set<AttentionSource>();
  /** Keyed sends under way here (thread + key): a concurrent repeat waits for the first. */
  private readonly keyedSends = new Map<string, Promise<SendResult>>();
  private readonly humanListeners = new Set<(a: HumanAction) => void | Promise<void>>();

  constructor(private readonly d: BotsServiceDeps) {}

  registerAttention(source: AttentionSource): () => void {
    this.attention.add(source);
    return () => this.attention.delete(source);
  }

  onHumanAction(listener: (a: HumanAction) => void | Promise<void>): () => void {
    this.humanListeners.add(listener);
    return () => this.humanListeners.delete(listener);
  }

  private async human(a: Omit<HumanAction, 'at'>): Promise<void> {
    const action = { ...a, at: this.d.clock.now() };
    for (const l of [...this.humanListeners]) {
      try {
        await l(action);
      } catch (err) {
        this.d.log.warn({ err: String(err), kind: a.kind }, 'a human-action listener threw');
      }
    }
  }

  /** Seed 2's user activity (the heartbeat defers while a person is active), as an event too. */
  async userActive(threadId: string, read: boolean): Promise<number> {
    const at = await this.d.threads.markUserActive(threadId, { read });
    this.d.emit('bots.user_activity', { thread_id: threadId, at, read });
    return at;
  }

  // ── bots ────────────────────────────────────────────────────────────────

  async listBots(): Promise<BotWithStatus[]> {
    return (await this.snapshotBots()).bots;
  }

  async createBot(input: BotInput): Promise<Bot> {
    const bot = await this.d.bots.create(input);
    const thread = await this.d.threads.direct(bot);
    this.d.emit('bots.bot_changed', { bot_id: bot.id, id: bot.id, bot });
    this.d.emit('bots.thread_changed', { thread_id: thread.id, id: thread.id, thread });
    return bot;
  }

  async updateBot(id: string, patch: BotPatch): Promise<Bot> {
    const bot = await this.d.bots.update(id, patch);
    if (patch.name !== undefined) await this.d.threads.renameDirect(id, bot.name);
    this.d.emit('bots.bot_changed', { bot_id: bot.id, id: bot.id, bot });
    return bot;
  }

  /** Stop the bot, then delete it with its direct thread, tasks, routines and approvals. */
  async deleteBot(id: string): Promise<{ id: string; deleted: true }> {
    await this.d.bots.require(id);
    await this.d.runtime.stop(id);
    const threads = await this.d.threads.list(id);
    const routines = await this.d.routines.list(id);
    await this.d.bots.delete(id);
    this.d.emit('bots.bot_changed', { bot_id: id, id, bot: null });
    for (const t of threads)
      this.d.emit('bots.thread_changed', { thread_id: t.id, id: t.id, thread: t.kind === 'direct' ? null : ((await this.d.threads.get(t.id)) ?? null) });
    for (const r of routines) this.d.emit('bots.routine_changed', { routine_id: r.id, id: r.id, routine: null });
    return { id, deleted: true };
  }

  // ── threads and messages ────────────────────────────────────────────────

  async threadsList(botId?: string): Promise<ThreadSummary[]> {
    if (botId) await this.d.bots.require(botId);
    return this.summaries(await this.d.threads.list(botId));
  }

  async thread(id: string, opts: { before?: number | undefined; limit?: number | undefined } = {}): Promise<ThreadView> {
    const thread = await this.d.threads.require(id);
    const page = await this.d.threads.page(id, { before: opts.before, limit: opts.limit ?? THREAD_PAGE_DEFAULT });
    const authorIds = new Set([...thread.bot_ids, ...page.messages.map((m) => m.bot_id).filter((b): b is string => !!b)]);
    const taskIds = new Set(page.messages.map((m) => m.task_id).filter((t): t is string => !!t));
    return {
      thread,
      bots: await this.d.bots.byIds([...authorIds]),
      messages: page.messages,
      has_more: page.hasMore,
      tasks: await this.d.tasks.byIds([...taskIds]),
      approvals: await this.d.links.forThread(id, this.d.clock.now() - DAY_MS),
    };
  }

  /**
   * A person's message: to a bot's direct thread, or to a group thread where its @mentions say
   * which bots answer (each gets a task). Checked in full before anything is written. With an
   * `idempotency_key`, a repeat (same thread) returns the first send's result and writes nothing.
   */
  async sendMessage(p: {
    bot_id?: string | undefined;
    thread_id?: string | undefined;
    text: string;
    idempotency_key?: string | undefined;
  }): Promise<SendResult> {
    const text = p.text.trim();
    let thread: Thread;
    let members: Bot[];
    if (p.bot_id !== undefined) {
      const bot = await this.d.bots.require(p.bot_id);
      thread = await this.d.threads.direct(bot);
      members = [bot];
    } else {
      thread = await this.d.threads.require(p.thread_id!);
      if (thread.kind === 'system') throw new SubconsciousError('conflict', `Thread "${thread.id}" is the Subconscious's notifications: it takes no messages.`);
      members = await this.d.bots.byIds(thread.bot_ids);
    }
    const key = p.idempotency_key;
    if (key !== undefined) {
      const kept = await this.d.sendKeys.get(thread.id, key);
      if (kept?.dispatched) return this.keptSend(kept, kept.dispatched);
    }
    const targets = thread.kind === 'group' ? this.mentioned(text, members) : members;
    if (targets.length === 0) throw new SubconsciousError('conflict', `Thread "${thread.id}" has no bot left to answer.`);
    if (key === undefined) return this.deliver(thread, targets, text, null);

    const local = `${thread.id}\n${key}`;
    const underway = this.keyedSends.get(local);
    if (underway) return underway;
    const send = (async () => {
      const { row, fresh } = await this.d.sendKeys.claim(thread.id, key);
      if (row.dispatched) return this.keptSend(row, row.dispatched);
      if (!fresh && this.d.clock.now() - row.createdAt < SEND_KEY_UNDERWAY_MS) {
        throw new SubconsciousError('conflict', `A send with this idempotency_key in thread "${thread.id}" is still under way; nothing was written.`, {
          hint: 'Repeat it in a minute: you get that send’s result.',
        });
      }
      return this.deliver(thread, targets, text, row);
    })().finally(() => this.keyedSends.delete(local));
    this.keyedSends.set(local, send);
    return send;
  }

  /**
   * Write the person's message and dispatch one reply per target. Under a key, the message has
   * the key's id (written once) and a bot its message already has a task for is not dispatched
   * again (a first send cut off midway is finished, not doubled); the result is kept with the key.
   */
  private async deliver(thread: Thread, targets: Bot[], text: string, keyed: SendKey | null): Promise<SendResult> {
    const input = { threadId: thread.id, role: 'user' as const, text, status: 'done' as const };
    let message: Message | undefined = keyed ? await this.d.threads.addMessageOnce(keyed.messageId, input) : await this.d.threads.addMessage(input);
    if (message) {
      await this.userActive(thread.id, true);
      this.d.emit('bots.message_changed', { message });
      // Told before the replies are dispatched: what a listener resolves for this message (the
      // heartbeat's check-ins) can never be something those replies just created.
      await this.human({ kind: 'message', threadId: thread.id, botIds: targets.map((b) => b.id), taskId: null });
    } else message = await this.d.threads.getMessage(keyed!.messageId);
    if (!message) throw new SubconsciousError('conflict', 'The message of this idempotency_key is gone; send it with a new key.');
    const earlier = keyed ? await this.d.tasks.byRequestMessage(message.id) : [];
    const dispatched: DispatchedTask[] = [];
    for (const bot of targets) {
      const had = earlier.find((t) => t.bot_id === bot.id && t.message_id !== null);
      if (had) {
        dispatched.push({ bot_id: bot.id, task_id: had.id, message_id: had.message_id! });
        continue;
      }
      const d = await this.d.runtime.dispatchToBot(bot.id, thread.id, text, { source: 'user', requestMessageId: message.id });
      dispatched.push({ bot_id: bot.id, task_id: d.taskId, message_id: d.messageId });
    }
    if (keyed) await this.d.sendKeys.finish(thread.id, keyed.key, dispatched);
    return { thread_id: thread.id, message, dispatched };
  }

  /** The first send of a key, as it answered then (its message as it is now). */
  private async keptSend(kept: SendKey, dispatched: DispatchedTask[]): Promise<SendResult> {
    const message = await this.d.threads.getMessage(kept.messageId);
    if (!message) throw new SubconsciousError('conflict', 'The message of this idempotency_key is gone; send it with a new key.');
    return { thread_id: kept.threadId, message, dispatched };
  }

  private mentioned(text: string, members: Bot[]): Bot[] {
    const names = mentions(text);
    const list = members.map((m) => `@${m.name}`).join(', ');
    if (names.length === 0) {
      throw new SubconsciousError('invalid_params', `text: mention at least one bot of this group (${list}) to say who should answer`, {
        details: { field: 'text' },
      });
    }
    const unknown = names.filter((n) => !members.some((m) => m.name === n));
    if (unknown.length > 0) {
      throw new SubconsciousError(
        'invalid_params',
        `text: ${unknown.map((n) => `@${n}`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not in this group (members: ${list})`,
        {
          details: { field: 'text' },
        },
      );
    }
    return names.map((n) => members.find((m) => m.name === n)!);
  }

  async createGroup(name: string, botIds: string[]): Promise<Thread> {
    const found = await this.d.bots.byIds(botIds);
    const missing = botIds.filter((id) => !found.some((b) => b.id === id));
    if (missing.length > 0) {
      throw new SubconsciousError('not_found', `bot_ids: no bot with id ${missing.map((m) => `"${m}"`).join(', ')}`, {
        hint: 'List bots with bots.list.',
        details: { field: 'bot_ids' },
      });
    }
    const thread = await this.d.threads.createGroup(name, botIds);
    this.d.emit('bots.thread_changed', { thread_id: thread.id, id: thread.id, thread });
    return thread;
  }

  async markRead(threadId: string): Promise<{ thread_id: string; read_at: number }> {
    const thread = await this.d.threads.require(threadId);
    const at = await this.userActive(threadId, true);
    await this.human({ kind: 'read', threadId, botIds: thread.bot_ids, taskId: null });
    return { thread_id: threadId, read_at: at };
  }

  // ── stop, cancel, dismiss ───────────────────────────────────────────────

  /**
   * Stop a bot for good: its run, its queue, and its unfinished work (a stop is what keeps
   * interrupted or failed work from being resumed later). A bot idle with no unfinished work has
   * nothing to stop: it says so, and nothing is recorded.
   */
  async stopBot(id: string): Promise<StopResult> {
    const bot = await this.d.bots.require(id);
    const unfinished = await this.d.tasks.openWork({ botIds: [id] });
    if (this.d.runtime.isIdle(id) && unfinished.length === 0) {
      return { bot_id: id, outcome: 'nothing_to_stop', cancelled_task_ids: [], message: `@${bot.name} is idle with no unfinished work: nothing to stop.` };
    }
    const r = await this.d.runtime.stop(id);
    await this.human({ kind: 'stop', threadId: null, botIds: [id], taskId: null });
    const n = r.cancelledTaskIds.length;
    const left = unfinished.filter((t) => !r.cancelledTaskIds.includes(t.id) && t.status === 'failed').length;
    const parts = [n ? `${n} task${n === 1 ? '' : 's'} cancelled` : 'nothing was running'];
    if (left) parts.push(`${left} unfinished task${left === 1 ? '' : 's'} will not be resumed`);
    return { bot_id: id, outcome: 'stopped', cancelled_task_ids: r.cancelledTaskIds, message: `Stopped @${bot.name}: ${parts.join('; ')}.` };
  }

  async cancelIntent(taskId: string): Promise<Task> {
    const task = await this.d.runtime.cancelTask(taskId);
    await this.human({ kind: 'cancel', threadId: task.thread_id, botIds: [task.bot_id], taskId });
    return task;
  }

  /** Hide a finished, failed, cancelled or review task for good (its claim released). */
  async dismissTask(taskId: string): Promise<Task> {
    const row = await this.d.tasks.requireRow(taskId);
    if (row.status === 'queued' || row.status === 'working') {
      throw new SubconsciousError('conflict', `Task "${taskId}" is ${row.status}; cancel it first (bots.cancel_intent), then dismiss it.`, {
        details: { status: row.status },
      });
    }
    if (row.status === 'dismissed')
      throw new SubconsciousError('conflict', `Task "${taskId}" is already dismissed; nothing was changed.`, { details: { status: row.status } });
    const done = await this.d.tasks.update(taskId, { status: 'dismissed', claim_token: null, claim_at: null, claim_by: null }, { version: row.version });
    if (!done) throw new SubconsciousError('conflict', `Task "${taskId}" changed while it was being dismissed; try again.`);
    const task = toTask(done);
    this.d.emit('bots.task_changed', { task });
    await this.human({ kind: 'dismiss', threadId: task.thread_id, botIds: [task.bot_id], taskId });
    return task;
  }

  // ── approvals ───────────────────────────────────────────────────────────

  /**
   * Answer a bot's approval once. A second answer, or one after expiry, is a `conflict` that
   * changes nothing. An answer is a human action: the task's heartbeat attempts reset (§7.5).
   */
  /** `approve` (boolean) is the older form of accept / ignore; `answer` gives all four (issue 23). */
  async answerApproval(id: string, input: boolean | AnswerInput): Promise<BotApproval> {
    const answer: AnswerInput = typeof input === 'boolean' ? { answer: input ? 'accept' : 'ignore' } : input;
    const link = await this.d.links.get(id);
    if (!link)
      throw new SubconsciousError('not_found', `No bot approval with id "${id}".`, { hint: 'Pending approvals are in bots.snapshot and bots.thread.' });
    let answered;
    try {
      answered = await this.d.approvals.answer(id, answer);
    } catch (err) {
      // Expired or answered elsewhere: keep the link true to the store, then say so.
      if (isSubconsciousError(err, 'conflict')) {
        const current = await this.d.approvals.get(id);
        const changed = current ? await this.d.links.mirror(current) : undefined;
        if (changed) this.d.emit('bots.approval_changed', { approval: changed });
      }
      throw err;
    }
    const changed = (await this.d.links.mirror(answered)) ?? (await this.d.links.get(id))!;
    this.d.emit('bots.approval_changed', { approval: changed });
    await this.userActive(link.thread_id, false);
    if (link.task_id) {
      const reset = await this.d.tasks.resetAttempts(link.task_id);
      if (reset) this.d.emit('bots.task_changed', { task: toTask(reset) });
    }
    await this.human({ kind: 'approval', threadId: link.thread_id, botIds: [link.bot_id], taskId: link.task_id });
    return changed;
  }

  // ── routines ────────────────────────────────────────────────────────────

  async routinesList(botId?: string): Promise<Routine[]> {
    if (botId) await this.d.bots.require(botId);
    return this.d.routines.list(botId);
  }

  async routinesAdd(p: { bot_id: string; schedule: string; prompt: string; timezone?: string | undefined; enabled?: boolean | undefined }): Promise<Routine> {
    await this.d.bots.require(p.bot_id);
    const routine = await this.d.routines.add({ botId: p.bot_id, schedule: p.schedule, prompt: p.prompt, timezone: p.timezone, enabled: p.enabled });
    this.d.emit('bots.routine_changed', { routine_id: routine.id, id: routine.id, routine });
    return routine;
  }

  async routinesUpdate(
    id: string,
    patch: { schedule?: string | undefined; prompt?: string | undefined; timezone?: string | undefined; enabled?: boolean | undefined },
  ): Promise<Routine> {
    const routine = await this.d.routines.update(id, patch);
    this.d.emit('bots.routine_changed', { routine_id: id, id, routine });
    return routine;
  }

  async routinesRemove(id: string): Promise<Routine> {
    const routine = await this.d.routines.remove(id);
    this.d.emit('bots.routine_changed', { routine_id: id, id, routine: null });
    return routine;
  }

  // ── the snapshot ────────────────────────────────────────────────────────

  async snapshot(): Promise<Snapshot> {
    const { bots, extra } = await this.snapshotBots();
    return {
      bots,
      threads: await this.summaries(await this.d.threads.list(), extra),
      pending_approvals: await this.d.links.list({ state: 'pending' }),
      at: this.d.clock.now(),
    };
  }

  private async extraAttention(): Promise<{ thread_id: string; bot_id: string; count: number }[]> {
    const out = [];
    for (const source of this.attention) {
      try {
        out.push(...(await source()));
      } catch (err) {
        this.d.log.warn({ err: String(err) }, 'a needs-attention source failed; its counts are left out');
      }
    }
    return out;
  }

  private async snapshotBots(): Promise<{ bots: BotWithStatus[]; extra: { thread_id: string; bot_id: string; count: number }[] }> {
    const [list, reviews, approvals, extra, open] = await Promise.all([
      this.d.bots.list(),
      this.d.tasks.reviewCounts('bot_id'),
      this.d.links.pendingCounts('bot_id'),
      this.extraAttention(),
      this.d.tasks.openByBot(),
    ]);
    const bots = list.map((bot) => {
      const { status, queued, taskId } = this.statusOf(bot.id, open);
      const more = extra.filter((e) => e.bot_id === bot.id).reduce((n, e) => n + e.count, 0);
      return {
        ...bot,
        status,
        queued: status === 'idle' ? 0 : queued,
        task_id: status === 'working' ? taskId : null,
        needs_attention: (reviews.get(bot.id) ?? 0) + (approvals.get(bot.id) ?? 0) + more,
        checking: this.d.runtime.isChecking(bot.id),
      };
    });
    return { bots, extra };
  }

  /** How many bots are idle, queued and working (the `subconscious_bots` gauge): the same status `bots.list` gives each. */
  async statusCounts(): Promise<Record<BotStatus, number>> {
    const [ids, open] = await Promise.all([this.d.bots.ids(), this.d.tasks.openByBot()]);
    const counts = Object.fromEntries(BOT_STATUSES.map((s) => [s, 0])) as Record<BotStatus, number>;
    for (const id of ids) counts[this.statusOf(id, open).status]++;
    return counts;
  }

  /** The store's view (every worker's work, issue 17) joined with this process's in-between states. */
  private statusOf(botId: string, open: Map<string, { working: string | null; queued: number }>): { status: BotStatus; queued: number; taskId: string | null } {
    const local = this.d.runtime.statusOf(botId);
    const stored = open.get(botId);
    const taskId = local.taskId ?? stored?.working ?? null;
    const queued = Math.max(local.queued, stored?.queued ?? 0);
    const status: BotStatus = local.status === 'working' || stored?.working ? 'working' : queued > 0 || local.status === 'queued' ? 'queued' : 'idle';
    return { status, queued, taskId };
  }

  private async summaries(threads: Thread[], extra?: { thread_id: string; count: number }[]): Promise<ThreadSummary[]> {
    const ids = threads.map((t) => t.id);
    const [unread, reviews, approvals, last, more] = await Promise.all([
      this.d.threads.unreadCounts(ids),
      this.d.tasks.reviewCounts('thread_id'),
      this.d.links.pendingCounts('thread_id'),
      this.d.threads.lastMessages(ids),
      extra ? Promise.resolve(extra) : this.extraAttention(),
    ]);
    return threads.map((t) => ({
      ...t,
      unread: unread.get(t.id) ?? 0,
      needs_attention: (reviews.get(t.id) ?? 0) + (approvals.get(t.id) ?? 0) + more.filter((e) => e.thread_id === t.id).reduce((n, e) => n + e.count, 0),
      last_message: last.get(t.id) ?? null,
    }));
  }
}
