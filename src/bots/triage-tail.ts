/**
 * What triage's rules read of many threads at once (`ThreadStore.triageTail`), one statement per
 * dialect. A message of a thread's newest `limit` is kept when it is a live bot reply (rule 7), an
 * interrupted one, or no newer turn of the conversation or newer settled reply of the thread's
 * own bot follows it. A turn is a person's or bot's message, settled, that is not a possible
 * check-in question (a bot message the host wrote, done: `lastTurn` skips those that are).
 *
 * Every message newer than one in the window is in the window too (seq comes from the thread's
 * counter, gapless), so "nothing newer" is "seq at or above the window's newest turn (own settled
 * reply)", and NULL (there is none) keeps every row. An own settled reply is a turn, so the newest
 * turn is never older than it: a row at or above the newest own reply is kept, and without one
 * (no own reply, or no turn at all) every row is; the newest turn itself need not be found. Both
 * dialects find the newest own reply once per thread, then keep rows by it: asked per message (two
 * correlated `NOT EXISTS` on SQLite; on Postgres a window aggregate over every thread's rows,
 * sorted) the same answer cost a fifth to two thirds more. Neither orders the rows: the caller
 * groups them by thread and puts each in seq order.
 */
import { sql, SqliteAdapter, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { arrayText } from '../store/index.js';
import type { BotsMessagesTable, BotsTables } from './tables.js';

/** A message row, and the bot its thread's "own settled reply" was measured against. */
export type TailRow = Selectable<BotsMessagesTable> & { own_bot_id: string | null };

export interface TailOf {
  threadId: string;
  /** The bot whose replies are "own" (the bot triaged). */
  botId: string;
}

const LIVE = ['queued', 'streaming'] as const;

export async function triageTailRows(db: Kysely<BotsTables>, threads: readonly TailOf[], limit: number): Promise<TailRow[]> {
  if (threads.length === 0) return [];
  const once = [...new Map(threads.map((t) => [t.threadId, t])).values()];
  return db.getExecutor().adapter instanceof SqliteAdapter ? sqliteTail(db, once, limit) : postgresTail(db, once, limit);
}

const live = sql.join(LIVE.map((s) => sql.lit(s)));
/**
 * A settled reply of bot `bot` (`n` a message). It is also a turn (a person's or bot's message,
 * settled, not a possible check-in question), so the newest turn is at or after it.
 */
const own = (bot: RawBuilder<unknown>) =>
  sql`n.role = 'bot' and n.status not in (${live}) and not (n.heartbeat = 1 and n.status = 'done') and n.bot_id = ${bot}`;
/** Which messages `m` (with their thread's `last_own` in `th`) the rules can look at. */
const kept = (m: RawBuilder<unknown>, th: RawBuilder<unknown>) =>
  sql`((${m}.role = 'bot' and ${m}.status in (${live})) or ${m}.interrupted = 1 or ${th}.last_own is null or ${m}.seq >= ${th}.last_own)`;

/**
 * SQLite: the threads by their key (`IN`; a join of the pairs as `VALUES` planned a scan of every
 * thread per pair), each one's newest own reply measured against its direct bot; the
 * caller reads the whole window of a thread whose triaged bot is another.
 */
async function sqliteTail(db: Kysely<BotsTables>, threads: readonly TailOf[], limit: number): Promise<TailRow[]> {
  const newest = (condition: RawBuilder<unknown>) =>
    sql`(select n.seq from bots_messages n where n.thread_id = t.id and n.seq > t.next_seq - ${limit} and ${condition} order by n.seq desc limit 1)`;
  const { rows } = await sql<TailRow>`
    with th as materialized (
      select t.id, t.next_seq, t.direct_bot_id, ${newest(own(sql.ref('t.direct_bot_id')))} as last_own
      from bots_threads t where t.id in (${sql.join(threads.map((t) => t.threadId))})
    )
    select m.*, th.direct_bot_id as own_bot_id
    from th join bots_messages m on m.thread_id = th.id and m.seq > th.next_seq - ${limit}
    where ${kept(sql.ref('m'), sql.ref('th'))}`.execute(db);
  return rows;
}

/** A list bound as Postgres' array text when it can be (`arrayText`: one join, not pg's writer). */
const pgList = (values: string[]) => arrayText(values) ?? values;

/**
 * Postgres: each pair drives one backward walk of its thread's newest `limit` messages on the
 * index (`LATERAL`), the newest own reply measured over those rows (a window aggregate over the thread alone,
 * no sort); no read of the thread row (seqs are gapless, so the newest `limit` are its window).
 */
async function postgresTail(db: Kysely<BotsTables>, threads: readonly TailOf[], limit: number): Promise<TailRow[]> {
  const { rows } = await sql<TailRow>`
    select w.id, w.thread_id, w.seq, w.role, w.bot_id, w.task_id, w.text, w.status, w.error, w.interrupted, w.heartbeat,
      w.created_at, w.updated_at, w.own_bot_id
    from unnest(${pgList(threads.map((t) => t.threadId))}::text[], ${pgList(threads.map((t) => t.botId))}::text[]) as x(thread_id, bot_id)
    cross join lateral (
      select n.*, x.bot_id as own_bot_id, max(n.seq) filter (where ${own(sql.ref('x.bot_id'))}) over () as last_own
      from (select * from bots_messages m where m.thread_id = x.thread_id order by m.seq desc limit ${limit}) n
    ) w
    where ${kept(sql.ref('w'), sql.ref('w'))}`.execute(db);
  return rows;
}
