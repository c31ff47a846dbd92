/**
 * Per-bot job queues with two priorities (seed 2 §7.4): `normal` jobs (people, routines,
 * handoffs) always start before `low` ones (heartbeat resumes); within a priority, first in
 * first out.
 */
import type { TaskSource } from '../protocol/bots.js';

export type JobPriority = 'normal' | 'low';

export interface Job {
  id: string;
  botId: string;
  threadId: string;
  taskId: string;
  /** The bot message the run streams into. */
  messageId: string;
  priority: JobPriority;
  source: TaskSource;
  /** The final user turn (host-trusted), or null when the thread's last message is the request. */
  request: string | null;
  claimToken: string | null;
  purpose: string;
  enqueuedAt: number;
}

export class JobQueues {
  private readonly queues = new Map<string, Job[]>();

  push(job: Job): void {
    const q = this.queues.get(job.botId) ?? [];
    // Before the first job of a lower priority: normal jobs overtake waiting low ones.
    const at = job.priority === 'normal' ? q.findIndex((j) => j.priority === 'low') : -1;
    if (at === -1) q.push(job);
    else q.splice(at, 0, job);
    this.queues.set(job.botId, q);
  }

  shift(botId: string): Job | undefined {
    const q = this.queues.get(botId);
    const job = q?.shift();
    if (q && q.length === 0) this.queues.delete(botId);
    return job;
  }

  /** Remove and return the jobs that match. */
  remove(botId: string, match: (j: Job) => boolean = () => true): Job[] {
    const q = this.queues.get(botId);
    if (!q) return [];
    const removed = q.filter(match);
    const kept = q.filter((j) => !match(j));
    if (kept.length) this.queues.set(botId, kept);
    else this.queues.delete(botId);
    return removed;
  }

  size(botId: string): number {
    return this.queues.get(botId)?.length ?? 0;
  }

  jobs(botId: string): readonly Job[] {
    return this.queues.get(botId) ?? [];
  }

  find(match: (j: Job) => boolean): Job | undefined {
    for (const q of this.queues.values()) {
      const j = q.find(match);
      if (j) return j;
    }
    return undefined;
  }

  botIds(): string[] {
    return [...this.queues.keys()];
  }
}
