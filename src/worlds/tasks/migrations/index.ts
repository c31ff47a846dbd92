/**
 * The tasks world's migrations. The first three shipped before worlds were modules and keep their
 * names (databases already record them); new ones are named `tasks/NNNN_name`.
 */
import type { MigrationSet } from '../../../store/index.js';
import * as m0004 from './0004_tasks.js';
import * as m0006 from './0006_log_exec_owner.js';
import * as m0007 from './0007_task_order_and_user_choice.js';
import * as m0008 from './0008_write_rights_review.js';
import * as m0009 from './0009_task_dedupe_key.js';
import * as m0010 from './0010_unchanged_skip.js';
import * as m0011 from './0011_log_details.js';
import * as m0012 from './0012_task_removed_at.js';
import * as m0013 from './0013_escalation_answers.js';
import * as m0014 from './0014_log_exec_state_index.js';
import * as m0015 from './0015_log_exec_checkpoint.js';

export const tasksMigrations: MigrationSet = {
  '0004_tasks': m0004,
  '0006_log_exec_owner': m0006,
  '0007_task_order_and_user_choice': m0007,
  'tasks/0008_write_rights_review': m0008,
  'tasks/0009_task_dedupe_key': m0009,
  'tasks/0010_unchanged_skip': m0010,
  'tasks/0011_log_details': m0011,
  'tasks/0012_task_removed_at': m0012,
  'tasks/0013_escalation_answers': m0013,
  'tasks/0014_log_exec_state_index': m0014,
  'tasks/0015_log_exec_checkpoint': m0015,
};

export const TASKS_TABLES = ['subconscious_tasks', 'subconscious_log', 'subconscious_escalations', 'tasks_ticks'] as const;

/** Names that shipped before worlds were modules (seed 1's tables and migrations): databases hold them. */
export const TASKS_SHIPPED = {
  tables: ['subconscious_tasks', 'subconscious_log', 'subconscious_escalations'],
  migrations: ['0004_tasks', '0006_log_exec_owner', '0007_task_order_and_user_choice'],
} as const;
