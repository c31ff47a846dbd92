/**
 * The runtimes module's schema, both dialects. Everything of a runtime cascades from its row (an
 * unregistered runtime leaves nothing behind); no foreign keys to other modules' tables.
 */
import type { Kysely } from 'kysely';
import type { Migration } from '../store/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
type AnyDb = Kysely<any>;

/** Every table of the module (children first, the order they are dropped in). */
export const RUNTIMES_TABLES = [
  'runtimes_dispatches',
  'runtimes_approvals',
  'runtimes_runs',
  'runtimes_messages',
  'runtimes_tasks',
  'runtimes_threads',
  'runtimes_bots',
  'runtimes_hosts',
] as const;

async function init(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('runtimes_hosts')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('delivery', 'text', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('secret_env', 'text')
    .addColumn('secret_file', 'text')
    .addColumn('instance_id', 'text')
    .addColumn('last_delivery_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('runtimes_bots')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('runtimes_bots_name').ifNotExists().unique().on('runtimes_bots').columns(['runtime_id', 'name']).execute();

  await db.schema
    .createTable('runtimes_threads')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('direct_bot_id', 'text', (c) => c.unique().references('runtimes_bots.id').onDelete('cascade'))
    .addColumn('bot_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('next_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('user_active_at', 'bigint')
    .addColumn('read_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_message_at', 'bigint')
    .execute();

  await db.schema
    .createTable('runtimes_tasks')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('runtimes_bots.id').onDelete('cascade'))
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error_kind', 'text')
    .addColumn('error', 'text')
    .addColumn('checkpoint', 'text')
    .addColumn('interrupted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_heartbeat_at', 'bigint')
    .addColumn('claim_token', 'text')
    .addColumn('claim_at', 'bigint')
    .addColumn('claim_by', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  // The heartbeat's triage selects through these, as it does the bots host's tasks.
  await db.schema.createIndex('runtimes_tasks_status_kind').ifNotExists().on('runtimes_tasks').columns(['status', 'error_kind', 'bot_id']).execute();
  await db.schema.createIndex('runtimes_tasks_bot_status').ifNotExists().on('runtimes_tasks').columns(['bot_id', 'status']).execute();
  await db.schema.createIndex('runtimes_tasks_claim').ifNotExists().on('runtimes_tasks').column('claim_at').execute();
  await db.schema.createIndex('runtimes_tasks_lease').ifNotExists().on('runtimes_tasks').columns(['status', 'lease_until']).execute();

  await db.schema
    .createTable('runtimes_messages')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('thread_id', 'text', (c) => c.notNull().references('runtimes_threads.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text')
    .addColumn('task_id', 'text')
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('interrupted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('heartbeat', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('runtimes_messages_thread_seq').ifNotExists().unique().on('runtimes_messages').columns(['thread_id', 'seq']).execute();
  await db.schema.createIndex('runtimes_messages_status').ifNotExists().on('runtimes_messages').columns(['status', 'role']).execute();

  await db.schema
    .createTable('runtimes_runs')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('runtimes_bots.id').onDelete('cascade'))
    .addColumn('task_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('lease_until', 'bigint')
    .addColumn('calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema.createIndex('runtimes_runs_live').ifNotExists().on('runtimes_runs').columns(['status', 'lease_until']).execute();

  await db.schema
    .createTable('runtimes_approvals')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('runtimes_bots.id').onDelete('cascade'))
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('reason', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('answered_at', 'bigint')
    .addColumn('expired_at', 'bigint')
    .execute();
  await db.schema.createIndex('runtimes_approvals_bot_state').ifNotExists().on('runtimes_approvals').columns(['bot_id', 'state', 'expired_at']).execute();
  await db.schema.createIndex('runtimes_approvals_thread_state').ifNotExists().on('runtimes_approvals').columns(['thread_id', 'state']).execute();

  await db.schema
    .createTable('runtimes_dispatches')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('runtime_id', 'text', (c) => c.notNull().references('runtimes_hosts.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('bot_id', 'text', (c) => c.notNull())
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('note', 'text')
    .addColumn('message_id', 'text')
    .addColumn('attempt', 'integer')
    .addColumn('claim_token', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('deliveries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('acked_by', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .addColumn('acked_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  // Due deliveries (state, next attempt), a task's live resume, a runtime's open dispatches.
  await db.schema.createIndex('runtimes_dispatches_due').ifNotExists().on('runtimes_dispatches').columns(['state', 'next_attempt_at']).execute();
  await db.schema.createIndex('runtimes_dispatches_task').ifNotExists().on('runtimes_dispatches').columns(['task_id', 'state']).execute();
  await db.schema.createIndex('runtimes_dispatches_bot').ifNotExists().on('runtimes_dispatches').columns(['bot_id', 'state']).execute();
  await db.schema.createIndex('runtimes_dispatches_runtime').ifNotExists().on('runtimes_dispatches').columns(['runtime_id', 'created_at']).execute();
}

export const runtimesMigrations: Record<string, Migration> = {
  'runtimes/0001_init': {
    up: (db) => init(db),
    down: async (db) => {
      for (const t of RUNTIMES_TABLES) await db.schema.dropTable(t).ifExists().execute();
    },
  },
};
