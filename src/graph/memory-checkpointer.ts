/**
 * An in-process checkpointer with the store checkpointer's exact semantics (JSON text, seq
 * check, statuses), for unit tests of graphs and for runs that need no durability.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Checkpointer, CheckpointRecord, CheckpointWrite, StartThread, ThreadSnapshot, ThreadStatus } from './checkpointer.js';
import { failureText, pruneCutoff, staleWrite, threadExists } from './checkpoint-rules.js';

interface ThreadRow {
  threadId: string;
  graph: string;
  status: ThreadStatus;
  next: string | null;
  stateJson: string;
  seq: number;
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

interface CheckpointRow {
  seq: number;
  node: string;
  updateJson: string;
  stateJson: string;
  at: number;
}

export class MemoryCheckpointer implements Checkpointer {
  private readonly threads = new Map<string, ThreadRow>();
  private readonly rows = new Map<string, CheckpointRow[]>();

  constructor(private readonly clock: Clock = systemClock) {}

  async load(threadId: string): Promise<ThreadSnapshot | undefined> {
    const row = this.threads.get(threadId);
    return row ? snapshot(row) : undefined;
  }

  async start(t: StartThread): Promise<void> {
    if (this.threads.has(t.threadId)) throw threadExists(t.threadId);
    const now = this.clock.now();
    this.threads.set(t.threadId, {
      threadId: t.threadId,
      graph: t.graph,
      status: t.next === null ? 'finished' : 'running',
      next: t.next,
      stateJson: t.stateJson,
      seq: 0,
      error: null,
      createdAt: now,
      updatedAt: now,
    });
    this.rows.set(t.threadId, []);
  }

  async put(w: CheckpointWrite): Promise<void> {
    const row = this.threads.get(w.threadId);
    if (!row || row.status !== 'running' || row.seq !== w.seq - 1) throw staleWrite(w);
    const now = this.clock.now();
    this.rows.get(w.threadId)?.push({ seq: w.seq, node: w.node, updateJson: w.updateJson, stateJson: w.stateJson, at: now });
    Object.assign(row, { seq: w.seq, next: w.next, stateJson: w.stateJson, status: w.next === null ? 'finished' : 'running', updatedAt: now });
  }

  async markFailed(threadId: string, error: unknown): Promise<boolean> {
    const row = this.threads.get(threadId);
    if (!row || row.status !== 'running') return false;
    Object.assign(row, { status: 'failed', error: failureText(error), updatedAt: this.clock.now() });
    return true;
  }

  async checkpoints(threadId: string): Promise<CheckpointRecord[]> {
    return (this.rows.get(threadId) ?? []).map((r) => ({
      threadId,
      seq: r.seq,
      node: r.node,
      update: JSON.parse(r.updateJson) as unknown,
      state: JSON.parse(r.stateJson) as unknown,
      at: r.at,
    }));
  }

  async unfinished(graph: string): Promise<ThreadSnapshot[]> {
    return [...this.threads.values()]
      .filter((t) => t.graph === graph && t.status === 'running')
      .sort((a, b) => a.createdAt - b.createdAt || a.threadId.localeCompare(b.threadId))
      .map(snapshot);
  }

  async prune(threadId: string): Promise<boolean> {
    this.rows.delete(threadId);
    return this.threads.delete(threadId);
  }

  async pruneFinished(olderThanMs: number): Promise<number> {
    const cutoff = pruneCutoff(this.clock, olderThanMs);
    let n = 0;
    for (const t of [...this.threads.values()]) {
      if (t.status !== 'running' && t.updatedAt <= cutoff) {
        this.threads.delete(t.threadId);
        this.rows.delete(t.threadId);
        n++;
      }
    }
    return n;
  }
}

function snapshot(row: ThreadRow): ThreadSnapshot {
  return {
    threadId: row.threadId,
    graph: row.graph,
    status: row.status,
    next: row.next,
    state: JSON.parse(row.stateJson) as unknown,
    seq: row.seq,
    error: row.error,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
