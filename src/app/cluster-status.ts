/** The coordinator's view for `subconscious.status`'s `cluster`, in the protocol's wire names. */
import type { Coordinator } from '../coordination/index.js';
import type { ClusterStatus } from '../protocol/index.js';

export async function clusterStatus(coordinator: Coordinator, store: 'sqlite' | 'postgres'): Promise<ClusterStatus> {
  const [workers, queues, dead] = await Promise.all([coordinator.workers(), coordinator.sizes(), coordinator.deadLetters(50)]);
  return {
    store,
    lease_ms: coordinator.leaseMs,
    workers: workers.map((w) => ({
      id: w.id,
      host: w.host,
      pid: w.pid,
      role: w.role,
      started_at: w.startedAt,
      last_seen_at: w.lastSeenAt,
      jobs_held: w.jobsHeld,
      alive: w.alive,
    })),
    queues,
    dead_letters: dead.map((d) => ({
      id: d.id,
      queue: d.queue,
      key: d.key,
      group: d.group,
      reason: d.reason,
      created_at: d.createdAt,
      moved_at: d.movedAt,
    })),
  };
}
