/**
 * The tick's commit (seed 2 §5.4, §5.5, §6.3, §7, §9.2): every due bot's outcome written — the
 * log entry with its why, the next check from the backoff table — and the actions of `resume`
 * mode: check-ins for `ask_user` and exhausted candidates, and resumes: budget reserved, the task
 * claimed (compare-and-set, attempt counted) and the bot's state written before the dispatch.
 *
 * A re-run commit (after a crash mid-commit) does nothing twice: log and check-in ids are
 * derived from the tick id, claims compare the version triage read (a second claim finds it
 * changed), and follow-ups fire through a compare-and-set of their own.
 */
import type { RecordedStep } from '../../agent/index.js';
import { describeError } from '../../core/index.js';
import { cleanLine } from '../../llm/index.js';
import type { HeartbeatMode, HeartbeatSettings, HeartbeatState, SkipRule } from '../../protocol/heartbeat.js';
import type { BotPatch } from './bot-state.js';
import { GLOBAL_SCOPE } from './budget-store.js';
import type { HeartbeatCore } from './core.js';
import type { NewLogEntry } from './log-store.js';
import { resumePreamble, wakeNote } from './preamble.js';
import type { PulseVerdict } from './pulse.js';
import type { HeartbeatReflection, PulseResult } from './reflect.js';
import type { Candidate } from './rules.js';
import { ASK_RECHECK_MS, CLAIM_RETRY_MS, MAX_PULSE_ERRORS, errorBackoff, idleInterval, jitter, nextMidnight, userActiveUntil, waitDelay } from './schedule.js';
import type { HeartbeatObservation, Plan } from './triage.js';

export interface CommitCounts {
  checked: number;
  pulsed: number;
  resumed: number;
  checked_in: number;
  skipped: number;
  errors: number;
  deferred: number;
}

const STATE_OF_SKIP: Partial<Record<SkipRule, HeartbeatState>> = {
  disabled: 'disabled',
  waiting_user: 'waiting_user',
  asked: 'waiting_user',
  exhausted: 'waiting_user',
  cooldown: 'cooldown',
};

export async function commitTick(
  core: HeartbeatCore,
  obs: HeartbeatObservation,
  reflection: HeartbeatReflection | undefined,
  tickId: string,
): Promise<CommitCounts> {
  const counts: CommitCounts = { checked: 0, pulsed: 0, resumed: 0, checked_in: 0, skipped: 0, errors: 0, deferred: obs.deferred };
  for (const plan of obs.plans) {
    counts.checked++;
    try {
      await commitPlan(core, obs, plan, reflection?.results[plan.botId], tickId, counts);
    } catch (err) {
      counts.errors++;
      core.d.log.warn({ err: describeError(err), bot: plan.botId }, 'heartbeat: could not commit a bot’s check');
    }
  }
  return counts;
}

class PlanCommit {
  private n = 0;
  constructor(
    readonly core: HeartbeatCore,
    readonly obs: HeartbeatObservation,
    readonly plan: Plan,
    readonly tickId: string,
    readonly counts: CommitCounts,
  ) {}

  get mode(): HeartbeatMode {
    return this.obs.mode;
  }
  get g(): HeartbeatSettings {
    return this.obs.settings;
  }
  id(what: string): string {
    return `${this.tickId}:${this.plan.botId}:${what}:${this.n++}`;
  }

  /** The base patch every outcome writes. */
  base(now: number): BotPatch {
    return { last_tick_at: now, thread_id: this.plan.threadId, forced_at: null };
  }

  async skip(rule: SkipRule, reason: string, next: number | null, extra: BotPatch = {}, tier: 0 | 1 | 2 = 0): Promise<void> {
    const now = this.core.now();
    this.counts.skipped++;
    await this.core.record({
      id: this.id('skip'),
      botId: this.plan.botId,
      mode: this.mode,
      tier,
      outcome: 'skipped',
      skip: rule,
      reason: `${rule}: ${reason}`,
    });
    await this.core.schedule(this.plan.botId, this.plan.version, next, {
      ...this.base(now),
      state: STATE_OF_SKIP[rule] ?? 'idle',
      last_outcome: `skipped: ${rule}`,
      ...extra,
    });
    if (rule === 'budget') await this.globalBudgetNote(reason);
  }

  /** One store-wide entry per day when the global budget stops bots (deterministic id: once, across daemons and restarts). */
  private async globalBudgetNote(reason: string): Promise<void> {
    if (!reason.includes('all bots')) return;
    const day = this.core.days(this.core.now(), this.plan.settings, this.g).global;
    await this.core.record({
      id: `budget:${GLOBAL_SCOPE}:${day}`,
      botId: null,
      mode: this.mode,
      tier: 0,
      outcome: 'skipped',
      skip: 'budget',
      reason: `the store-wide daily budget is spent (${reason}); checks resume after local midnight`,
    });
  }

