/**
 * Seed 1's three tables for the tasks world. Beyond the seed's columns:
 * - tasks: `needs_tools` (write intent), `origin` (default | heartbeat_md | user) and
 *   `origin_present` (is its HEARTBEAT.md line still there), `updated_at`;
 * - log: `tick_id` (one row per task per tick, reused on resume), `task_title` (kept when the
 *   task is removed), the model's own `model_decision` and `reason`, and the per-row execution
 *   state (`exec_state`, `exec_mode`, `exec_started_at`, `run_id`) that makes a resumed commit
 *   never execute a task twice;
 * - escalations: `skill_related`, the `analysis` text the recommendation came from.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('subconscious_tasks')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('origin_present', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('recurrence', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('needs_tools', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_run_at', 'bigint')
    .addColumn('next_run_at', 'bigint')
    .addColumn('completed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subconscious_tasks_due').ifNotExists().on('subconscious_tasks').columns(['enabled', 'completed', 'next_run_at']).execute();

  await db.schema
    .createTable('subconscious_log')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('task_title', 'text', (c) => c.notNull())
    .addColumn('tick_id', 'text', (c) => c.notNull())
    .addColumn('tick_at', 'bigint', (c) => c.notNull())
    .addColumn('decision', 'text', (c) => c.notNull())
    .addColumn('model_decision', 'text')
    .addColumn('reason', 'text')
    .addColumn('result', 'text')
    .addColumn('duration_ms', 'integer')
    .addColumn('exec_state', 'text', (c) => c.notNull().defaultTo('none'))
    .addColumn('exec_mode', 'text')
    .addColumn('exec_started_at', 'bigint')
    .addColumn('run_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subconscious_log_tick_task').ifNotExists().unique().on('subconscious_log').columns(['tick_id', 'task_id']).execute();
  await db.schema.createIndex('subconscious_log_created').ifNotExists().on('subconscious_log').column('created_at').execute();
  await db.schema.createIndex('subconscious_log_decision').ifNotExists().on('subconscious_log').columns(['decision', 'updated_at']).execute();
  await db.schema.createIndex('subconscious_log_task').ifNotExists().on('subconscious_log').column('task_id').execute();

  await db.schema
    .createTable('subconscious_escalations')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('log_id', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('analysis', 'text')
    .addColumn('priority', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('skill_related', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('resolved_at', 'bigint')
    .execute();
  // One escalation per log row: a resumed commit cannot raise the same one twice.
  await db.schema.createIndex('subconscious_escalations_log').ifNotExists().unique().on('subconscious_escalations').column('log_id').execute();
  await db.schema.createIndex('subconscious_escalations_status').ifNotExists().on('subconscious_escalations').columns(['status', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('subconscious_escalations').ifExists().execute();
  await db.schema.dropTable('subconscious_log').ifExists().execute();
  await db.schema.dropTable('subconscious_tasks').ifExists().execute();
}
