import type { Kysely } from 'kysely';
import type { Migration } from '../../store/index.js';

export const MEMORY_WORLD_TABLES = ['memory_notifications', 'memory_todos', 'memory_goals', 'memory_delegations'] as const;

/** Named after the memory store's `memory/0001_store`, which it does not depend on. */
export const memoryWorldMigrations: Record<string, Migration> = {
  'memory/0002_world': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('memory_notifications')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('thread', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('priority', 'text', (c) => c.notNull())
        .addColumn('tick_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('memory_notifications_thread').on('memory_notifications').columns(['thread', 'created_at']).execute();
      for (const table of ['memory_todos', 'memory_goals']) {
        await db.schema
          .createTable(table)
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('title', 'text', (c) => c.notNull())
          .addColumn(table === 'memory_todos' ? 'note' : 'description', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('tick_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex(`${table}_status`).on(table).columns(['status', 'updated_at']).execute();
      }
    },
  },
  /** The decision agent's `delegate` proposals (seed 4: delegation), each waiting for a person. */
  'memory/0003_seed345_delegations': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('memory_delegations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('todo_id', 'text', (c) => c.notNull())
        .addColumn('todo_title', 'text', (c) => c.notNull())
        .addColumn('bot_id', 'text', (c) => c.notNull())
        .addColumn('bot_name', 'text', (c) => c.notNull())
        .addColumn('instruction', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('task_id', 'text')
        .addColumn('thread_id', 'text')
        .addColumn('error', 'text')
        .addColumn('tick_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('memory_delegations_status').on('memory_delegations').columns(['status', 'updated_at']).execute();
    },
  },
};