  async terminal(candidates: readonly Candidate[]): Promise<void> {
    if (this.mode !== 'resume') return;
    for (const c of candidates) {
      const title = cleanLine(c.title, 80);
      const made = await this.core.checkIn({
        id: `${this.tickId}:${this.plan.botId}:exhausted:${c.id}`,
        botId: this.plan.botId,
        threadId: this.plan.threadId,
        taskId: c.taskId,
        source: 'exhausted',
        question: `I tried to pick up “${title}” ${c.attempts} times without finishing it. Should I try again, or leave it? (Reply here, or use Retry on the check-in.)`,
        mode: this.mode,
        reason: `exhausted: “${title}” used its ${c.attempts} attempts (last error: ${cleanLine(c.lastError ?? 'none', 80)})`,
      });
      if (made) this.counts.checked_in++;
      // §7.5: the task says why it stays failed (its last error is in the check-in's reason).
      if (made && c.taskId) await this.core.host.markExhausted(c.taskId);
    }
  }
}

async function commitPlan(
  core: HeartbeatCore,
  obs: HeartbeatObservation,
  plan: Plan,
  result: PulseResult | undefined,
  tickId: string,
  counts: CommitCounts,
): Promise<void> {
  const pc = new PlanCommit(core, obs, plan, tickId, counts);
  const t = plan.triage;
  await pc.terminal(t.terminal);
  if (t.kind === 'skip') {
    // A bot whose only work just got its exhaustion check-in is left to its person (state written by checkIn).
    if (t.skip === 'exhausted' && t.terminal.length > 0 && obs.mode === 'resume') {
      plan.version = Number((await core.bots.get(plan.botId))?.version ?? plan.version);
      await pc.skip('exhausted', t.reason, core.now() + ASK_RECHECK_MS);
      return;
    }
    await pc.skip(t.skip, t.reason, t.next);
    return;
  }

  const now = core.now();
  const primary = t.primary;
  if (obs.mode === 'triage') {
    await core.record({
      id: pc.id('candidate'),
      botId: plan.botId,
      mode: obs.mode,
      tier: 0,
      outcome: 'candidate',
      rule: primary.rule,
      taskId: primary.taskId,
      reason: `${primary.rule}: ${cleanLine(primary.title, 100)}${t.candidates.length > 1 ? ` (+${t.candidates.length - 1} more)` : ''}`,
    });
    await core.schedule(plan.botId, plan.version, now + jitter(plan.settings.intervalMs, core.random), {
      ...pc.base(now),
      state: 'idle',
      last_outcome: `candidate: ${primary.rule}`,
    });
    return;
  }

  if (t.fastPath) {
    await resume(pc, primary, null, 'restart fast path: interrupted with a checkpoint, no attempts yet');
    return;
  }

  if (!result) return pc.skip('busy', 'no pulse was made for it this tick', now + jitter(plan.settings.intervalMs, core.random));
  switch (result.kind) {
    case 'busy':
      return pc.skip('busy', result.reason, now + jitter(plan.settings.intervalMs, core.random), {}, 1);
    case 'aborted':
      return pc.skip('busy', `the pulse stepped aside: ${result.reason}`, now + jitter(plan.settings.intervalMs, core.random), {}, 1);
    case 'budget': {
      const tz = result.scope === 'bot' ? plan.settings.timezone : obs.settings.timezone;
      const why =
        result.scope === 'bot' ? `${plan.settings.maxPulsesPerDay} pulses today (bot)` : `${obs.settings.global_pulses_per_day} pulses today (all bots)`;
      return pc.skip('budget', why, nextMidnight(now, tz), {}, 1);
    }
    case 'error':
      return pulseError(pc, result);
    case 'verdict':
      return verdict(pc, result);
  }
}

