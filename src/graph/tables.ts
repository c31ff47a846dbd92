/**
 * The graph runtime's checkpoint tables (base migration `0002_graph`).
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 */
/** A graph run's cursor (src/graph/): where a thread stands, so a killed run resumes. */
export interface GraphThreadsTable {
  thread_id: string;
  graph: string;
  /** running, finished, failed. */
  status: string;
  /** The node that runs next; null once finished. */
  next_node: string | null;
  /** The merged state after the last finished node (JSON). */
  state: string;
  /** Finished steps so far. */
  seq: number;
  error: string | null;
  created_at: number;
  updated_at: number;
}

/** One finished graph node: its update and the merged state after it (both JSON). */
export interface GraphCheckpointsTable {
  thread_id: string;
  seq: number;
  node: string;
  node_update: string;
  state: string;
  at: number;
}

export interface GraphTables {
  graph_threads: GraphThreadsTable;
  graph_checkpoints: GraphCheckpointsTable;
}
