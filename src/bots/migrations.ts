/**
 * The bots host's schema, both dialects. Foreign keys cascade from a bot to what is only its
 * own (its direct thread, tasks, routines, approvals, notes); a group thread outlives a deleted
 * member, and its messages keep their author's id.
 */
import { sql, type Kysely } from 'kysely';
import type { Migration } from '../store/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
type AnyDb = Kysely<any>;

async function init(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('bots_bots')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('persona', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('model_role', 'text', (c) => c.notNull().defaultTo('agent'))
    .addColumn('model', 'text')
    .addColumn('tools', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('bots_threads')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('direct_bot_id', 'text', (c) => c.unique().references('bots_bots.id').onDelete('cascade'))
    .addColumn('next_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_message_at', 'bigint')
    .execute();
  await db.schema.createIndex('bots_threads_updated').ifNotExists().on('bots_threads').column('updated_at').execute();

  await db.schema
    .createTable('bots_thread_members')
    .ifNotExists()
    .addColumn('thread_id', 'text', (c) => c.notNull().references('bots_threads.id').onDelete('cascade'))
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots_bots.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('bots_thread_members_pk', ['thread_id', 'bot_id'])
    .execute();
  await db.schema.createIndex('bots_thread_members_bot').ifNotExists().on('bots_thread_members').column('bot_id').execute();

  await db.schema
    .createTable('bots_tasks')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots_bots.id').onDelete('cascade'))
    .addColumn('thread_id', 'text', (c) => c.notNull().references('bots_threads.id').onDelete('cascade'))
    .addColumn('message_id', 'text')
    .addColumn('request_message_id', 'text')
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('prompt', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('from_bot_id', 'text')
    .addColumn('routine_id', 'text')
    .addColumn('handoff_depth', 'integer', (c) => c.notNull().defaultTo(0))
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
    .addColumn('owner', 'text')
    .addColumn('run_id', 'text')
    .addColumn('review_note', 'text')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  // Open work (queued/working, failed with a resumable kind) by status and kind: the heartbeat's
  // triage and restart repair select through this, never by scanning bots.
  await db.schema.createIndex('bots_tasks_status_kind').ifNotExists().on('bots_tasks').columns(['status', 'error_kind', 'bot_id']).execute();
  await db.schema.createIndex('bots_tasks_bot_status').ifNotExists().on('bots_tasks').columns(['bot_id', 'status']).execute();
  await db.schema.createIndex('bots_tasks_thread').ifNotExists().on('bots_tasks').columns(['thread_id', 'created_at']).execute();
  await db.schema.createIndex('bots_tasks_routine').ifNotExists().on('bots_tasks').columns(['routine_id', 'status']).execute();
  await db.schema.createIndex('bots_tasks_claim').ifNotExists().on('bots_tasks').column('claim_at').execute();

  await db.schema
    .createTable('bots_messages')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('thread_id', 'text', (c) => c.notNull().references('bots_threads.id').onDelete('cascade'))
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
  await db.schema.createIndex('bots_messages_thread_seq').ifNotExists().unique().on('bots_messages').columns(['thread_id', 'seq']).execute();
  // Unread counts: messages after a thread's read mark.
  await db.schema.createIndex('bots_messages_thread_created').ifNotExists().on('bots_messages').columns(['thread_id', 'created_at']).execute();
  await db.schema.createIndex('bots_messages_status').ifNotExists().on('bots_messages').columns(['status', 'role']).execute();
  await db.schema.createIndex('bots_messages_task').ifNotExists().on('bots_messages').column('task_id').execute();
  await db.schema.createIndex('bots_messages_interrupted').ifNotExists().on('bots_messages').columns(['interrupted', 'thread_id']).execute();

  await db.schema
    .createTable('bots_approvals')
    .ifNotExists()
    .addColumn('approval_id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots_bots.id').onDelete('cascade'))
    .addColumn('thread_id', 'text', (c) => c.notNull().references('bots_threads.id').onDelete('cascade'))
    .addColumn('task_id', 'text')
    .addColumn('message_id', 'text')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('arguments', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('answered_at', 'bigint')
    .addColumn('expired_at', 'bigint')
    .execute();
  await db.schema.createIndex('bots_approvals_thread_state').ifNotExists().on('bots_approvals').columns(['thread_id', 'state']).execute();
  // Seed 2 rule 5 (approval_expired): expired approvals of a bot, newest first.
  await db.schema.createIndex('bots_approvals_bot_state').ifNotExists().on('bots_approvals').columns(['bot_id', 'state', 'expired_at']).execute();
  await db.schema.createIndex('bots_approvals_run').ifNotExists().on('bots_approvals').column('run_id').execute();
  await db.schema.createIndex('bots_approvals_state').ifNotExists().on('bots_approvals').columns(['state', 'created_at']).execute();

  await db.schema
    .createTable('bots_routines')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots_bots.id').onDelete('cascade'))
    .addColumn('schedule', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('prompt', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('next_run_at', 'bigint')
    .addColumn('last_run_at', 'bigint')
    .addColumn('last_task_id', 'text')
    .addColumn('last_outcome', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('bots_routines_due').ifNotExists().on('bots_routines').columns(['enabled', 'next_run_at']).execute();
  await db.schema.createIndex('bots_routines_bot').ifNotExists().on('bots_routines').column('bot_id').execute();

  await db.schema
    .createTable('bots_thread_activity')
    .ifNotExists()
    .addColumn('thread_id', 'text', (c) => c.primaryKey().references('bots_threads.id').onDelete('cascade'))
    .addColumn('user_active_at', 'bigint')
    .addColumn('read_at', 'bigint')
    .execute();

  await db.schema
    .createTable('bots_notes')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull().references('bots_bots.id').onDelete('cascade'))
    .addColumn('thread_id', 'text', (c) => c.notNull().references('bots_threads.id').onDelete('cascade'))
    .addColumn('task_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('bots_notes_bot').ifNotExists().on('bots_notes').columns(['bot_id', 'created_at']).execute();
  await db.schema.createIndex('bots_notes_kind').ifNotExists().on('bots_notes').columns(['kind', 'created_at']).execute();
}

/** Every table of the bots host (children first, the order they are dropped in). */
export const BOTS_TABLES = [
  'bots_send_keys',
  'bots_notes',
  'bots_thread_activity',
  'bots_routines',
  'bots_approvals',
  'bots_messages',
  'bots_tasks',
  'bots_thread_members',
  'bots_threads',
  'bots_bots',
] as const;

/**
 * The owner lease: the process that owns an open task renews `owner_seen_at` on every host tick,
 * so a task whose owner died (on this host or another) is found by one indexed select — its lease
 * older than the orphan age — not by asking each row's process whether it still lives.
 */
async function ownerLease(db: AnyDb): Promise<void> {
  await db.schema.alterTable('bots_tasks').addColumn('owner_seen_at', 'bigint').execute();
  // Open tasks were written by their owner when they were last updated: that is their last sign of life.
  await db
    .updateTable('bots_tasks')
    .set({ owner_seen_at: sql`updated_at` })
    .where('owner', 'is not', null)
    .execute();
  await db.schema.createIndex('bots_tasks_owner_lease').ifNotExists().on('bots_tasks').columns(['status', 'owner_seen_at']).execute();
}

export const botsMigrations: Record<string, Migration> = {
  'bots/0001_init': {
    up: (db) => init(db),
    down: async (db) => {
      for (const t of BOTS_TABLES) await db.schema.dropTable(t).ifExists().execute();
    },
  },
  'bots/0002_owner_lease': {
    up: (db) => ownerLease(db),
    down: async (db) => {
      await db.schema.dropIndex('bots_tasks_owner_lease').ifExists().execute();
      await db.schema.alterTable('bots_tasks').dropColumn('owner_seen_at').execute();
    },
  },
  'bots/0003_taken_over': {
    up: async (db) => {
      await db.schema.alterTable('bots_tasks').addColumn('taken_over_from', 'text').execute();
    },
    down: async (db) => {
      await db.schema.alterTable('bots_tasks').dropColumn('taken_over_from').execute();
    },
  },
  'bots/0004_send_keys': {
    up: async (db) => {
      await db.schema
        .createTable('bots_send_keys')
        .ifNotExists()
        .addColumn('thread_id', 'text', (c) => c.notNull().references('bots_threads.id').onDelete('cascade'))
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('dispatched', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // The first send of a key wins, on any worker: a second insert of (thread, key) fails.
      await db.schema.createIndex('bots_send_keys_thread_key').ifNotExists().unique().on('bots_send_keys').columns(['thread_id', 'idempotency_key']).execute();
    },
    down: async (db) => {
      await db.schema.dropTable('bots_send_keys').ifExists().execute();
    },
  },
};
