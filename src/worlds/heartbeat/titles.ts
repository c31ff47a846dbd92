/**
 * Log entries name their task by id; a person reads it by title. The titles are looked up in the
 * bots host where entries leave the heartbeat (the log and snapshot reads, the `log_added` event),
 * one read per distinct task (the log keeps ids only; a task deleted since reads as null).
 */
import type { BotsHeartbeatApi } from '../../bots/index.js';
import type { HeartbeatLogEntry } from '../../protocol/heartbeat.js';

export async function withTaskTitles(host: Pick<BotsHeartbeatApi, 'getTask'>, entries: HeartbeatLogEntry[]): Promise<HeartbeatLogEntry[]> {
  const ids = new Set<string>();
  for (const e of entries) {
    const id = e.task_id ?? e.dispatched?.task_id ?? null;
    if (id !== null) ids.add(id);
  }
  if (ids.size === 0) return entries;
  const titles = new Map<string, string>();
  await Promise.all(
    [...ids].map(async (id) => {
      const task = await host.getTask(id);
      if (task) titles.set(id, task.title);
    }),
  );
  return entries.map((e) => {
    const id = e.task_id ?? e.dispatched?.task_id ?? null;
    return { ...e, task_title: id === null ? null : (titles.get(id) ?? null) };
  });
}
