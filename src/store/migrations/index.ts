/**
 * The base migrations: the tables every module stands on (instance state, tick leases, the
 * model-call ledger, graph checkpoints, approvals). Modules bring their own (`WorldModule.tables`).
 * Append one line per new migration; never edit or renumber one that has shipped. The tasks
 * world's shipped migrations (0004, 0006, 0007) moved to its folder with their names.
 */
import type { MigrationSet } from '../migrate.js';
import * as m0001 from './0001_core.js';
import * as m0002 from './0002_graph.js';
import * as m0003 from './0003_agent.js';
import * as m0005 from './0005_approval_owner.js';
import * as m0008 from './0008_cluster_event_log.js';
import * as m0009 from './0009_cluster_shared_secrets.js';
import * as m0010 from './0010_cluster_ledger_pending.js';
import * as m0011 from './0011_approval_answers.js';
import * as m0012 from './0012_model_structured_output.js';

export const baseMigrations: MigrationSet = {
  '0001_core': m0001,
  '0002_graph': m0002,
  '0003_agent': m0003,
  '0005_approval_owner': m0005,
  '0008_cluster_event_log': m0008,
  '0009_cluster_shared_secrets': m0009,
  '0010_cluster_ledger_pending': m0010,
  '0011_approval_answers': m0011,
  '0012_model_structured_output': m0012,
};
