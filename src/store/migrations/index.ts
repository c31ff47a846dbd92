/**
 * Numbered migrations, applied in name order at start. Append one line per new migration;
 * never edit or renumber one that has shipped.
 */
import type { Migration } from '../migrate.js';
import * as m0001 from './0001_core.js';
import * as m0002 from './0002_graph.js';
import * as m0003 from './0003_agent.js';
import * as m0004 from './0004_tasks.js';
import * as m0005 from './0005_approval_owner.js';
import * as m0006 from './0006_log_exec_owner.js';
import * as m0007 from './0007_task_order_and_user_choice.js';

export const migrations: Record<string, Migration> = {
  '0001_core': m0001,
  '0002_graph': m0002,
  '0003_agent': m0003,
  '0004_tasks': m0004,
  '0005_approval_owner': m0005,
  '0006_log_exec_owner': m0006,
  '0007_task_order_and_user_choice': m0007,
};
