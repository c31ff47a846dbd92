import type { Kysely } from 'kysely';
import type { Migration } from '../../store/index.js';

export const MEMORY_WORLD_TABLES = ['memory_notifications', 'memory_todos', 'memory_goals'] as const;

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
};
