/**
 * The graph's vocabulary: node functions, reducers, routers, and the START/END markers.
 * State must be JSON-serialisable whenever a checkpointer is used: it is stored as JSON text
 * after every node and read back on resume.
 */

export const START = '__start__';
export const END = '__end__';

/** A node returns a partial update; the graph's reducer merges it into the state. */
export type NodeFn<S, Ctx> = (state: S, ctx: Ctx) => Partial<S> | Promise<Partial<S>>;

export type Reducer<S> = (state: S, update: Partial<S>) => S;

/** Picks the next node (or END) from the merged state; must return one of its declared targets. */
export type Router<S, Ctx> = (state: S, ctx: Ctx) => string;

export interface StateGraphOptions<S> {
  /** Default: shallow merge `{ ...state, ...update }`. */
  reducer?: Reducer<S>;
}

export interface StepEvent<S> {
  threadId: string | undefined;
  /** 1-based step number within the thread (counts across resumes). */
  seq: number;
  node: string;
  update: Partial<S>;
  state: S;
  /** The node that runs next, or END. */
  next: string;
}

interface BaseInvokeOptions<S> {
  /** Required with a checkpointer: the thread's key. Re-invoking an unfinished thread resumes it. */
  threadId?: string;
  /** Checked between nodes: once aborted, the next node does not start (SubconsciousError 'cancelled'). */
  signal?: AbortSignal;
  /** Called after each node's checkpoint is written (events, logs). Errors thrown here fail the run. */
  onStep?: (event: StepEvent<S>) => void | Promise<void>;
}

/** `ctx` is required unless the graph's context type admits `undefined`. */
export type InvokeOptions<S, Ctx> = BaseInvokeOptions<S> & (undefined extends Ctx ? { ctx?: Ctx } : { ctx: Ctx });

export interface RunResult<S> {
  state: S;
  threadId: string | undefined;
  /** True when the run continued a thread found unfinished in the checkpointer. */
  resumed: boolean;
  /** True when the thread was already finished: nothing ran, `state` is the stored final state. */
  alreadyFinished: boolean;
  /** The nodes this call executed, in order (skipped, already-checkpointed nodes are absent). */
  executed: string[];
  /** Total steps of the thread so far. */
  steps: number;
}
