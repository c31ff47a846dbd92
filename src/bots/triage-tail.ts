/**
 * What triage's rules read of many threads at once (`ThreadStore.triageTail`), one statement per
 * dialect. A message of a thread's newest `limit` is kept when it is a live bot reply (rule 7), an
 * interrupted one, or no newer turn of the conversation or newer settled reply of the thread's
 * own bot follows it. A turn is a person's or bot's message, settled, that is not a possible
 * check-in question (a bot message the host wrote, done: `lastTurn` skips those that are).
 *
 * SQLite walks each thread's window on the (thread_id, seq) index and asks the two "nothing newer"
 * questions as correlated `NOT EXISTS`. Postgres plans that with 1,000 ids as a hash join over
 * parallel scans of every message and thread (its cost model prices 1,000 index probes above a
 * full scan), so there each id drives its own index probes (`LATERAL`, fenced by `OFFSET 0` so
 * the planner cannot flatten it back into that join), and the two questions are one window
 * aggregate over the thread's window instead of 2 probes per row.
 */
import { sql, SqliteAdapter, type Kysely, type Selectable } from 'kysely';
import type { BotsMessagesTable, BotsTables } from './tables.js';

export type TailRow = Selectable<BotsMessagesTable> & { direct_bot_id: string | null };

const LIVE = ['queued', 'streaming'] as const;

export async function triageTailRows(db: Kysely<BotsTables>, threadIds: readonly string[], limit: number): Promise<TailRow[]> {
  if (threadIds.length === 0) return [];
  return db.getExecutor().adapter instanceof SqliteAdapter ? sqliteTail(db, threadIds, limit) : postgresTail(db, [...new Set(threadIds)], limit);
}

function sqliteTail(db: Kysely<BotsTables>, threadIds: readonly string[], limit: number): Promise<TailRow[]> {
  return (
    db
      .selectFrom('bots_messages as m')
      .innerJoin('bots_threads as t', 't.id', 'm.thread_id')
      .selectAll('m')
      .select('t.direct_bot_id')
      // The threads by their key, each one's window by (thread_id, seq): one list of ids, bound once.
      .where('t.id', 'in', [...threadIds])
      .where((eb) => eb('m.seq', '>', eb('t.next_seq', '-', limit)))
      .where((eb) => {
        const newer = () => eb.selectFrom('bots_messages as n').select('n.id').whereRef('n.thread_id', '=', 'm.thread_id').whereRef('n.seq', '>', 'm.seq');
        return eb.or([
          eb.and([eb('m.role', '=', 'bot'), eb('m.status', 'in', [...LIVE])]),
          eb('m.interrupted', '=', 1),
          // No newer turn of the conversation.
          eb.not(
            eb.exists(
              newer().where((n) =>
                n.and([
                  n('n.role', '!=', 'system'),
                  n.or([n('n.role', '!=', 'bot'), n('n.status', 'not in', [...LIVE])]),
                  n.not(n.and([n('n.role', '=', 'bot'), n('n.heartbeat', '=', 1), n('n.status', '=', 'done')])),
                ]),
              ),
            ),
          ),
          // No newer settled reply of the thread's own bot (the same check-in exception).
          eb.not(
            eb.exists(
              newer().where((n) =>
                n.and([
                  n('n.role', '=', 'bot'),
                  n('n.status', 'not in', [...LIVE]),
                  n.not(n.and([n('n.heartbeat', '=', 1), n('n.status', '=', 'done')])),
                  n(n.ref('n.bot_id'), '=', n.ref('t.direct_bot_id')),
                ]),
              ),
            ),
          ),
        ]);
      })
      .orderBy('m.thread_id')
      .orderBy('m.seq')
      .execute()
  );
}

/**
 * The same rows on Postgres. Every message newer than one in the window is in the window too
 * (seq comes from the thread's counter), so "nothing newer" is "seq at or above the window's
 * newest turn (own settled reply)", and NULL (there is none) keeps every row, as NOT EXISTS does.
 */
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
      or w.last_turn is null or w.seq >= w.last_turn or w.last_own is null or w.seq >= w.last_own
    order by w.thread_id, w.seq`.execute(db);
  return rows;
}
