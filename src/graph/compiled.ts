/**
 * The runtime. With a checkpointer, every finished node is written (its update and the merged
 * state) together with the thread's cursor, so a run killed at any point resumes at the first
 * node that had not finished — finished nodes never run twice.
 *
 * A node that throws leaves its thread `running` (resumable, like a crash); whoever owns the
 * thread decides whether to re-invoke it or give up with `checkpointer.markFailed`.
 */
import { SubconsciousError } from '../core/errors.js';
import type { Checkpointer, ThreadSnapshot } from './checkpointer.js';
import { fromJson, toJson } from './json.js';
import { END, START, type InvokeOptions, type NodeFn, type Reducer, type Router, type RunResult } from './types.js';

export type Edge<S, Ctx> = { kind: 'plain'; to: string } | { kind: 'conditional'; route: Router<S, Ctx>; targets: ReadonlySet<string> };

export interface GraphSpec<S, Ctx> {
  name: string;
  nodes: ReadonlyMap<string, NodeFn<S, Ctx>>;
  edges: ReadonlyMap<string, Edge<S, Ctx>>;
  reducer: Reducer<S>;
  stepLimit: number;
  checkpointer: Checkpointer | undefined;
}

/** `opts` may be left out only when the context type admits `undefined`. */
type InvokeArgs<S, Ctx> = undefined extends Ctx ? [opts?: InvokeOptions<S, Ctx>] : [opts: InvokeOptions<S, Ctx>];

interface Cursor<S> {
  state: S;
  next: string;
  seq: number;
}

export class CompiledGraph<S extends object, Ctx> {
  constructor(private readonly spec: GraphSpec<S, Ctx>) {}

  get name(): string {
    return this.spec.name;
  }

  get checkpointer(): Checkpointer | undefined {
    return this.spec.checkpointer;
  }

  get nodeNames(): string[] {
    return [...this.spec.nodes.keys()];
  }

  /** Run (or resume) a thread and return its final state. */
  async invoke(initial: S, ...args: InvokeArgs<S, Ctx>): Promise<S> {
    return (await this.run(initial, ...args)).state;
  }

  /** Like `invoke`, with what happened: resumed or not, which nodes ran. */
  async run(initial: S, ...args: InvokeArgs<S, Ctx>): Promise<RunResult<S>> {
    const opts: InvokeOptions<S, Ctx> | undefined = args[0];
    const ctx = (opts as { ctx?: Ctx } | undefined)?.ctx as Ctx;
    const threadId = opts?.threadId;
    const cp = this.spec.checkpointer;
    if (cp && !threadId) {
      throw new SubconsciousError('invalid_params', `Graph "${this.spec.name}" has a checkpointer: invoke needs a threadId.`, {
        details: { field: 'threadId' },
      });
    }

    const existing = cp && threadId ? await cp.load(threadId) : undefined;
    const base = { threadId, executed: [] as string[] };
    let cursor: Cursor<S>;
    let resumed = false;
    if (existing) {
      this.checkResumable(existing);
      if (existing.status === 'finished') {
        return { ...base, state: existing.state as S, resumed: false, alreadyFinished: true, steps: existing.seq };
      }
      cursor = { state: existing.state as S, next: existing.next as string, seq: existing.seq };
      resumed = true;
    } else {
      this.checkAborted(opts?.signal, START);
      const first = this.nextAfter(START, initial, ctx);
      let state = initial;
      if (cp && threadId) {
        const stateJson = toJson(initial, { graph: this.spec.name, node: START, what: 'state' });
        await cp.start({ threadId, graph: this.spec.name, next: first === END ? null : first, stateJson });
        // Continue on the stored form so a fresh run sees exactly what a resumed one would.
        state = fromJson(stateJson, 'state') as S;
      }
      cursor = { state, next: first, seq: 0 };
    }

    while (cursor.next !== END) {
      const node = cursor.next;
      this.checkAborted(opts?.signal, node);
      if (cursor.seq >= this.spec.stepLimit) {
        throw new SubconsciousError(
          'graph_step_limit',
          `Graph "${this.spec.name}" reached its step limit (${this.spec.stepLimit}) before "${node}": a cycle that never ends?`,
          {
            hint: 'Check the conditional edges for a loop without an exit, or raise stepLimit.',
            details: { graph: this.spec.name, node, threadId },
          },
        );
      }
      const fn = this.spec.nodes.get(node) as NodeFn<S, Ctx>;
      const update = checkUpdate(await fn(cursor.state, ctx), this.spec.name, node);
      base.executed.push(node);
      let state = this.spec.reducer(cursor.state, update);
      const next = this.nextAfter(node, state, ctx);
      const seq = cursor.seq + 1;
      if (cp && threadId) {
        const stateJson = toJson(state, { graph: this.spec.name, node, what: 'state' });
        const updateJson = toJson(update, { graph: this.spec.name, node, what: 'update' });
        await cp.put({ threadId, seq, node, updateJson, stateJson, next: next === END ? null : next });
        state = fromJson(stateJson, 'state') as S;
      }
      cursor = { state, next, seq };
      await opts?.onStep?.({ threadId, seq, node, update, state, next });
    }
    return { ...base, state: cursor.state, resumed, alreadyFinished: false, steps: cursor.seq };
  }

  private checkResumable(thread: ThreadSnapshot): void {
    const where = `Thread "${thread.threadId}"`;
    if (thread.graph !== this.spec.name) {
      throw new SubconsciousError('conflict', `${where} belongs to graph "${thread.graph}", not "${this.spec.name}".`, {
        hint: 'Use a thread id that is unique per graph.',
        details: { field: 'threadId' },
      });
    }
    if (thread.status === 'failed') {
      throw new SubconsciousError('conflict', `${where} was marked failed${thread.error ? ` (${thread.error})` : ''}; it will not resume.`, {
        hint: 'Start a new thread, or prune this one to reuse its id.',
        details: { field: 'threadId' },
      });
    }
    if (thread.status === 'running' && (thread.next === null || !this.spec.nodes.has(thread.next))) {
      throw new SubconsciousError('conflict', `${where} stopped before node "${thread.next}", which graph "${this.spec.name}" no longer has.`, {
        hint: 'The graph changed since the thread was checkpointed: mark it failed or prune it.',
        details: { field: 'threadId' },
      });
    }
  }

  private checkAborted(signal: AbortSignal | undefined, before: string): void {
    if (signal?.aborted) {
      throw new SubconsciousError('cancelled', `Graph "${this.spec.name}" was cancelled before "${before}".`, { cause: signal.reason });
    }
  }

  private nextAfter(from: string, state: S, ctx: Ctx): string {
    const edge = this.spec.edges.get(from) as Edge<S, Ctx>;
    if (edge.kind === 'plain') return edge.to;
    const to = edge.route(state, ctx);
    if (!edge.targets.has(to)) {
      throw new SubconsciousError(
        'graph_invalid',
        `Graph "${this.spec.name}": the router after "${from}" returned "${to}", not one of ${[...edge.targets].map((t) => `"${t}"`).join(', ')}.`,
        {
          hint: 'Declare every value the router can return in its targets.',
          details: { field: 'route', node: from },
        },
      );
    }
    return to;
  }
}

/** A node may return nothing (no change); anything else must be a plain object. */
function checkUpdate<S>(value: unknown, graph: string, node: string): Partial<S> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new SubconsciousError(
      'graph_invalid',
      `Graph "${graph}", node "${node}" returned ${Array.isArray(value) ? 'an array' : typeof value}, not a partial state object.`,
      {
        details: { field: 'update', node },
      },
    );
  }
  return value as Partial<S>;
}
