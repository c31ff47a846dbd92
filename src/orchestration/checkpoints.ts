/**
 * The harness's durable checkpointer: the graph runtime's `StoreCheckpointer`, on the harness's
 * own copies of its two tables (`orchestration_graph_threads`, `orchestration_graph_checkpoints`,
 * migration `orchestration/0002_checkpoints`). A cycle killed mid-way resumes from its last
 * finished node at the next start instead of running its model calls and its agent run again.
 *
 * The module is handed a view of its own tables only, so it does not write the engine's
 * `graph_*` tables; a small Kysely plugin renames the two tables in every query the checkpointer
 * builds, which keeps one tested implementation of the checkpoint contract instead of a copy.
 */
import {
  OperationNodeTransformer,
  type Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  type TableNode,
  type UnknownRow,
} from 'kysely';
import type { Clock } from '../core/clock.js';
import { StoreCheckpointer, type Checkpointer, type GraphTables } from '../graph/index.js';
import type { OrchestrationTables } from './tables.js';

/** The graph runtime's table → the harness's copy. */
export const HARNESS_CHECKPOINT_TABLES: Readonly<Record<keyof GraphTables, keyof OrchestrationTables>> = {
  graph_threads: 'orchestration_graph_threads',
  graph_checkpoints: 'orchestration_graph_checkpoints',
};

class RenameTables extends OperationNodeTransformer {
  constructor(private readonly names: Readonly<Record<string, string>>) {
    super();
  }

  protected override transformTable(node: TableNode, queryId?: QueryId): TableNode {
    const t = super.transformTable(node, queryId);
    const to = this.names[t.table.identifier.name];
    return to ? { ...t, table: { ...t.table, identifier: { ...t.table.identifier, name: to } } } : t;
  }
}

class RenameTablesPlugin implements KyselyPlugin {
  private readonly transformer: RenameTables;
  constructor(names: Readonly<Record<string, string>>) {
    this.transformer = new RenameTables(names);
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.transformer.transformNode(args.node, args.queryId);
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/** A store checkpointer that keeps the harness's threads in the harness's own tables. */
export function harnessCheckpointer(db: Kysely<OrchestrationTables>, clock: Clock): Checkpointer {
  // The plugin rewrites every table name the checkpointer uses, so the typed view it sees is the graph's.
  const renamed = db.withPlugin(new RenameTablesPlugin(HARNESS_CHECKPOINT_TABLES)) as unknown as Kysely<GraphTables>;
  return new StoreCheckpointer(renamed, clock);
}
