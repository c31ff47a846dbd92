/**
 * JSON text for checkpoints. Failing here (a bigint, a cycle) is a bug in a node, so the error
 * names the graph, the node and what was being stored.
 */
import { SubconsciousError } from '../core/errors.js';

export function toJson(value: unknown, where: { graph: string; node: string; what: 'state' | 'update' }): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new SubconsciousError(
      'invalid_params',
      `Graph "${where.graph}", node "${where.node}": the ${where.what} is not JSON-serialisable: ${(err as Error).message}`,
      {
        cause: err,
        hint: 'Checkpointed state must be plain JSON (no bigint, functions, cycles or class instances).',
        details: { field: where.what, graph: where.graph, node: where.node },
      },
    );
  }
  if (text === undefined) {
    throw new SubconsciousError('invalid_params', `Graph "${where.graph}", node "${where.node}": the ${where.what} serialised to nothing.`, {
      details: { field: where.what, graph: where.graph, node: where.node },
    });
  }
  return text;
}

export function fromJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new SubconsciousError('conflict', `Stored graph ${where} is not valid JSON: ${(err as Error).message}`, {
      cause: err,
      hint: 'The checkpoint row was edited or truncated; prune the thread to start it over.',
    });
  }
}
