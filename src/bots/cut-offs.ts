/**
 * How often a bot job's run may be cut off (its worker died mid-run) before its job stops
 * continuing it (issue 17 §1), and how long a continued run waits first.
 *
 * From here a kill from outside and a crash the run itself causes (a poison message) look the
 * same: the worker is simply gone. The only evidence is how often it happens, so the rule is
 * about counting honestly and making a generous cap affordable:
 *
 * - **Runs, not fetches, are counted.** The job's coordinator checkpoint records how many runs
 *   it started (written right after its task went `working`). A worker that died holding the job
 *   before its run began (the gap before a run, a take-over, the wait below) cut nothing off: its
 *   job simply runs (§1: a queued job that never started is never "cut off"). Counting fetches
 *   (the coordinator's `attempt`) charged those kills to the message, and a restart kills in
 *   exactly those moments.
 * - **Backoff between continued runs.** The k-th continuation waits `cutOffBackoffMs(k)` on the
 *   injected clock (none after one cut-off, then 2 s doubling to a minute), holding its job (so
 *   the thread's order is kept; other bots run meanwhile). The wait's end is kept with the job,
 *   so a kill during it resumes it rather than restarting it. A poison message so brings its
 *   worker down ever more rarely, and the honest runs in flight with it are not cut off with it
 *   again and again — which is what makes a cap of ten affordable.
 * - **A cap of ten.** An honest run is cut off with some chance p per run (its length against the
 *   time between kills); it is wrongly stopped with chance p^cap. The chaos run (a SIGKILL every
 *   2–8 s, 1–5 s replies, p ≈ 0.4) left 3 of ~330 messages unanswered at five (0.4^5 ≈ 1 %); at
 *   ten that is ≈ 1e-4 per message. A poison message is still stopped, after ten crashes spread
 *   over about four minutes, with `cutOffTooOftenError`.
 */
import type { JsonValue } from '../coordination/index.js';

/** Runs a job may start that were all cut off; the next take-over leaves its task failed + interrupted. */
export const MAX_CUT_OFF_RUNS = 10;

/** The wait before the second continuation; doubled per cut-off after it. */
export const CUT_OFF_BACKOFF_BASE_MS = 2000;

/** The longest wait before a continued run. */
export const CUT_OFF_BACKOFF_MAX_MS = 60_000;

/** A run cut off `cutOffs` times is not continued by its job again (it is left `failed` + interrupted). */
export function cutOffTooOften(cutOffs: number): boolean {
  return cutOffs >= MAX_CUT_OFF_RUNS;
}

/** The wait before continuing a run cut off `cutOffs` times: 0 after one (a single kill is the common case), then 2 s, 4 s, … ≤ 60 s. */
export function cutOffBackoffMs(cutOffs: number): number {
  if (cutOffs <= 1) return 0;
  return Math.min(CUT_OFF_BACKOFF_MAX_MS, CUT_OFF_BACKOFF_BASE_MS * 2 ** (cutOffs - 2));
}

/**
 * The one error a task (and its message) cut off too often carries, on either path that finds it:
 * a take-over by another worker or a restart.
 */
export function cutOffTooOftenError(cutOffs: number, from: string): string {
  return (
    `Interrupted: its run was cut off ${cutOffs} times (its worker stopped during the run; last ${from}), ` +
    'so its job does not continue it again; it is left failed, for the heartbeat to resume from its checkpoint.'
  );
}

/** What a `bots.run` job keeps in its coordinator checkpoint. */
export interface RunCount {
  /** Runs this job started (its task went `working`); each that did not settle was cut off. */
  runs: number;
  /** When the continued run waiting now may start (epoch ms); absent: no wait decided yet. */
  resumeAt?: number;
}

/** The count in a job's checkpoint; none (a job of an older release, or never started): 0 runs. */
export function runCountOf(checkpoint: JsonValue | null): RunCount {
  if (checkpoint === null || typeof checkpoint !== 'object' || Array.isArray(checkpoint)) return { runs: 0 };
  const runs = typeof checkpoint.runs === 'number' && checkpoint.runs >= 0 ? Math.floor(checkpoint.runs) : 0;
  return typeof checkpoint.resumeAt === 'number' ? { runs, resumeAt: checkpoint.resumeAt } : { runs };
}

/**
 * Cut-offs of a job whose task was found `working` with its worker gone: every run it started was
 * cut off, and at least one was (a kill between the task's `working` and the count's write).
 */
export function cutOffsOf(checkpoint: JsonValue | null): number {
  return Math.max(1, runCountOf(checkpoint).runs);
}

/**
 * The cut-offs charged against `MAX_CUT_OFF_RUNS`: the runs cut off, less one for each earlier
 * holder of the job that died before its run began (`fetchesBefore` − runs: in the gap, the
 * take-over, the backoff). Such a death cannot be the run's doing, so it shows the worker is
 * being stopped from outside, and it forgives one cut-off. A poison message's job is fetched only
 * to crash its run, so nothing is forgiven and it is stopped at the cap; under a SIGKILL every
 * few seconds (the chaos run: a cap of ten alone left one of 109 messages cut off ten times, with
 * half of all model calls cut off) the growing backoff makes such deaths likely between two runs.
 */
export function chargedCutOffs(checkpoint: JsonValue | null, fetchesBefore: number): number {
  const runs = cutOffsOf(checkpoint);
  return Math.max(0, runs - Math.max(0, fetchesBefore - runs));
}
