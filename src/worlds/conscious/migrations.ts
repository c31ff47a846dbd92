import type { Kysely } from 'kysely';
import type { Migration } from '../../store/index.js';

export const CONSCIOUS_TABLES = ['conscious_actionables', 'conscious_runs', 'conscious_dismissed'] as const;

export const consciousMigrations: Record<string, Migration> = {
  'conscious/0001_init': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('conscious_actionables')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('priority', 'text', (c) => c.notNull())
        .addColumn('priority_rank', 'integer', (c) => c.notNull())
        .addColumn('actionable', 'integer', (c) => c.notNull())
        .addColumn('requires_confirmation', 'integer', (c) => c.notNull())
        .addColumn('has_complex_action', 'integer', (c) => c.notNull())
        .addColumn('source_label', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('state_changed_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('conscious_actionables_list').on('conscious_actionables').columns(['state', 'priority_rank', 'last_seen_at']).execute();
      await db.schema.createIndex('conscious_actionables_seen').on('conscious_actionables').column('last_seen_at').execute();
    },
  },
  'conscious/0002_runs': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('conscious_runs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('finished_at', 'bigint')
        .addColumn('namespaces', 'text', (c) => c.notNull())
        .addColumn('documents', 'integer', (c) => c.notNull())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addColumn('new', 'integer', (c) => c.notNull())
        .addColumn('cut', 'integer', (c) => c.notNull())
        .addColumn('duration_ms', 'bigint')
        .addColumn('error', 'text')
        .addColumn('error_kind', 'text')
        .execute();
      await db.schema.createIndex('conscious_runs_started').on('conscious_runs').column('started_at').execute();
    },
  },
  'conscious/0003_dismissed': {
    // A dismissed item pruned after the retention keeps its id here, so it stays dismissed when extracted again.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('conscious_dismissed')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('dismissed_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  'conscious/0004_source_document': {
    // The recalled memory document an actionable came from (source-match.ts).
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
    async up(db: Kysely<any>) {
      await db.schema.alterTable('conscious_actionables').addColumn('source_namespace', 'text').execute();
      await db.schema.alterTable('conscious_actionables').addColumn('source_external_id', 'text').execute();
      await db.schema.alterTable('conscious_actionables').addColumn('source_title', 'text').execute();
    },
  },
};
