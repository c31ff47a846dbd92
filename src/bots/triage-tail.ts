/**
 * What triage's rules read of many threads at once (`ThreadStore.triageTail`), one statement per
 * dialect. A message of a thread's newest `limit` is kept when it is a live bot reply (rule 7), an
 * interrupted one, or no newer turn of the conversation or newer settled reply of the thread's
 * own bot follows it. A turn is a person's or bot's message, settled, that is not a possible
 * check-in question (a bot message the host wrote, done: `lastTurn` skips those that are).
 *
 * Every message newer than one in the window is in the window too (seq comes from the thread's
 * counter), so "nothing newer" is "seq at or above the window's newest turn (own settled reply)",
 * and NULL (there is none) keeps every row. SQLite finds those two per thread first (a backward
 * walk of its window on the (thread_id, seq) index, usually one row), then reads the window: as
 * two correlated `NOT EXISTS` per message the same answer cost half as much again. Postgres plans
 * a join of 1,000 ids as a hash join over parallel scans of every message and thread (its cost
 * model prices 1,000 index probes above a full scan), so there each id drives its own index probes
 * (`LATERAL`, fenced by `OFFSET 0` so the planner cannot flatten it back into that join), and the
 * two are one window aggregate over the thread's window. Neither orders the rows: the caller
 * groups them by thread and puts each thread's in seq order.
 */
import { sql, SqliteAdapter, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { BotsMessagesTable, BotsTables } from './tables.js';

export type TailRow = Selectable<BotsMessagesTable> & { direct_bot_id: string | null };

const LIVE = ['queued', 'streaming'] as const;

export async function triageTailRows(db: Kysely<BotsTables>, threadIds: readonly string[], limit: number): Promise<TailRow[]> {
  if (threadIds.length === 0) return [];
  return db.getExecutor().adapter instanceof SqliteAdapter ? sqliteTail(db, threadIds, limit) : postgresTail(db, [...new Set(threadIds)], limit);
}

async function sqliteTail(db: Kysely<BotsTables>, threadIds: readonly string[], limit: number): Promise<TailRow[]> {
  const live = sql.join(LIVE.map((s) => sql.lit(s)));
  const newest = (condition: RawBuilder<unknown>) =>
    sql`(select n.seq from bots_messages n where n.thread_id = t.id and n.seq > t.next_seq - ${limit} and ${condition} order by n.seq desc limit 1)`;
  const turn = sql`n.role <> 'system' and (n.role <> 'bot' or n.status not in (${live})) and not (n.role = 'bot' and n.heartbeat = 1 and n.status = 'done')`;
  const own = sql`n.role = 'bot' and n.status not in (${live}) and not (n.heartbeat = 1 and n.status = 'done') and n.bot_id = t.direct_bot_id`;
  const { rows } = await sql<TailRow>`
    with th as materialized (
      select t.id, t.next_seq, t.direct_bot_id, ${newest(turn)} as last_turn, ${newest(own)} as last_own
      from bots_threads t where t.id in (${sql.join([...threadIds])})
    )
    select m.*, th.direct_bot_id
    from th join bots_messages m on m.thread_id = th.id and m.seq > th.next_seq - ${limit}
    where (m.role = 'bot' and m.status in (${live})) or m.interrupted = 1
      or th.last_turn is null or m.seq >= th.last_turn or th.last_own is null or m.seq >= th.last_own`.execute(db);
  return rows;
}

/** The same rows on Postgres (see above). */
async function postgresTail(db: Kysely<BotsTables>, threadIds: readonly string[], limit: number): Promise<TailRow[]> {
  const live = sql.join(LIVE.map((s) => sql.lit(s)));
  const { rows } = await sql<TailRow>`
    select w.id, w.thread_id, w.seq, w.role, w.bot_id, w.task_id, w.text, w.status, w.error, w.interrupted, w.heartbeat,
      w.created_at, w.updated_at, w.direct_bot_id
    from (
      select m.*, t.direct_bot_id,
        max(case when m.role <> 'system' and (m.role <> 'bot' or m.status not in (${live}))
                  and not (m.role = 'bot' and m.heartbeat = 1 and m.status = 'done') then m.seq end)
          over (partition by m.thread_id) as last_turn,
        max(case when m.role = 'bot' and m.status not in (${live}) and not (m.heartbeat = 1 and m.status = 'done')
                  and m.bot_id = t.direct_bot_id then m.seq end)
          over (partition by m.thread_id) as last_own
      from unnest(${threadIds}::text[]) as x(id)
      cross join lateral (select t.id, t.next_seq, t.direct_bot_id from bots_threads t where t.id = x.id offset 0) t
      cross join lateral (select * from bots_messages m where m.thread_id = t.id and m.seq > t.next_seq - ${limit} offset 0) m
    ) w
    where (w.role = 'bot' and w.status in (${live})) or w.interrupted = 1
      or w.last_turn is null or w.seq >= w.last_turn or w.last_own is null or w.seq >= w.last_own`.execute(db);
  return rows;
}
