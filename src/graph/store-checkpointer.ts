/**
 * The checkpointer on the store (SQLite or Postgres). Each finished node is one transaction:
 * the cursor update is guarded by the expected step (`seq = n - 1 AND status = 'running'`) and
 * the checkpoint row is keyed (thread_id, seq), so two processes resuming the same thread can
 * never both record a step — the second gets a `conflict` and its transaction rolls back.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import type { GraphTables, GraphThreadsTable } from './tables.js';
import type { Checkpointer, CheckpointRecord, CheckpointWrite, StartThread, ThreadSnapshot, ThreadStatus } from './checkpointer.js';
import { failureText, pruneCutoff, staleWrite, threadExists } from './checkpoint-rules.js';
import { fromJson } from './json.js';

const DONE: ThreadStatus[] = ['finished', 'failed'];

export class StoreCheckpointer implements Checkpointer {
  constructor(
    private readonly db: Kysely<GraphTables>,
    private readonly clock: Clock,
  ) {}

  async load(threadId: string): Promise<ThreadSnapshot | undefined> {
    const row = await this.db.selectFrom('graph_threads').selectAll().where('thread_id', '=', threadId).executeTakeFirst();
    return row ? snapshot(row) : undefined;
  }

  async start(t: StartThread): Promise<void> {
    const now = this.clock.now();
    const result = await this.db
      .insertInto('graph_threads')
      .values({
        thread_id: t.threadId,
        graph: t.graph,
        status: t.next === null ? 'finished' : 'running',
        next_node: t.next,
        state: t.stateJson,
        seq: 0,
        error: null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.column('thread_id').doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0n) !== 1) throw threadExists(t.threadId);
  }

  async put(w: CheckpointWrite): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction().execute(async (trx) => {
      // Cursor first: on Postgres this takes the row lock, so a concurrent writer waits and then misses.
      const moved = await trx
        .updateTable('graph_threads')
        .set({ seq: w.seq, next_node: w.next, state: w.stateJson, status: w.next === null ? 'finished' : 'running', updated_at: now })
        .where('thread_id', '=', w.threadId)
        .where('seq', '=', w.seq - 1)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== 1) throw staleWrite(w);
      await trx
        .insertInto('graph_checkpoints')
        .values({ thread_id: w.threadId, seq: w.seq, node: w.node, node_update: w.updateJson, state: w.stateJson, at: now })
        .execute();
    });
  }

  async markFailed(threadId: string, error: unknown): Promise<boolean> {
    const result = await this.db
      .updateTable('graph_threads')
      .set({ status: 'failed', error: failureText(error), updated_at: this.clock.now() })
      .where('thread_id', '=', threadId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async checkpoints(threadId: string): Promise<CheckpointRecord[]> {
    const rows = await this.db.selectFrom('graph_checkpoints').selectAll().where('thread_id', '=', threadId).orderBy('seq').execute();
    return rows.map((r) => ({
      threadId: r.thread_id,
      seq: Number(r.seq),
      node: r.node,
      update: fromJson(r.node_update, `update of "${r.thread_id}" step ${r.seq}`),
      state: fromJson(r.state, `state of "${r.thread_id}" step ${r.seq}`),
      at: Number(r.at),
    }));
  }

  async unfinished(graph: string): Promise<ThreadSnapshot[]> {
    const rows = await this.db
      .selectFrom('graph_threads')
      .selectAll()
      .where('graph', '=', graph)
      .where('status', '=', 'running')
      .orderBy('created_at')
      .orderBy('thread_id')
      .execute();
    return rows.map(snapshot);
  }

  async prune(threadId: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('graph_checkpoints').where('thread_id', '=', threadId).execute();
      const gone = await trx.deleteFrom('graph_threads').where('thread_id', '=', threadId).executeTakeFirst();
      return Number(gone.numDeletedRows) > 0;
    });
  }

  async pruneFinished(olderThanMs: number): Promise<number> {
    const cutoff = pruneCutoff(this.clock, olderThanMs);
    return this.db.transaction().execute(async (trx) => {
      const old = trx.selectFrom('graph_threads').select('thread_id').where('status', 'in', DONE).where('updated_at', '<=', cutoff);
      await trx.deleteFrom('graph_checkpoints').where('thread_id', 'in', old).execute();
      const gone = await trx.deleteFrom('graph_threads').where('status', 'in', DONE).where('updated_at', '<=', cutoff).executeTakeFirst();
      return Number(gone.numDeletedRows);
    });
  }
}

function snapshot(row: GraphThreadsTable): ThreadSnapshot {
  return {
    threadId: row.thread_id,
    graph: row.graph,
    status: row.status as ThreadStatus,
    next: row.next_node,
    state: fromJson(row.state, `state of "${row.thread_id}"`),
    seq: Number(row.seq),
    error: row.error,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