async function pulseError(pc: PlanCommit, r: Extract<PulseResult, { kind: 'error' }>): Promise<void> {
  const { core, plan } = pc;
  const now = core.now();
  pc.counts.errors++;
  const row = await core.bots.get(plan.botId);
  const errors = (row?.consecutive_errors ?? 0) + 1;
  await addFigures(pc, { errors: 1 });
  await core.record({
    id: pc.id('error'),
    botId: plan.botId,
    mode: pc.mode,
    tier: 1,
    outcome: 'pulse_error',
    rule: plan.triage.kind === 'candidates' ? plan.triage.primary.rule : null,
    reason: `pulse failed (${r.errorKind}), ${errors} in a row: no resume`,
    model: r.model,
    ms: r.ms,
    error: r.error,
  });
  if (errors >= MAX_PULSE_ERRORS) {
    const reason = `${errors} pulse errors in a row (last: ${cleanLine(r.error, 120)}); switch it on again when the pulse model answers`;
    await core.schedule(plan.botId, plan.version, null, {
      ...pc.base(now),
      enabled: 0,
      state: 'disabled',
      consecutive_errors: errors,
      last_error: r.error.slice(0, 500),
      disabled_reason: reason,
      backoff_until: null,
      last_outcome: 'disabled: pulse errors',
    });
    await core.record({ id: pc.id('disabled'), botId: plan.botId, mode: pc.mode, tier: 1, outcome: 'disabled', reason, error: r.error });
    return;
  }
  const until = now + errorBackoff(errors, plan.settings.intervalMs);
  await core.schedule(plan.botId, plan.version, until, {
    ...pc.base(now),
    state: 'idle',
    consecutive_errors: errors,
    backoff_until: until,
    last_error: r.error.slice(0, 500),
    last_outcome: `pulse_error: ${r.errorKind}`,
  });
}

async function verdict(pc: PlanCommit, r: Extract<PulseResult, { kind: 'verdict' }>): Promise<void> {
  const { core, plan } = pc;
  const t = plan.triage;
  if (t.kind !== 'candidates') return;
  const now = core.now();
  const v = r.verdict;
  const candidate = t.candidates.find((c) => c.id === v.candidateId) ?? t.primary;
  pc.counts.pulsed++;
  await addFigures(pc, { pulse_input_tokens: r.inputTokens, pulse_output_tokens: r.outputTokens });
  const row = await core.bots.get(plan.botId);
  const current = Number(row?.current_interval_ms ?? plan.settings.intervalMs);
  const pulsed: BotPatch = {
    ...pc.base(now),
    consecutive_errors: 0,
    backoff_until: null,
    last_error: null,
    last_pulse_at: now,
    last_verdict: v.verdict,
    last_reason: v.reason,
  };
  const entry = {
    botId: plan.botId,
    mode: pc.mode,
    tier: 1 as const,
    rule: candidate.rule,
    verdict: v.verdict,
    taskId: candidate.taskId,
    model: r.model,
    ms: r.ms,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    error: v.invalid || v.note ? `${v.note ?? ''}${v.rawTail ? ` — raw: ${v.rawTail}` : ''}` : null,
  };

  if (pc.mode === 'shadow' || v.verdict === 'idle' || v.verdict === 'wait') {
    let next: number;
    let interval = current;
    if (v.verdict === 'wait') next = now + waitDelay(v.etaMinutes);
    else if (v.verdict === 'idle') {
      interval = idleInterval(current, plan.settings.intervalMs);
      next = now + interval;
    } else next = now + jitter(plan.settings.intervalMs, core.random);
    const shadow = pc.mode === 'shadow' ? `shadow (logged only): would ${v.verdict}` : v.verdict;
    await core.record({ id: pc.id('verdict'), ...entry, outcome: 'verdict', reason: `${candidate.rule} → ${shadow}: ${v.reason || '(no reason)'}` });
    await core.schedule(plan.botId, plan.version, next, {
      ...pulsed,
      state: 'idle',
      current_interval_ms: interval,
      last_outcome: `verdict: ${v.verdict}${pc.mode === 'shadow' ? ' (shadow)' : ''}`,
    });
    return;
  }

  if (v.verdict === 'ask_user') {
    await core.update(plan.botId, pulsed);
    const title = cleanLine(candidate.title, 80);
    const ask = cleanLine(v.instruction || v.reason || 'What should I do next?', 300);
    const made = await core.checkIn({
      id: `${pc.tickId}:${plan.botId}:ask:${candidate.id}`,
      botId: plan.botId,
      threadId: plan.threadId,
      taskId: candidate.taskId,
      messageId: candidate.taskId ? null : candidate.messageId,
      source: 'ask_user',
      question: `About “${title}”: ${ask}`,
      mode: pc.mode,
      reason: `${candidate.rule} → ask_user: ${v.reason || ask}`,
      version: plan.version,
    });
    if (made) pc.counts.checked_in++;
    if (candidate.followUpId) await core.followups.move(candidate.followUpId, 'pending', 'fired');
    return;
  }

  await core.update(plan.botId, pulsed);
  const fresh = await core.bots.get(plan.botId);
  plan.version = Number(fresh?.version ?? plan.version);
  await resume(pc, candidate, v, v.reason, entry);
}

