/** A Kysely plugin that counts the statements a connection sends and the rows they return: what benches and read tests count, never time. */
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';

export class StatementCounter implements KyselyPlugin {
  statements = 0;
  rows = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.statements++;
    this.rows += args.result.rows.length;
    return args.result;
  }
  reset(): void {
    this.statements = 0;
    this.rows = 0;
  }
}
