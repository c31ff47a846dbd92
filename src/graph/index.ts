/**
 * The small state-graph runtime: typed nodes returning partial updates, a reducer, plain and
 * conditional edges, a step limit, and checkpointers (in memory, or on the store) that let a
 * killed run resume without re-running finished nodes. See DESIGN.md.
 */
export { START, END, type NodeFn, type Reducer, type Router, type StateGraphOptions, type InvokeOptions, type RunResult, type StepEvent } from './types.js';
export { StateGraph, DEFAULT_STEP_LIMIT, type CompileOptions } from './state-graph.js';
export { CompiledGraph } from './compiled.js';
export type { Checkpointer, ThreadSnapshot, ThreadStatus, CheckpointRecord, CheckpointWrite, StartThread } from './checkpointer.js';
export { MemoryCheckpointer } from './memory-checkpointer.js';
export { StoreCheckpointer } from './store-checkpointer.js';
export type { GraphTables, GraphThreadsTable, GraphCheckpointsTable } from './tables.js';