/** What every log entry of one resume attempt shares. */
type LogBase = Omit<NewLogEntry, 'id' | 'tier' | 'outcome' | 'reason'>;

/** §5.5: re-check, reserve, claim, write, then dispatch (or a check-in when there is no task to continue). */
async function resume(pc: PlanCommit, c: Candidate, v: PulseVerdict | null, reason: string, entry: Partial<NewLogEntry> = {}): Promise<void> {
  const { core, plan } = pc;
  const host = core.host;
  const now = core.now();
  const tier = v ? 2 : 0;
  const logBase: LogBase = { botId: plan.botId, mode: pc.mode, rule: c.rule, verdict: v ? 'resume' : null, taskId: c.taskId, ...entry };

  // A reply cut off with no task to continue: the bot acknowledges it and asks (no run).
  const followUpAlone = c.followUpId !== null && !c.claimable;
  if (!c.claimable && !followUpAlone) {
    if (c.rule === 'stale_streaming' && c.messageId) await host.reconcileMessage(c.messageId);
    const made = await core.checkIn({
      id: `${pc.tickId}:${plan.botId}:cutoff:${c.id}`,
      botId: plan.botId,
      threadId: plan.threadId,
      taskId: null,
      messageId: c.messageId,
      source: 'interrupted_message',
      question: 'My reply was cut off before I finished. Reply here if you still need it, and I will answer again.',
      mode: pc.mode,
      reason: `${c.rule}: a reply was cut off with no task to continue; asked the person`,
      version: plan.version,
    });
    if (made) pc.counts.checked_in++;
    return;
  }

  if (!host.isIdle(plan.botId)) return pc.skip('busy', 'the bot became busy during the pulse', now + jitter(plan.settings.intervalMs, core.random), {}, tier);
  const activity = await host.userActivity(plan.threadId);
  if (activity.userActiveAt !== null && activity.userActiveAt >= pc.obs.at) {
    return pc.skip('user_active', 'a person acted in the thread during the pulse; they come first', userActiveUntil(activity.userActiveAt), {}, tier);
  }
  const active = await core.bots.countInState('resuming');
  if (active >= pc.g.resume_concurrency) {
    return pc.skip(
      'resume_concurrency',
      `${active} heartbeat resumes run already (resume_concurrency ${pc.g.resume_concurrency})`,
      now + pc.g.tick_seconds * 1000,
      {},
      tier,
    );
  }

  let version = c.version;
  if (c.rule === 'orphan_working' && c.taskId) {
    const repaired = await host.repairOrphan(c.taskId);
    if (!repaired) return claimLost(pc, c, 'the orphaned task came back to life (or moved) before its repair', logBase);
    version = repaired.version;
  }
  if (c.rule === 'stale_streaming' && c.messageId) await host.reconcileMessage(c.messageId);

  const spent = await core.reserve(plan.botId, 'resumes', plan.settings, pc.g);
  if (spent !== 'ok') {
    const tz = spent === 'bot' ? plan.settings.timezone : pc.g.timezone;
    const why = spent === 'bot' ? `${plan.settings.maxResumesPerDay} resumes today (bot)` : `${pc.g.global_resumes_per_day} resumes today (all bots)`;
    return pc.skip('budget', why, nextMidnight(now, tz), {}, tier);
  }

  // A follow-up of a finished task continues that task, named by its title (not a new task).
  const finished = followUpAlone && c.taskId ? await host.getTask(c.taskId) : undefined;
  const followUpOf = finished && (finished.status === 'done' || finished.status === 'review') ? finished : undefined;
  if (followUpOf) {
    c = { ...c, title: followUpOf.title, status: followUpOf.status, checkpoint: followUpOf.checkpoint?.summary ?? null };
    plan.steps = (followUpOf.checkpoint?.steps ?? []) as RecordedStep[];
  }
  const preamble = resumePreamble({ candidate: c, now, steps: plan.steps, pulse: v, followUpsEnabled: plan.settings.followUpsEnabled });
  const note = wakeNote(c, reason);
  const job = { botId: plan.botId, threadId: plan.threadId, text: preamble, note };

  if (followUpAlone) {
    // A promise whose task is finished: the follow-up's own compare-and-set is the one-shot lock.
    if (!(await core.followups.move(c.followUpId!, 'pending', 'fired'))) {
      await core.refund(plan.botId, 'resumes', plan.settings, pc.g);
      return claimLost(pc, c, 'the follow-up was taken or cleared meanwhile', logBase);
    }
    await beforeDispatch(pc, c.taskId, now);
    try {
      const d = await host.dispatchToBot(plan.botId, plan.threadId, preamble, {
        heartbeat: true,
        priority: 'low',
        note,
        ...(followUpOf ? { followUpOf: followUpOf.id } : {}),
      });
      return dispatched(pc, c, d, reason, logBase, tier);
    } catch (err) {
      await core.followups.move(c.followUpId!, 'fired', 'pending');
      return dispatchFailed(pc, c, err, logBase);
    }
  }

  if (!c.taskId || version === null) return claimLost(pc, c, 'no task to claim', logBase);
  const claim = await core.queue.claim(c.taskId, version);
  if (!claim) {
    await core.refund(plan.botId, 'resumes', plan.settings, pc.g);
    return claimLost(pc, c, 'the task changed since triage (a reply, a cancel, another worker)', logBase);
  }
  // Attempts and budgets are written; the bot's state too, before the dispatch (§5.5).
  await beforeDispatch(pc, c.taskId, now);
  try {
    const d = await core.queue.dispatch(claim, job);
    await core.queue.complete(claim, 'dispatched');
    if (c.followUpId) await core.followups.move(c.followUpId, 'pending', 'fired');
    return dispatched(pc, c, d, reason, { ...logBase, taskId: claim.taskId }, tier, claim.attempts);
  } catch (err) {
    // Nothing was queued: the claim goes, the attempt stays counted (§12), the next check sees the task.
    await core.queue.complete(claim, 'released').catch(() => undefined);
    return dispatchFailed(pc, c, err, logBase);
  }
}

