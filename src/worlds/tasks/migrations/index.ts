/**
 * The tasks world's migrations. The first three shipped before worlds were modules and keep their
 * names (databases already record them); new ones are named `tasks/NNNN_name`.
 */
import type { MigrationSet } from '../../../store/index.js';
import * as m0004 from './0004_tasks.js';
import * as m0006 from './0006_log_exec_owner.js';
import * as m0007 from './0007_task_order_and_user_choice.js';

export const tasksMigrations: MigrationSet = {
  '0004_tasks': m0004,
  '0006_log_exec_owner': m0006,
  '0007_task_order_and_user_choice': m0007,
};

export const TASKS_TABLES = ['subconscious_tasks', 'subconscious_log', 'subconscious_escalations'] as const;
