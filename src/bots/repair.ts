/**
 * Restart repair (issue 11 §5, seed 2 Appendix C), run at every start before anything else:
 *   - `working`/`queued` tasks → `failed`, `interrupted`, `error_kind = 'interrupted'`
 *     (attempts unchanged, so a crash never refills the heartbeat's retry budget);
 *   - their streaming/queued bot messages keep their partial text → `error` + `interrupted`;
 *   - pending approvals past their expiry, or of a run that died → `expired` with `expired_at`
 *     (seed 2 rule 5 compares it).
 * Only rows of this process, of a process on this host that is gone, or of no known process are
 * touched: a second daemon sharing Postgres keeps its live work, and so does this process's own
 * runtime (`busy`): a request served before the repair ran is not taken for a dead run's.
 */
import type { Kysely } from 'kysely';
import type { ApprovalStore } from '../agent/index.js';
import { describeError, ownedByThisProcess, ownerIsGone, type Clock, type Logger } from '../core/index.js';
import type { ApprovalLinks } from './approval-links.js';
import type { BotsEmit } from './events.js';
import { toMessage, toTask } from './rows.js';
import type { BotsTables } from './tables.js';
import { OPEN_STATUSES, type TaskStore } from './task-store.js';

export const INTERRUPTED_ERROR = 'Interrupted when the daemon restarted (the run was cut off).';

export interface RepairDeps {
  db: Kysely<BotsTables>;
  tasks: TaskStore;
  links: ApprovalLinks;
  approvals: Pick<ApprovalStore, 'get' | 'expire'>;
  clock: Clock;
  log: Logger;
  emit: BotsEmit;
  /** This process's runtime holds work for the bot (its rows are live, not left over). */
  busy?: ((botId: string) => boolean) | undefined;
}

export interface RepairResult {
  tasks: number;
  messages: number;
  approvals: number;
}

const isDead = (owner: string | null) => owner === null || ownerIsGone(owner) || ownedByThisProcess(owner);

export async function repairAfterRestart(d: RepairDeps): Promise<RepairResult> {
  const now = d.clock.now();
  const result: RepairResult = { tasks: 0, messages: 0, approvals: 0 };

  const open = await d.db
    .selectFrom('bots_tasks')
    .selectAll()
    .where('status', 'in', [...OPEN_STATUSES])
    .execute();
  const liveElsewhere = new Set<string>();
  for (const t of open) {
    if (!isDead(t.owner) || (ownedByThisProcess(t.owner) && d.busy?.(t.bot_id))) {
      liveElsewhere.add(t.id);
      continue;
    }
    const row = await d.tasks.update(
      t.id,
      { status: 'failed', interrupted: 1, error_kind: 'interrupted', error: INTERRUPTED_ERROR, finished_at: now, owner: null },
      { version: t.version },
    );
    if (!row) continue;
    result.tasks++;
    d.emit('bots.task_changed', { task: toTask(row) });
  }

  // Bot messages cut off mid-stream (or never started): keep the text, mark them.
  const cut = await d.db.selectFrom('bots_messages').selectAll().where('status', 'in', ['queued', 'streaming']).where('role', '=', 'bot').execute();
  for (const m of cut) {
    if (m.task_id !== null && liveElsewhere.has(m.task_id)) continue;
    await d.db
      .updateTable('bots_messages')
      .set({ status: 'error', interrupted: 1, error: INTERRUPTED_ERROR, updated_at: now })
      .where('id', '=', m.id)
      .where('status', 'in', ['queued', 'streaming'])
      .execute();
    result.messages++;
    d.emit('bots.message_changed', { message: toMessage({ ...m, status: 'error', interrupted: 1, error: INTERRUPTED_ERROR, updated_at: now }) });
  }

  for (const link of await d.links.list({ state: 'pending', limit: 10_000 })) {
    try {
      let approval = await d.approvals.get(link.id);
      // At start this process runs nothing: a pending approval not of another live process's task is a dead run's.
      const runDied = !(link.task_id !== null && liveElsewhere.has(link.task_id));
      const pastExpiry = approval?.expires_at != null && approval.expires_at <= now;
      if (approval && approval.state === 'pending' && (runDied || pastExpiry)) {
        await d.approvals.expire(link.id);
        approval = await d.approvals.get(link.id);
      }
      if (!approval) continue;
      const changed = await d.links.mirror(approval);
      if (changed) {
        result.approvals++;
        d.emit('bots.approval_changed', { approval: changed });
      }
    } catch (err) {
      d.log.warn({ err: describeError(err), approval: link.id }, 'could not repair an approval');
    }
  }

  if (result.tasks || result.messages || result.approvals) d.log.info(result, 'bots: restart repair marked interrupted work');
  d.emit('bots.repaired', { ...result });
  return result;
}
