/**
 * The heartbeat's schema, both dialects. No foreign keys to the bots host's tables (a module
 * owns only its own); rows of a deleted bot are dropped when triage or a listener finds it gone.
 */
import type { Kysely } from 'kysely';
import type { Migration } from '../../store/index.js';
import { HEARTBEAT_TABLES } from './tables.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration shapes tables no type knows yet
type AnyDb = Kysely<any>;

async function init(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('heartbeat_bots')
    .ifNotExists()
    .addColumn('bot_id', 'text', (c) => c.primaryKey())
    .addColumn('thread_id', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('interval_seconds', 'integer')
    .addColumn('quiet_hours', 'text')
    .addColumn('timezone', 'text')
    .addColumn('model', 'text')
    .addColumn('follow_ups_enabled', 'integer')
    .addColumn('auto_resume_on_restart', 'integer')
    .addColumn('max_pulses_per_day', 'integer')
    .addColumn('max_resumes_per_day', 'integer')
    .addColumn('max_task_attempts', 'integer')
    .addColumn('next_heartbeat_at', 'bigint')
    .addColumn('current_interval_ms', 'bigint')
    .addColumn('backoff_until', 'bigint')
    .addColumn('cooldown_until', 'bigint')
    .addColumn('consecutive_errors', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('idle'))
    .addColumn('last_tick_at', 'bigint')
    .addColumn('last_pulse_at', 'bigint')
    .addColumn('last_verdict', 'text')
    .addColumn('last_reason', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('last_outcome', 'text')
    .addColumn('last_error', 'text')
    .addColumn('last_resume_at', 'bigint')
    .addColumn('last_resume_task_id', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('last_log_id', 'text')
    .addColumn('last_log_key', 'text')
    .addColumn('log_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('forced_at', 'bigint')
    .addColumn('stopped_at', 'bigint')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Triage: the due bots, and only those (NULL = nothing unfinished).
  await db.schema.createIndex('heartbeat_bots_due').ifNotExists().on('heartbeat_bots').column('next_heartbeat_at').execute();
  // The persona lines: bots that set follow_ups_enabled for themselves, or are switched off.
  await db.schema.createIndex('heartbeat_bots_followups').ifNotExists().on('heartbeat_bots').column('follow_ups_enabled').execute();
  await db.schema.createIndex('heartbeat_bots_enabled').ifNotExists().on('heartbeat_bots').column('enabled').execute();
  // resume_concurrency: the bots resuming now.
  await db.schema.createIndex('heartbeat_bots_state').ifNotExists().on('heartbeat_bots').column('state').execute();

  await db.schema
    .createTable('heartbeat_settings')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('overrides', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('heartbeat_log')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text')
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('last_at', 'bigint', (c) => c.notNull())
    .addColumn('repeats', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('tier', 'integer', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('rule', 'text')
    .addColumn('skip', 'text')
    .addColumn('verdict', 'text')
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('dispatched', 'text')
    .addColumn('escalated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('model', 'text')
    .addColumn('ms', 'integer')
    .addColumn('error', 'text')
    .addColumn('input_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('heartbeat_log_bot_seq').ifNotExists().on('heartbeat_log').columns(['bot_id', 'seq']).execute();
  await db.schema.createIndex('heartbeat_log_last_at').ifNotExists().on('heartbeat_log').column('last_at').execute();

  await db.schema
    .createTable('heartbeat_checkins')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull())
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('message_id', 'text')
    .addColumn('asked_message_id', 'text')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('question', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('resolved_at', 'bigint')
    .execute();
  await db.schema.createIndex('heartbeat_checkins_state').ifNotExists().on('heartbeat_checkins').columns(['state', 'created_at']).execute();
  await db.schema.createIndex('heartbeat_checkins_thread').ifNotExists().on('heartbeat_checkins').columns(['thread_id', 'state']).execute();
  await db.schema.createIndex('heartbeat_checkins_bot').ifNotExists().on('heartbeat_checkins').columns(['bot_id', 'state']).execute();
  await db.schema.createIndex('heartbeat_checkins_task').ifNotExists().on('heartbeat_checkins').column('task_id').execute();
  await db.schema.createIndex('heartbeat_checkins_asked').ifNotExists().on('heartbeat_checkins').column('asked_message_id').execute();

  await db.schema
    .createTable('heartbeat_followups')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('bot_id', 'text', (c) => c.notNull())
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('note', 'text', (c) => c.notNull())
    .addColumn('due_at', 'bigint')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('heartbeat_followups_bot').ifNotExists().on('heartbeat_followups').columns(['bot_id', 'state']).execute();
  await db.schema.createIndex('heartbeat_followups_task').ifNotExists().on('heartbeat_followups').column('task_id').execute();
  await db.schema.createIndex('heartbeat_followups_thread').ifNotExists().on('heartbeat_followups').columns(['thread_id', 'state']).execute();

  await db.schema
    .createTable('heartbeat_budgets')
    .ifNotExists()
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('day_key', 'text', (c) => c.notNull())
    .addColumn('pulses', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('resumes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('pulse_input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('pulse_output_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('resume_runs', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('resume_calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('resume_input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('resume_output_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('full_calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('full_input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('heartbeat_budgets_pk', ['scope', 'day_key'])
    .execute();
  await db.schema.createIndex('heartbeat_budgets_day').ifNotExists().on('heartbeat_budgets').column('day_key').execute();
}

export const heartbeatMigrations: Record<string, Migration> = {
  'heartbeat/0001_init': {
    up: (db) => init(db),
    down: async (db) => {
      for (const t of [...HEARTBEAT_TABLES].reverse()) await db.schema.dropTable(t).ifExists().execute();
    },
  },
  /** Who answered a check-in and through which face (issue 18 §5: "recorded as answered over MCP"). */
  'heartbeat/0002_checkin_answers': {
    up: async (db) => {
      await db.schema.alterTable('heartbeat_checkins').addColumn('answered_by', 'text').execute();
      await db.schema.alterTable('heartbeat_checkins').addColumn('answered_via', 'text').execute();
    },
    down: async (db) => {
      await db.schema.alterTable('heartbeat_checkins').dropColumn('answered_via').execute();
      await db.schema.alterTable('heartbeat_checkins').dropColumn('answered_by').execute();
    },
  },
  /** The newest resolved check-ins, read for the snapshot's `answered_checkins`, without a scan. */
  'heartbeat/0003_checkins_resolved_index': {
    up: async (db) => {
      await db.schema.createIndex('heartbeat_checkins_resolved').ifNotExists().on('heartbeat_checkins').column('resolved_at').execute();
    },
    down: async (db) => {
      await db.schema.dropIndex('heartbeat_checkins_resolved').ifExists().execute();
    },
  },
};
