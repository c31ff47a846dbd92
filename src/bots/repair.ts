/**
 * Restart repair (issue 11 §5, seed 2 Appendix C), run at every start before anything else:
 *   - `queued` tasks are durable jobs (issue 17): `adopt` sends their job again by key (found,
 *     not doubled; one of an older release gets one now) and they simply run, never "cut off";
 *   - `working` tasks: their job continues the cut-off run; one cut off `MAX_CUT_OFF_RUNS` times
 *     (or with no job to be had) → `failed`, `interrupted`, `error_kind = 'interrupted'`
 *     (attempts unchanged, so a crash never refills the heartbeat's retry budget);
 *   - their streaming/queued bot messages keep their partial text → `error` + `interrupted`;
 *   - pending approvals past their expiry, or of a run that died → `expired` with `expired_at`
 *     (seed 2 rule 5 compares it).
 * Only rows of this process, of a process on this host that is gone, or of no known process are
 * touched: a second daemon sharing Postgres keeps its live work, and so does this process's own
 * runtime (`busy`): a request served before the repair ran is not taken for a dead run's.
 * One more kind is an orphan (issue 17): an open task of a release before the coordinator, owned
 * by a process that looks alive from here (another host's, or a pid reused since) but with no
 * live job behind it (`liveJob`) and no sign of life for a lease period (`orphanAfterMs`): in
 * the current release every open task of a live worker has its job, so nobody would ever finish
 * it. It is repaired as a dead process's task is: adopted (a queued one runs; a working one's job
 * continues it from its checkpoint), once — from then on it has its job.
 */
import type { Kysely } from 'kysely';
import type { ApprovalStore } from '../agent/index.js';
import { describeError, ownedByThisProcess, ownerIsGone, type Clock, type Logger } from '../core/index.js';
import type { ApprovalLinks } from './approval-links.js';
import type { BotsEmit } from './events.js';
import type { Adopted } from './runtime.js';
import { toMessage, toTask } from './rows.js';
import type { BotsTables } from './tables.js';
import { OPEN_STATUSES, type TaskRow, type TaskStore } from './task-store.js';

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
  /**
   * Make a left-over open task a durable job: `'job'` (it is one now, it runs; nothing is marked),
   * `'cut-off-too-often'` (it settled the task itself, failed + interrupted), false (repair marks it).
   */
  adopt?: ((row: TaskRow) => Promise<Adopted>) | undefined;
  /** Whether a queued or active coordinator job stands behind an open task (without it, no orphan of another process is found). */
  liveJob?: ((row: TaskRow) => Promise<boolean>) | undefined;
  /** How long an open task of another process must have shown no sign of life to be an orphan (the coordinator's lease). */
  orphanAfterMs?: number | undefined;
}

export interface RepairResult {
  tasks: number;
  messages: number;
  approvals: number;
}

const isDead = (owner: string | null) => owner === null || ownerIsGone(owner) || ownedByThisProcess(owner);

/** An open task of another process that looks alive, left with no job and no sign of life (see above). */
async function orphanOfAnotherProcess(d: RepairDeps, t: TaskRow, now: number): Promise<boolean> {
  if (!d.liveJob || ownedByThisProcess(t.owner)) return false;
  const seen = Number(t.owner_seen_at ?? t.updated_at);
  if (seen > now - (d.orphanAfterMs ?? 0)) return false;
  return !(await d.liveJob(t));
}

export async function repairAfterRestart(d: RepairDeps): Promise<RepairResult> {
  const now = d.clock.now();
  const result: RepairResult = { tasks: 0, messages: 0, approvals: 0 };

  const open = await d.db
    .selectFrom('bots_tasks')
    .selectAll()
    .where('status', 'in', [...OPEN_STATUSES])
    .execute();
  const liveElsewhere = new Set<string>();
  const adopted = new Set<string>();
  for (const t of open) {
    if (!isDead(t.owner) || (ownedByThisProcess(t.owner) && d.busy?.(t.bot_id))) {
      if (!(await orphanOfAnotherProcess(d, t, now))) {
        liveElsewhere.add(t.id);
        continue;
      }
      d.log.info({ task: t.id, owner: t.owner }, 'bots: an open task of another process has no job (an older release left it); it is repaired');
    }
    // A queued task never started: it is a durable job, so it simply runs (never "cut off").
    const adoption = d.adopt ? await d.adopt(t) : false;
    if (adoption === 'job') {
      adopted.add(t.id);
      continue;
    }
    if (adoption === 'cut-off-too-often') {
      // Settled by the runtime with the one cut-off-too-often error (its message too).
      adopted.add(t.id);
      result.tasks++;
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
    if (m.task_id !== null && (liveElsewhere.has(m.task_id) || adopted.has(m.task_id))) continue;
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
