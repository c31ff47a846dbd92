/**
 * The checkpointer contract. A thread is one run of a graph: a cursor row (status, next node,
 * merged state, step count) plus one checkpoint row per finished node, keyed `(threadId, seq)`.
 * The runtime serialises state once and hands JSON text over; implementations store it as is.
 *
 * Retention is explicit: nothing is deleted unless `prune` or `pruneFinished` is called.
 */

export type ThreadStatus = 'running' | 'finished' | 'failed';

export interface ThreadSnapshot {
  threadId: string;
  graph: string;
  status: ThreadStatus;
  /** The node that runs next; null once finished. */
  next: string | null;
  /** The merged state after the last finished node (the initial state before any). */
  state: unknown;
  /** Finished steps so far. */
  seq: number;
  /** Set by `markFailed`. */
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface CheckpointRecord {
  threadId: string;
  seq: number;
  node: string;
  /** The node's own partial update. */
  update: unknown;
  /** The merged state after the node. */
  state: unknown;
  at: number;
}

export interface StartThread {
  threadId: string;
  graph: string;
  /** The first node; null when the graph goes straight to END (the thread is finished at once). */
  next: string | null;
  stateJson: string;
}

export interface CheckpointWrite {
  threadId: string;
  /** Must be the thread's current seq + 1; anything else is a concurrent writer (conflict). */
  seq: number;
  node: string;
  updateJson: string;
  stateJson: string;
  /** The node after this one; null finishes the thread. */
  next: string | null;
}

export interface Checkpointer {
  /** The thread's cursor, or undefined when unknown (never started or pruned). */
  load(threadId: string): Promise<ThreadSnapshot | undefined>;
  /** Create the cursor row; a thread that already exists is a `conflict`. */
  start(thread: StartThread): Promise<void>;
  /** Write one finished node and move the cursor, atomically. */
  put(write: CheckpointWrite): Promise<void>;
  /** Give up on a running thread: it will not resume. Returns false when there was no running thread. */
  markFailed(threadId: string, error: unknown): Promise<boolean>;
  /** The thread's checkpoints in step order. */
  checkpoints(threadId: string): Promise<CheckpointRecord[]>;
  /** Running threads of one graph, oldest first (what a restarted process should resume). */
  unfinished(graph: string): Promise<ThreadSnapshot[]>;
  /** Delete a thread and its checkpoints, whatever its status. Returns false when it did not exist. */
  prune(threadId: string): Promise<boolean>;
  /** Delete finished and failed threads last updated at least `olderThanMs` ago (0: all of them). Returns how many. */
  pruneFinished(olderThanMs: number): Promise<number>;
}