async function beforeDispatch(pc: PlanCommit, taskId: string | null, now: number): Promise<void> {
  await pc.core.schedule(pc.plan.botId, pc.plan.version, null, {
    ...pc.base(now),
    state: 'resuming',
    last_resume_at: now,
    last_resume_task_id: taskId,
    current_interval_ms: null,
    last_outcome: 'resuming',
  });
  pc.plan.version = Number((await pc.core.bots.get(pc.plan.botId))?.version ?? pc.plan.version);
}

async function dispatched(
  pc: PlanCommit,
  c: Candidate,
  d: { taskId: string; messageId: string },
  reason: string,
  logBase: LogBase,
  tier: 0 | 1 | 2,
  attempts?: number,
): Promise<void> {
  pc.counts.resumed++;
  await pc.core.record({
    id: pc.id('resumed'),
    ...logBase,
    tier,
    outcome: 'resumed',
    taskId: d.taskId,
    dispatched: { task_id: d.taskId, message_id: d.messageId },
    escalated: true,
    reason: `${c.rule} → resume${attempts !== undefined ? ` (attempt ${attempts})` : ''}: ${reason || '(no reason)'}`,
  });
  // When the task was re-read and changed between the claim and now, the run's begin() refuses it (and says so).
  await pc.core.update(pc.plan.botId, { last_resume_task_id: d.taskId, last_outcome: `resumed: ${c.rule}` });
}

async function claimLost(pc: PlanCommit, c: Candidate, why: string, logBase: LogBase): Promise<void> {
  const now = pc.core.now();
  await pc.core.record({
    id: pc.id('lost'),
    ...logBase,
    tier: 2,
    outcome: 'claim_lost',
    reason: `${c.rule}: claim lost — ${why}`,
  });
  await pc.core.schedule(pc.plan.botId, pc.plan.version, now + CLAIM_RETRY_MS, { ...pc.base(now), state: 'idle', last_outcome: 'claim_lost' });
}

async function dispatchFailed(pc: PlanCommit, c: Candidate, err: unknown, logBase: LogBase): Promise<void> {
  const now = pc.core.now();
  pc.counts.errors++;
  await pc.core.record({
    id: pc.id('dispatch'),
    ...logBase,
    tier: 2,
    outcome: 'claim_lost',
    reason: `${c.rule}: the resume could not be queued; the attempt stays counted`,
    error: describeError(err),
  });
  await pc.core.schedule(pc.plan.botId, pc.plan.version, now + jitter(pc.plan.settings.intervalMs, pc.core.random), {
    ...pc.base(now),
    state: 'idle',
    last_outcome: 'dispatch_failed',
  });
}

async function addFigures(pc: PlanCommit, figures: Parameters<HeartbeatCore['budgets']['add']>[2]): Promise<void> {
  const days = pc.core.days(pc.core.now(), pc.plan.settings, pc.g);
  await pc.core.budgets.add(pc.plan.botId, days.bot, figures);
  await pc.core.budgets.add(GLOBAL_SCOPE, days.global, figures);
}
