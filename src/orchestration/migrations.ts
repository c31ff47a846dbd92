/** The harness's tables (tables.ts), the same on SQLite and Postgres. */
import type { Migration } from '../store/migrate.js';

export const orchestrationMigrations: Record<string, Migration> = {
  'orchestration/0001_init': {
    async up(db) {
      await db.schema
        .createTable('orchestration_state')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('cycle', 'integer', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('orchestration_cycles')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'integer', (c) => c.notNull().unique())
        .addColumn('channel', 'text', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('owner', 'text')
        .addColumn('cron_due', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('path', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('gate', 'text')
        .addColumn('evictions', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('escalation', 'text')
        .addColumn('response', 'text')
        .addColumn('directive_id', 'text')
        .addColumn('directive_text', 'text')
        .addColumn('steering', 'text')
        .addColumn('context_utilization', 'double precision')
        .addColumn('event_log', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('started_at', 'bigint')
        .addColumn('finished_at', 'bigint')
        .execute();
      // What a restarted process must pick up: unfinished cycles in order.
      await db.schema.createIndex('orchestration_cycles_status').ifNotExists().on('orchestration_cycles').columns(['status', 'seq']).execute();

      await db.schema
        .createTable('orchestration_world_diff')
        .ifNotExists()
        .addColumn('cycle_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('idx', 'integer', (c) => c.notNull())
        .addColumn('signature', 'text', (c) => c.notNull())
        .addColumn('entity', 'text', (c) => c.notNull())
        .addColumn('mutation', 'text', (c) => c.notNull())
        .addColumn('delta', 'double precision', (c) => c.notNull())
        .addColumn('critical', 'integer', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('orchestration_world_diff_pk', ['seq', 'idx'])
        .execute();
      await db.schema.createIndex('orchestration_world_diff_cycle').ifNotExists().on('orchestration_world_diff').column('cycle_id').execute();

      await db.schema
        .createTable('orchestration_history')
        .ifNotExists()
        .addColumn('cycle_id', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'integer', (c) => c.notNull().unique())
        .addColumn('input_tokens', 'integer', (c) => c.notNull())
        .addColumn('budget_tokens', 'integer', (c) => c.notNull())
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('summary_tokens', 'integer', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('truncated', 'integer', (c) => c.notNull())
        .addColumn('forwarded', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    async down(db) {
      for (const table of ['orchestration_history', 'orchestration_world_diff', 'orchestration_cycles', 'orchestration_state']) {
        await db.schema.dropTable(table).ifExists().execute();
      }
    },
  },
  // The running cycle's graph checkpoints (checkpoints.ts): the graph runtime's two tables, the harness's copy.
  'orchestration/0002_checkpoints': {
    async up(db) {
      await db.schema
        .createTable('orchestration_graph_threads')
        .ifNotExists()
        .addColumn('thread_id', 'text', (c) => c.primaryKey())
        .addColumn('graph', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('next_node', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('orchestration_graph_threads_graph_status')
        .ifNotExists()
        .on('orchestration_graph_threads')
        .columns(['graph', 'status', 'created_at'])
        .execute();
      await db.schema
        .createIndex('orchestration_graph_threads_status_updated')
        .ifNotExists()
        .on('orchestration_graph_threads')
        .columns(['status', 'updated_at'])
        .execute();
      await db.schema
        .createTable('orchestration_graph_checkpoints')
        .ifNotExists()
        .addColumn('thread_id', 'text', (c) => c.notNull().references('orchestration_graph_threads.thread_id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('node', 'text', (c) => c.notNull())
        .addColumn('node_update', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('orchestration_graph_checkpoints_pk', ['thread_id', 'seq'])
        .execute();
      // Retention deletes finished cycles by number (seq) and age (created_at).
      await db.schema.createIndex('orchestration_cycles_created').ifNotExists().on('orchestration_cycles').column('created_at').execute();
    },
    async down(db) {
      await db.schema.dropIndex('orchestration_cycles_created').ifExists().execute();
      await db.schema.dropTable('orchestration_graph_checkpoints').ifExists().execute();
      await db.schema.dropTable('orchestration_graph_threads').ifExists().execute();
    },
  },
};
