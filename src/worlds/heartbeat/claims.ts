/**
 * Claims and dispatch of resumes through one narrow interface (seed 2 §5.5, issue 12 §3):
 * claim (compare-and-set, attempts counted), renew, dispatch, complete, reclaim stale. The bots
 * host's task rows implement it today; in Postgres mode the same five calls map onto a job-queue
 * engine (a job per claimed task: claim = fetch-and-lock, renew = heartbeat, complete =
 * ack/fail, reclaim = the engine's expired-lock sweep) without the heartbeat changing.
 *
 * Exactly once, across daemons: a claim succeeds only on the task version triage read and only
 * without a live claim, in one conditional write; the run's `begin()` consumes the claim (and
 * re-checks the task's status), so a second claimer, a stale tick or a re-run commit finds
 * nothing to take.
 */
import type { BotsHeartbeatApi, Dispatched } from '../../bots/index.js';
import { STALE_CLAIM_MS } from '../../bots/index.js';
import type { IdGen } from '../../core/index.js';

export interface ResumeClaim {
  taskId: string;
  token: string;
  /** Attempts after this claim (it counted one). */
  attempts: number;
  /** The task's version after the claim. */
  version: number;
  by: string;
}

export interface ResumeJob {
  botId: string;
  threadId: string;
  /** The host-authored preamble (untrusted parts fenced). */
  text: string;
  /** The visible system note shown before the run's message. */
  note: string;
}

export interface ResumeQueue {
  /** Take the task if it is still at `version` and unclaimed (a stale claim may be taken over). Null: lost. */
  claim(taskId: string, version: number): Promise<ResumeClaim | null>;
  /** Keep the claim alive (a slow dispatch). False: it is not ours any more. */
  renew(claim: ResumeClaim): Promise<boolean>;
  /** Queue the claimed task's resume with its bot (lowest priority, the task reused). */
  dispatch(claim: ResumeClaim, job: ResumeJob): Promise<Dispatched>;
  /** End a claim: `dispatched` (the run consumes it), `released` (attempt kept), `refunded` (nothing ran: attempt given back). */
  complete(claim: ResumeClaim, outcome: 'dispatched' | 'released' | 'refunded'): Promise<void>;
  /**
   * Claims older than `staleMs` (a crash between claim and start): their tasks are claimable again
   * (`claim` takes a stale claim over, in the same conditional write), attempts stay counted.
   */
  reclaimStale(staleMs?: number): Promise<{ taskId: string; botId: string }[]>;
}

export class HostResumeQueue implements ResumeQueue {
  constructor(
    private readonly host: BotsHeartbeatApi,
    private readonly ids: IdGen,
    /** Who claims (written on the task): `heartbeat`. */
    private readonly by = 'heartbeat',
  ) {}

  async claim(taskId: string, version: number): Promise<ResumeClaim | null> {
    const token = this.ids();
    const task = await this.host.claimTask(taskId, { version, token, by: this.by, staleMs: STALE_CLAIM_MS });
    return task ? { taskId, token, attempts: task.attempts, version: task.version, by: this.by } : null;
  }

  renew(claim: ResumeClaim): Promise<boolean> {
    return this.host.renewClaim(claim.taskId, claim.token);
  }

  dispatch(claim: ResumeClaim, job: ResumeJob): Promise<Dispatched> {
    return this.host.dispatchToBot(job.botId, job.threadId, job.text, {
      heartbeat: true,
      taskId: claim.taskId,
      claimToken: claim.token,
      priority: 'low',
      note: job.note,
    });
  }

  async complete(claim: ResumeClaim, outcome: 'dispatched' | 'released' | 'refunded'): Promise<void> {
    if (outcome === 'dispatched') return; // begin() consumes the claim; settle clears it too
    await this.host.releaseClaim(claim.taskId, { token: claim.token, refund: outcome === 'refunded' });
  }

  async reclaimStale(staleMs = STALE_CLAIM_MS): Promise<{ taskId: string; botId: string }[]> {
    // Not released here: releasing by id could drop a claim another worker just took over. The
    // next claim replaces a stale one atomically; the attempt counted before the crash stays.
    const stale = await this.host.staleClaims(staleMs);
    return stale.filter((t) => t.claimed_by === this.by).map((t) => ({ taskId: t.id, botId: t.bot_id }));
  }
}
