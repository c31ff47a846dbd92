/** The steering world's tables (tables.ts), the same on SQLite and Postgres. */
import type { Migration } from '../../store/migrate.js';

export const steeringMigrations: Record<string, Migration> = {
  'steering/0001_init': {
    async up(db) {
      await db.schema
        .createTable('steering_directives')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tick_id', 'text', (c) => c.notNull().unique())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('expires_after_cycles', 'integer', (c) => c.notNull())
        .addColumn('cycle', 'integer', (c) => c.notNull())
        .addColumn('expires_at_cycle', 'integer', (c) => c.notNull())
        .addColumn('reviewed_from_seq', 'integer', (c) => c.notNull())
        .addColumn('reviewed_to_seq', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // The injection lookup: the newest directive whose window covers a cycle.
      await db.schema.createIndex('steering_directives_window').ifNotExists().on('steering_directives').columns(['expires_at_cycle', 'created_at']).execute();
      await db.schema.createIndex('steering_directives_created').ifNotExists().on('steering_directives').column('created_at').execute();

      await db.schema
        .createTable('steering_cursor')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('reviewed_seq', 'integer', (c) => c.notNull())
        .addColumn('reviews', 'integer', (c) => c.notNull())
        .addColumn('last_outcome', 'text')
        .addColumn('last_rows', 'integer', (c) => c.notNull())
        .addColumn('last_tick_id', 'text')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('steering_cursor').ifExists().execute();
      await db.schema.dropTable('steering_directives').ifExists().execute();
    },
  },
};
