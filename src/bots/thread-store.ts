/**
 * Threads (a bot's one `direct` thread, `group` threads of several bots, the host's `system`
 * thread of the memory world's notifications), their messages and the
 * person's activity in each. Messages are numbered per thread (`seq`) by an atomic counter on
 * the thread row, so order holds with any clock and across processes.
 */
import type { Kysely, Selectable } from 'kysely';
import { SubconsciousError, type Clock, type IdGen } from '../core/index.js';
import { perDatabase, precompile } from '../store/index.js';
import type { Message, MessageRole, MessageStatus, Thread } from '../protocol/bots.js';
import { num, toMessage, toThread } from './rows.js';
import { triageTailRows, type TailOf } from './triage-tail.js';
import type { BotsMessagesTable, BotsTables, BotsThreadsTable } from './tables.js';

/** The heartbeat's sweep for replies left streaming runs every tick: compiled once per database. */
const staleQuery = perDatabase((db: Kysely<BotsTables>) =>
  precompile(db, 2, (before: number, limit: number) =>
    db
      .selectFrom('bots_messages')
      .selectAll()
      .where('status', 'in', ['streaming', 'queued'])
      .where('role', '=', 'bot')
      .where('updated_at', '<', before)
      .orderBy('updated_at')
      .limit(limit),
  ),
);

export interface NewMessage {
  threadId: string;
  role: MessageRole;
  botId?: string | null | undefined;
  taskId?: string | null | undefined;
  text: string;
  status: MessageStatus;
  heartbeat?: boolean | undefined;
}

export interface MessagePatch {
  text?: string | undefined;
  status?: MessageStatus | undefined;
  error?: string | null | undefined;
  interrupted?: boolean | undefined;
  taskId?: string | null | undefined;
}

export interface ThreadStoreOptions {
  db: Kysely<BotsTables>;
  clock: Clock;
  ids: IdGen;
  /** Where the reads of many threads at once go (`triageTail`, `activities`): another thread's connection (default `db`). */
  reads?: Kysely<BotsTables> | undefined;
}

export class ThreadStore {
  constructor(private readonly o: ThreadStoreOptions) {}

  private get db() {
    return this.o.db;
  }

  /** Where reads of many threads at once go (the read thread when given). */
  private get reader() {
    return this.o.reads ?? this.o.db;
  }

  async get(id: string): Promise<Thread | undefined> {
    const row = await this.db.selectFrom('bots_threads').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toThread(row, await this.memberIds(id)) : undefined;
  }

  async require(id: string): Promise<Thread> {
    const t = await this.get(id);
    if (!t) throw new SubconsciousError('not_found', `No thread with id "${id}".`, { hint: 'List threads with bots.threads_list.' });
    return t;
  }

  /** Threads (all, or those a bot is in), newest activity first. */
  async list(botId?: string): Promise<Thread[]> {
    let q = this.db.selectFrom('bots_threads').selectAll();
    if (botId) q = q.where('id', 'in', this.db.selectFrom('bots_thread_members').select('thread_id').where('bot_id', '=', botId));
    const rows = await q.orderBy('updated_at', 'desc').orderBy('id').execute();
    const members = await this.membersOf(rows.map((r) => r.id));
    return rows.map((r) => toThread(r, members.get(r.id) ?? []));
  }

  async memberIds(threadId: string): Promise<string[]> {
    return (await this.membersOf([threadId])).get(threadId) ?? [];
  }

