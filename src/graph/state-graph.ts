/**
 * The builder. Deliberately small: one outgoing edge per node (plain or conditional), no
 * fan-out or parallel branches — a tick is short and linear, and a single cursor per thread is
 * what makes resume-after-crash simple and exact.
 */
import { SubconsciousError } from '../core/errors.js';
import type { Checkpointer } from './checkpointer.js';
import { CompiledGraph, type Edge, type GraphSpec } from './compiled.js';
import { END, START, type NodeFn, type Reducer, type Router, type StateGraphOptions } from './types.js';

export const DEFAULT_STEP_LIMIT = 50;

export interface CompileOptions {
  /** Stored on every thread; a thread is only ever resumed by the graph of the same name. */
  name: string;
  checkpointer?: Checkpointer | undefined;
  /** Maximum node executions per thread (counted across resumes). Default 50. */
  stepLimit?: number | undefined;
}

function invalid(message: string, field: string): SubconsciousError {
  return new SubconsciousError('graph_invalid', message, { details: { field }, hint: 'Fix the graph definition; this is a programming error.' });
}

const shallowMerge = <S>(state: S, update: Partial<S>): S => ({ ...state, ...update });

export class StateGraph<S extends object, Ctx = undefined> {
  private readonly nodes = new Map<string, NodeFn<S, Ctx>>();
  private readonly edges = new Map<string, Edge<S, Ctx>>();
  private readonly reducer: Reducer<S>;

  constructor(opts: StateGraphOptions<S> = {}) {
    this.reducer = opts.reducer ?? shallowMerge;
  }

  addNode(name: string, fn: NodeFn<S, Ctx>): this {
    if (!name || name === START || name === END) throw invalid(`Node name "${name}" is empty or reserved.`, 'name');
    if (this.nodes.has(name)) throw invalid(`Node "${name}" is added twice.`, 'name');
    this.nodes.set(name, fn);
    return this;
  }

  addEdge(from: string, to: string): this {
    this.setEdge(from, { kind: 'plain', to });
    return this;
  }

  /** `targets` lists every value `route` may return (node names or END); checked at compile and at run time. */
  addConditionalEdges(from: string, route: Router<S, Ctx>, targets: readonly string[]): this {
    if (targets.length === 0) throw invalid(`Conditional edges from "${from}" declare no targets.`, 'targets');
    this.setEdge(from, { kind: 'conditional', route, targets: new Set(targets) });
    return this;
  }

  compile(opts: CompileOptions): CompiledGraph<S, Ctx> {
    if (!opts.name) throw invalid('A compiled graph needs a name.', 'name');
    const stepLimit = opts.stepLimit ?? DEFAULT_STEP_LIMIT;
    if (!Number.isInteger(stepLimit) || stepLimit < 1) throw invalid(`stepLimit must be a positive integer (got ${stepLimit}).`, 'stepLimit');
    this.validate(opts.name);
    const spec: GraphSpec<S, Ctx> = {
      name: opts.name,
      nodes: new Map(this.nodes),
      edges: new Map(this.edges),
      reducer: this.reducer,
      stepLimit,
      checkpointer: opts.checkpointer,
    };
    return new CompiledGraph(spec);
  }

  private setEdge(from: string, edge: Edge<S, Ctx>): void {
    if (from === END) throw invalid('END has no outgoing edges.', 'from');
    if (this.edges.has(from)) {
      throw invalid(`"${from}" already has an outgoing edge; one per node (use conditional edges to branch).`, 'from');
    }
    this.edges.set(from, edge);
  }

  private validate(name: string): void {
    const where = `Graph "${name}"`;
    if (!this.edges.has(START)) throw invalid(`${where} has no entry: add an edge from START.`, 'entry');
    const targetsOf = (edge: Edge<S, Ctx>): string[] => (edge.kind === 'plain' ? [edge.to] : [...edge.targets]);
    for (const [from, edge] of this.edges) {
      if (from !== START && !this.nodes.has(from)) throw invalid(`${where}: an edge starts at unknown node "${from}".`, 'from');
      for (const to of targetsOf(edge)) {
        if (to === START) throw invalid(`${where}: an edge from "${from}" leads back to START.`, 'to');
        if (to !== END && !this.nodes.has(to)) throw invalid(`${where}: an edge from "${from}" names unknown node "${to}".`, 'to');
      }
    }
    for (const node of this.nodes.keys()) {
      if (!this.edges.has(node)) throw invalid(`${where}: node "${node}" has no outgoing edge (add one, to END if it is the last).`, 'edges');
    }
    // Unreachable nodes are dead code at best and a mis-wired edge at worst.
    const seen = new Set<string>();
    const queue = [START];
    while (queue.length > 0) {
      const at = queue.pop() as string;
      const edge = this.edges.get(at);
      if (!edge) continue;
      for (const to of targetsOf(edge)) {
        if (to !== END && !seen.has(to)) {
          seen.add(to);
          queue.push(to);
        }
      }
    }
    for (const node of this.nodes.keys()) {
      if (!seen.has(node)) throw invalid(`${where}: node "${node}" cannot be reached from START.`, 'edges');
    }
  }
}
