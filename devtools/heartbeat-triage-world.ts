/**
 * The world the triage bench measures (bench/heartbeat.bench.ts part 1), in a file of its own so
 * a profile of one triage pass (or a scratch script) reads exactly the rows the bench does, and
 * the test of what a pass reads (test/worlds/heartbeat/triage-reads.test.ts) counts them.
 */
import type { Kysely } from 'kysely';
import { defaultBotRow } from '../src/worlds/heartbeat/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench writes every module's tables
type AnyDb = Kysely<any>;

async function insertChunks<T>(db: AnyDb, table: string, rows: T[], chunk = 500): Promise<void> {
  for (let i = 0; i < rows.length; i += chunk)
    await db
      .insertInto(table)
      .values(rows.slice(i, i + chunk))
      .execute();
}

/**
 * N bots, each with its direct thread and a finished conversation (a done task, two messages);
 * 10% known to the heartbeat (a row, asleep); 1% with unfinished work — a task cut off by a
 * restart, its reply marked interrupted — and due now.
 */
export async function populate(db: AnyDb, n: number, now: number): Promise<string[]> {
  const candidates: string[] = [];
  const bots = [];
  const threads = [];
  const members = [];
  const tasks = [];
  const messages = [];
  const beats = [];
  for (let i = 0; i < n; i++) {
    const bot = `bot-${i}`;
    const thread = `thread-${i}`;
    const candidate = i % 100 === 7;
    bots.push({
      id: bot,
      name: `bot${i}`,
      label: `Bot ${i}`,
      description: 'A teammate.',
      persona: '',
      model_role: 'agent',
      model: null,
      tools: '[]',
      created_at: now,
      updated_at: now,
    });
    threads.push({
      id: thread,
      kind: 'direct',
      name: `bot${i}`,
      direct_bot_id: bot,
      next_seq: candidate ? 4 : 2,
      created_at: now,
      updated_at: now,
      last_message_at: now,
    });
    members.push({ thread_id: thread, bot_id: bot, position: 0 });
    const task = (id: string, status: string, kind: string | null, at: number) => ({
      id,
      bot_id: bot,
      thread_id: thread,
      message_id: null,
      request_message_id: null,
      title: 'Prepare the weekly report',
      prompt: 'Prepare the weekly report',
      source: 'user',
      from_bot_id: null,
      routine_id: null,
      handoff_depth: 0,
      status,
      error_kind: kind,
      error: kind ? 'Interrupted when the daemon restarted.' : null,
      checkpoint: null,
      interrupted: kind ? 1 : 0,
      attempts: 0,
      last_heartbeat_at: null,
      claim_token: null,
      claim_at: null,
      claim_by: null,
      owner: null,
      run_id: null,
      review_note: null,
      version: 1,
      created_at: at,
      updated_at: at,
      started_at: at,
      finished_at: at,
    });
    const msg = (seq: number, role: string, text: string, status: string, interrupted = 0, taskId: string | null = null) => ({
      id: `${thread}-m${seq}`,
      thread_id: thread,
      seq,
      role,
      bot_id: role === 'bot' ? bot : null,
      task_id: taskId,
      text,
      status,
      error: null,
      interrupted,
      heartbeat: 0,
      created_at: now - 3600_000 + seq * 1000,
      updated_at: now - 3600_000 + seq * 1000,
    });
    tasks.push(task(`${bot}-done`, 'done', null, now - 3600_000));
    messages.push(msg(1, 'user', 'How is the report going?', 'done'), msg(2, 'bot', 'Sent it this morning.', 'done', 0, `${bot}-done`));
    if (candidate) {
      candidates.push(bot);
      tasks.push(task(`${bot}-cut`, 'failed', 'interrupted', now - 600_000));
      messages.push(msg(3, 'user', 'Prepare the weekly report', 'done'), {
        ...msg(4, 'bot', 'Collected the numbers; writing', 'error', 1, `${bot}-cut`),
        updated_at: now - 600_000,
      });
    }
    if (candidate || i % 10 === 3) beats.push(beatRow(bot, thread, candidate ? now - 1000 : null, now));
  }
  await insertChunks(db, 'bots_bots', bots);
  await insertChunks(db, 'bots_threads', threads);
  await insertChunks(db, 'bots_thread_members', members);
  await insertChunks(db, 'bots_tasks', tasks, 300);
  await insertChunks(db, 'bots_messages', messages);
  await insertChunks(db, 'heartbeat_bots', beats, 300);
  return candidates;
}

function beatRow(bot: string, thread: string, next: number | null, now: number) {
  return { ...defaultBotRow(bot, thread, now), next_heartbeat_at: next };
}