  private async membersOf(threadIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (threadIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('bots_thread_members')
      .select(['thread_id', 'bot_id'])
      .where('thread_id', 'in', threadIds)
      .orderBy('position')
      .execute();
    for (const r of rows) {
      const list = out.get(r.thread_id) ?? [];
      list.push(r.bot_id);
      out.set(r.thread_id, list);
    }
    return out;
  }

  /** The bot's direct thread, created on first use. */
  async direct(bot: { id: string; name: string }): Promise<Thread> {
    const existing = await this.db.selectFrom('bots_threads').selectAll().where('direct_bot_id', '=', bot.id).executeTakeFirst();
    if (existing) return toThread(existing, [bot.id]);
    const now = this.o.clock.now();
    const row: Selectable<BotsThreadsTable> = {
      id: this.o.ids(),
      kind: 'direct',
      name: bot.name,
      direct_bot_id: bot.id,
      next_seq: 0,
      created_at: now,
      updated_at: now,
      last_message_at: null,
    };
    try {
      await this.db.transaction().execute(async (trx) => {
        await trx.insertInto('bots_threads').values(row).execute();
        await trx.insertInto('bots_thread_members').values({ thread_id: row.id, bot_id: bot.id, position: 0 }).execute();
      });
    } catch (err) {
      // Created at the same moment by another call: the unique index kept one.
      const again = await this.db.selectFrom('bots_threads').selectAll().where('direct_bot_id', '=', bot.id).executeTakeFirst();
      if (again) return toThread(again, [bot.id]);
      throw err;
    }
    return toThread(row, [bot.id]);
  }

  async createGroup(name: string, botIds: readonly string[]): Promise<Thread> {
    const now = this.o.clock.now();
    const row: Selectable<BotsThreadsTable> = {
      id: this.o.ids(),
      kind: 'group',
      name,
      direct_bot_id: null,
      next_seq: 0,
      created_at: now,
      updated_at: now,
      last_message_at: null,
    };
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('bots_threads').values(row).execute();
      await trx
        .insertInto('bots_thread_members')
        .values(botIds.map((bot_id, position) => ({ thread_id: row.id, bot_id, position })))
        .execute();
    });
    return toThread(row, [...botIds]);
  }

  /** A system thread (no bots) with this id and name, created on first use; `created` says whether this call made it. */
  async system(id: string, name: string): Promise<{ thread: Thread; created: boolean }> {
    const now = this.o.clock.now();
    const row: Selectable<BotsThreadsTable> = {
      id,
      kind: 'system',
      name,
      direct_bot_id: null,
      next_seq: 0,
      created_at: now,
      updated_at: now,
      last_message_at: null,
    };
    const res = await this.db
      .insertInto('bots_threads')
      .values(row)
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0) > 0) return { thread: toThread(row, []), created: true };
    return { thread: await this.require(id), created: false };
  }

  async renameDirect(botId: string, name: string): Promise<void> {
    await this.db.updateTable('bots_threads').set({ name }).where('direct_bot_id', '=', botId).execute();
  }

  // ── messages ────────────────────────────────────────────────────────────

  async addMessage(m: NewMessage): Promise<Message> {
    return this.insertMessage(this.db, this.o.ids(), m);
  }

  /**
   * A message with a chosen id, written once: undefined when a message with that id exists (a
   * redelivery). Checked, numbered and inserted in one transaction, so no seq is spent on a
   * duplicate; a concurrent writer of the same id loses on the primary key and gets undefined.
   */
  async addMessageOnce(id: string, m: NewMessage): Promise<Message | undefined> {
    try {
      return await this.db.transaction().execute(async (trx) => {
        if (await trx.selectFrom('bots_messages').select('id').where('id', '=', id).executeTakeFirst()) return undefined;
        return this.insertMessage(trx, id, m);
      });
    } catch (err) {
      if (await this.getMessage(id)) return undefined;
      throw err;
    }
  }

  private async insertMessage(db: Kysely<BotsTables>, id: string, m: NewMessage): Promise<Message> {
    const now = this.o.clock.now();
    // The thread's counter hands out the seq atomically (and proves the thread exists).
    const bumped = await db
      .updateTable('bots_threads')
      .set((eb) => ({ next_seq: eb('next_seq', '+', 1), updated_at: now, last_message_at: now }))
      .where('id', '=', m.threadId)
      .returning('next_seq')
      .executeTakeFirst();
    if (!bumped) throw new SubconsciousError('not_found', `No thread with id "${m.threadId}".`);
    const row: Selectable<BotsMessagesTable> = {
      id,
      thread_id: m.threadId,
      seq: num(bumped.next_seq),
      role: m.role,
      bot_id: m.botId ?? null,
      task_id: m.taskId ?? null,
      text: m.text,
      status: m.status,
      error: null,
      interrupted: 0,
      heartbeat: m.heartbeat ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    await db.insertInto('bots_messages').values(row).execute();
    return toMessage(row);
  }

  async getMessage(id: string): Promise<Message | undefined> {
    const row = await this.db.selectFrom('bots_messages').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toMessage(row) : undefined;
  }

  async updateMessage(id: string, patch: MessagePatch): Promise<Message | undefined> {
    const set: Record<string, unknown> = { updated_at: this.o.clock.now() };
    if (patch.text !== undefined) set.text = patch.text;
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.error !== undefined) set.error = patch.error;
    if (patch.interrupted !== undefined) set.interrupted = patch.interrupted ? 1 : 0;
    if (patch.taskId !== undefined) set.task_id = patch.taskId;
    await this.db.updateTable('bots_messages').set(set).where('id', '=', id).execute();
    return this.getMessage(id);
  }

  /**
   * Bot messages still `streaming`/`queued` and not written since `before` (seed 2 rule 7), by the
   * (status, role) index: only messages being written are read, however many threads there are.
   */
  async staleBotMessages(before: number, limit = 100): Promise<Message[]> {
    const { rows } = await staleQuery(this.db)(before, limit);
    return rows.map(toMessage);
  }

  /** A stale message (as above) becomes `error` + interrupted, its text kept; undefined when it moved on meanwhile. */
  async interruptIfStale(id: string, before: number, error: string): Promise<Message | undefined> {
    const res = await this.db
      .updateTable('bots_messages')
      .set({ status: 'error', interrupted: 1, error, updated_at: this.o.clock.now() })
      .where('id', '=', id)
      .where('status', 'in', ['streaming', 'queued'])
      .where('updated_at', '<', before)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1 ? this.getMessage(id) : undefined;
  }

  /** A page of a thread, oldest first: the newest `limit` messages with seq below `before`. */
  async page(threadId: string, opts: { before?: number | undefined; limit: number }): Promise<{ messages: Message[]; hasMore: boolean }> {
    let q = this.db.selectFrom('bots_messages').selectAll().where('thread_id', '=', threadId);
    if (opts.before !== undefined) q = q.where('seq', '<', opts.before);
    const rows = await q
      .orderBy('seq', 'desc')
      .limit(opts.limit + 1)
      .execute();
    const hasMore = rows.length > opts.limit;
    return { messages: rows.slice(0, opts.limit).reverse().map(toMessage), hasMore };
  }

  async lastMessages(threadIds: string[]): Promise<Map<string, Message>> {
    const out = new Map<string, Message>();
    if (threadIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('bots_messages as m')
      .innerJoin('bots_threads as t', (j) => j.onRef('t.id', '=', 'm.thread_id').onRef('t.next_seq', '=', 'm.seq'))
      .selectAll('m')
      .where('m.thread_id', 'in', threadIds)
      .execute();
    for (const r of rows) out.set(r.thread_id, toMessage(r));
    return out;
  }

  /**
   * Each thread's newest `limit` messages, oldest first, in one query: a range of the
   * (thread_id, seq) index per thread, from its counter (seed 2's triage reads many bots at once).
   */
  async recentMany(threadIds: readonly string[], limit: number): Promise<Map<string, Message[]>> {
    const out = new Map<string, Message[]>();
    if (threadIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('bots_messages as m')
      .innerJoin('bots_threads as t', 't.id', 'm.thread_id')
      .selectAll('m')
      .where('m.thread_id', 'in', [...threadIds])
      .where('t.id', 'in', [...threadIds]) // as in triageTail: these threads by their key, not a scan of all
      .where((eb) => eb('m.seq', '>', eb('t.next_seq', '-', limit)))
      .orderBy('m.thread_id')
      .orderBy('m.seq')
      .execute();
    for (const r of rows) {
      const list = out.get(r.thread_id) ?? [];
      list.push(toMessage(r));
      out.set(r.thread_id, list);
    }
    return out;
  }

  /**
   * What triage's rules read of each thread (seed 2 §5.2): of its newest `limit` messages, only
   * those the rules can look at — every message from the newest one that is a turn of the
   * conversation (not a host note, not a live reply, not a possible check-in question), and from
   * the newest settled reply of the bot triaged, on; every live (queued/streaming) bot reply
   * (rule 7); every interrupted one (a cut-off task's partial text). Older settled messages cannot
   * change a rule's answer, so they are never read: the digest, which quotes them, reads the
   * whole window (`recentMany`) for the bots that pulse.
   */
  async triageTail(threads: readonly TailOf[], limit: number): Promise<Map<string, Message[]>> {
    const out = new Map<string, Message[]>();
    const asked = new Map(threads.map((t) => [t.threadId, t.botId]));
    const other = new Set<string>();
    // No rest spread of each row: toMessage reads the message's own columns and leaves the rest.
    for (const r of await triageTailRows(this.reader, threads, limit)) {
      if (r.own_bot_id !== asked.get(r.thread_id)) {
        other.add(r.thread_id);
        continue;
      }
      let list = out.get(r.thread_id);
      if (!list) out.set(r.thread_id, (list = []));
      list.push(toMessage(r));
    }
    // The read leaves the order to its plan (an ORDER BY cost a sort of every row): oldest first here.
    for (const list of out.values()) if (!inSeqOrder(list)) list.sort((a, b) => a.seq - b.seq);
    // Measured against another bot (SQLite measures a thread's direct bot): its whole window.
    if (other.size > 0) for (const [id, messages] of await this.recentMany([...other], limit)) out.set(id, messages);
    return out;
  }

  /** The person's activity in many threads at once. */
  async activities(threadIds: readonly string[]): Promise<Map<string, { userActiveAt: number | null; readAt: number | null }>> {
    const out = new Map<string, { userActiveAt: number | null; readAt: number | null }>();
    if (threadIds.length === 0) return out;
    const rows = await this.reader
      .selectFrom('bots_thread_activity')
      .selectAll()
      .where('thread_id', 'in', [...threadIds])
      .execute();
    for (const r of rows) {
      out.set(r.thread_id, { userActiveAt: r.user_active_at == null ? null : num(r.user_active_at), readAt: r.read_at == null ? null : num(r.read_at) });
    }
    return out;
  }

  // ── the person's activity ───────────────────────────────────────────────

  /** A person acted in the thread (sent, read, answered an approval): seed 2's user activity. */
  async markUserActive(threadId: string, opts: { read?: boolean } = {}): Promise<number> {
    const now = this.o.clock.now();
    const values = { thread_id: threadId, user_active_at: now, read_at: opts.read ? now : null };
    await this.db
      .insertInto('bots_thread_activity')
      .values(values)
      .onConflict((oc) => oc.column('thread_id').doUpdateSet(opts.read ? { user_active_at: now, read_at: now } : { user_active_at: now }))
      .execute();
    return now;
  }

  async activity(threadId: string): Promise<{ userActiveAt: number | null; readAt: number | null }> {
    const row = await this.db.selectFrom('bots_thread_activity').selectAll().where('thread_id', '=', threadId).executeTakeFirst();
    return { userActiveAt: row?.user_active_at == null ? null : num(row.user_active_at), readAt: row?.read_at == null ? null : num(row.read_at) };
  }

  /**
   * Bot and system messages written after each thread's read mark. One index range per thread
   * (thread_id, created_at): the cost follows threads and unread messages, not the history.
   */
  async unreadCounts(threadIds?: readonly string[]): Promise<Map<string, number>> {
    let q = this.db
      .selectFrom('bots_threads as t')
      .leftJoin('bots_thread_activity as a', 'a.thread_id', 't.id')
      .select((eb) => [
        't.id',
        eb
          .selectFrom('bots_messages as m')
          .select((e) => e.fn.countAll<number>().as('c'))
          .whereRef('m.thread_id', '=', 't.id')
          .where('m.role', '<>', 'user')
          .where((e) => e('m.created_at', '>', e.fn.coalesce('a.read_at', e.lit(-1))))
          .as('n'),
      ]);
    if (threadIds) {
      if (threadIds.length === 0) return new Map();
      q = q.where('t.id', 'in', [...threadIds]);
    }
    const rows = await q.execute();
    return new Map(rows.map((r) => [r.id, num(r.n ?? 0)]));
  }
}

function inSeqOrder(messages: readonly Message[]): boolean {
  for (let i = 1; i < messages.length; i++) if (messages[i - 1]!.seq > messages[i]!.seq) return false;
  return true;
}
