/**
 * How a run settles (seed 2 §7.5). Preemption, approval expiry and the time cap all abort the
 * same controller, so the cause is tested BEFORE the bare "was aborted" flag:
 *   1. the user stopped it               → cancelled (never resumed)
 *   2. preempted by a human message      → failed + preempted (resumable)
 *   3. approval_expired / timeout / provider / rate_limit / unknown (a recorded failure)
 *                                        → failed with that kind
 *   4. any other abort (external)        → cancelled
 *   5. otherwise                         → done
 */

export type RunStatus = 'done' | 'failed' | 'cancelled';
export type RunErrorKind = 'timeout' | 'provider' | 'rate_limit' | 'approval_expired' | 'preempted' | 'cancelled' | 'unknown';
export type CancelCause = 'user' | 'preempted' | 'external';

/** What happened during a run, gathered as it goes; `settleStatus` turns it into an outcome. */
export interface SettleFacts {
  userStopped: boolean;
  preempted: boolean;
  /** The first recorded failure (cap, approval expiry, model error, tool server crash, step limit without an answer). */
  failure?: { kind: Exclude<RunErrorKind, 'preempted' | 'cancelled'>; message: string } | undefined;
  /** The run's controller was aborted (for any reason). */
  aborted: boolean;
}

export interface SettleStatus {
  status: RunStatus;
  errorKind?: RunErrorKind;
  error?: string;
}

export function settleStatus(f: SettleFacts): SettleStatus {
  if (f.userStopped) return { status: 'cancelled', errorKind: 'cancelled', error: 'Stopped by the user.' };
  if (f.preempted) return { status: 'failed', errorKind: 'preempted', error: 'Preempted by a new message from the user; the work can resume.' };
  if (f.failure) return { status: 'failed', errorKind: f.failure.kind, error: f.failure.message };
  if (f.aborted) return { status: 'cancelled', errorKind: 'cancelled', error: 'Cancelled.' };
  return { status: 'done' };
}
