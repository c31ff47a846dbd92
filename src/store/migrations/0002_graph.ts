/**
 * The graph runtime's checkpoints (src/graph/). A thread is one run of a graph: its cursor row
 * in `graph_threads`, one `graph_checkpoints` row per finished node, keyed (thread_id, seq).
 * Rows are deleted only by explicit retention (prune / pruneFinished).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('graph_threads')
    .ifNotExists()
    .addColumn('thread_id', 'text', (c) => c.primaryKey())
    .addColumn('graph', 'text', (c) => c.notNull())
    // running | finished | failed
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('next_node', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // unfinished(graph) at start, pruneFinished by age.
  await db.schema.createIndex('graph_threads_graph_status').ifNotExists().on('graph_threads').columns(['graph', 'status', 'created_at']).execute();
  await db.schema.createIndex('graph_threads_status_updated').ifNotExists().on('graph_threads').columns(['status', 'updated_at']).execute();

  await db.schema
    .createTable('graph_checkpoints')
    .ifNotExists()
    .addColumn('thread_id', 'text', (c) => c.notNull().references('graph_threads.thread_id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('node_update', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('graph_checkpoints_pk', ['thread_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('graph_checkpoints').ifExists().execute();
  await db.schema.dropTable('graph_threads').ifExists().execute();
}
