/**
 * Bot work as durable jobs (issue 17 §1): every dispatch is a `bots.run` job on the coordinator,
 * committed before the RPC answers. The bot is the job's group (one run per bot, across workers);
 * a person's message goes first, then routines, handoffs and external work, heartbeat resumes last
 * (seed 2 §7.4); the key is the task and its bot message, so sending the same dispatch again
 * (restart adoption, an upgrade) never makes a second job.
 */
import type { JobSpec, JsonValue } from '../coordination/index.js';
import { TASK_SOURCES, type TaskSource } from '../protocol/bots.js';
import type { Job, JobPriority } from './queue.js';

export const BOTS_RUN_QUEUE = 'bots.run';

const PRIORITY: Record<TaskSource, number> = { user: 2, routine: 1, handoff: 1, external: 1, heartbeat: 0 };

export function jobKey(taskId: string, messageId: string): string {
  return `bots.run:${taskId}:${messageId}`;
}

export function jobSpec(job: Job): JobSpec {
  const payload: { [k: string]: JsonValue } = {
    botId: job.botId,
    threadId: job.threadId,
    taskId: job.taskId,
    messageId: job.messageId,
    priority: job.priority,
    source: job.source,
    request: job.request,
    claimToken: job.claimToken,
    purpose: job.purpose,
    enqueuedAt: job.enqueuedAt,
  };
  // `low` (the heartbeat's) always waits behind everything else, whatever its source.
  const priority = job.priority === 'low' ? 0 : PRIORITY[job.source];
  return { queue: BOTS_RUN_QUEUE, payload, key: jobKey(job.taskId, job.messageId), group: job.botId, priority };
}

/** A fetched payload as a runtime job, or the reason it does not parse (it is moved aside). */
export function parseJobPayload(id: string, payload: JsonValue): { ok: true; job: Job } | { ok: false; reason: string } {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return { ok: false, reason: 'the payload is not an object' };
  const p = payload;
  const str = (k: string): string | null => (typeof p[k] === 'string' ? (p[k] as string) : null);
  for (const k of ['botId', 'threadId', 'taskId', 'messageId', 'purpose']) if (!str(k)) return { ok: false, reason: `${k}: expected a string` };
  const source = str('source');
  if (!source || !(TASK_SOURCES as readonly string[]).includes(source)) return { ok: false, reason: `source: expected one of ${TASK_SOURCES.join(', ')}` };
  const priority = str('priority');
  if (priority !== 'normal' && priority !== 'low') return { ok: false, reason: 'priority: expected normal or low' };
  if (p.request !== null && typeof p.request !== 'string') return { ok: false, reason: 'request: expected a string or null' };
  if (p.claimToken !== null && typeof p.claimToken !== 'string') return { ok: false, reason: 'claimToken: expected a string or null' };
  return {
    ok: true,
    job: {
      id,
      botId: str('botId')!,
      threadId: str('threadId')!,
      taskId: str('taskId')!,
      messageId: str('messageId')!,
      priority: priority as JobPriority,
      source: source as TaskSource,
      request: (p.request as string | null) ?? null,
      claimToken: (p.claimToken as string | null) ?? null,
      purpose: str('purpose')!,
      enqueuedAt: typeof p.enqueuedAt === 'number' ? p.enqueuedAt : 0,
    },
  };
}
