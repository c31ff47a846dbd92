/**
 * Tier 0 triage for one bot (seed 2 §5.2–§5.4): pure, deterministic, no model. Given what the
 * store says about a due bot, it decides whether the bot is skipped (and why, and when to look
 * again), has nothing unfinished (sleeps until a change wakes it), or has candidates — the first
 * by rule priority is the primary, the rest go to the pulse's digest — and which exhausted
 * candidates get their one check-in (the terminal rule).
 *
 * Gates in order: disabled → quiet hours → busy (single-flight here, or live work elsewhere) →
 * user active → pulse-error backoff → waiting for the person → candidates (each: group thread,
 * user driving, superseded, asked, exhausted) → cooldown → budget. A person's "Check now"
 * (`forced`) passes quiet hours, user activity, backoff and cooldown, never budgets.
 */
import { plural } from '../../core/words.js';
import { STALE_CLAIM_MS } from '../../bots/index.js';
import type { BotApproval, Message, Task } from '../../protocol/bots.js';
import { CANDIDATE_RULES, type CandidateRule, type HeartbeatMode, type SkipRule } from '../../protocol/heartbeat.js';
import type { CheckinRow } from './checkin-store.js';
import type { FollowUpRow } from './followup-store.js';
import { quietHours, USER_ACTIVE_MS, jitter, nextMidnight, userActiveUntil, type Random } from './schedule.js';
import type { BotSettings } from './settings.js';

/** Rule 2: an open task untouched this long with no run. Rule 7: a message left streaming this long. */
export const ORPHAN_AGE_MS = 120_000;
export const STALE_STREAMING_MS = 60_000;

const RETRYABLE = new Set(['timeout', 'provider', 'rate_limit']);

export interface BotView {
  botId: string;
  /** The bot's direct thread (the only place the heartbeat acts). */
  threadId: string;
  settings: BotSettings;
  backoffUntil: number | null;
  cooldownUntil: number | null;
  /** A person asked for a check now. */
  forced: boolean;
  /** A person stopped the bot then: work that stopped before is never resumed. */
  stoppedAt: number | null;
  /** Single-flight in this process (`isIdle`). */
  idle: boolean;
  /** Open work of the bot, every thread: queued/working, failed with a resumable kind. */
  tasks: readonly Task[];
  /** Of those, the queued/working ones with no live run anywhere (rule 2). */
  orphanIds: ReadonlySet<string>;
  /** The direct thread's newest messages, oldest first. */
  messages: readonly Message[];
  userActiveAt: number | null;
  expiredApprovals: readonly BotApproval[];
  /** Pending follow-ups of the bot. */
  followUps: readonly FollowUpRow[];
  /** Pending check-ins of the bot. */
  checkins: readonly CheckinRow[];
  /** Tasks already given their exhaustion check-in since their last claim (any state). */
  exhaustedAsked: ReadonlySet<string>;
  /** Task ids messages point at that no longer exist. */
  missingTaskIds: ReadonlySet<string>;
  /** Messages that ask a check-in's question (the host wrote them; they are not turns of the conversation). */
  checkinMessageIds: ReadonlySet<string>;
  budget: { botPulses: number; globalPulses: number; globalMaxPulses: number };
  globalTimezone: string;
}

export interface Candidate {
  /** The id the pulse answers with: a task id, `message:<id>` or `followup:<id>`. */
  id: string;
  rule: CandidateRule;
  taskId: string | null;
  messageId: string | null;
  followUpId: string | null;
  title: string;
  status: string;
  errorKind: string | null;
  lastError: string | null;
  attempts: number;
  /** The task's version at triage (the claim compares it). */
  version: number | null;
  /** When the work stopped (or the follow-up came due). */
  at: number;
  checkpoint: string | null;
  /** An interrupted reply's partial text (what the bot had written). */
  partial: string | null;
  /** A follow-up's note. */
  note: string | null;
  /** The task can be claimed and dispatched again (not final, not working). */
  claimable: boolean;
}

export type Triage =
  | { kind: 'skip'; skip: SkipRule; reason: string; next: number | null; terminal: Candidate[] }
  | { kind: 'candidates'; primary: Candidate; candidates: Candidate[]; terminal: Candidate[]; fastPath: boolean; next: number };

const rank = (r: CandidateRule) => CANDIDATE_RULES.indexOf(r);

/** A bot message that asks the person something (a check-in's question is tracked by its own row instead). */
export function asksQuestion(m: Message): boolean {
  return m.role === 'bot' && m.status === 'done' && /\?[\s"'”’»)\]*_.]*$/u.test(m.text.trim());
}

/** The last message that is a turn of the conversation (no host notes, no check-in questions). */
export function lastTurn(messages: readonly Message[], checkinMessageIds: ReadonlySet<string> = new Set()): Message | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'system' || checkinMessageIds.has(m.id)) continue;
    if (m.role === 'bot' && (m.status === 'queued' || m.status === 'streaming')) continue;
    return m;
  }
  return undefined;
}

// No closures inside triageBot: it runs per due bot (100,000s in a pass), and a named closure
// costs an allocation per call (and under tsx's keepNames a defineProperty too).
function skip(rule: SkipRule, reason: string, next: number | null, terminal: Candidate[] = []): Triage {
  return { kind: 'skip', skip: rule, reason, next, terminal };
}

function pendingCheckinFor(checkins: readonly CheckinRow[], key: { taskId?: string | null; messageId?: string | null }): boolean {
  return checkins.some((c) => (key.taskId && c.task_id === key.taskId) || (key.messageId && c.message_id === key.messageId));
}

export function triageBot(v: BotView, now: number, opts: { mode: HeartbeatMode; random: Random }): Triage {
  const s = v.settings;

  if (!s.enabled) return skip('disabled', 'heartbeat switched off for this bot', null);
  if (!v.forced) {
    const q = quietHours(now, s.quietHours, s.timezone);
    if (q.quiet) return skip('quiet_hours', `quiet hours ${s.quietHours.start}–${s.quietHours.end} (${s.timezone})`, q.endsAt);
  }
  const liveElsewhere = v.tasks.filter((t) => (t.status === 'queued' || t.status === 'working') && !v.orphanIds.has(t.id));
  if (!v.idle || liveElsewhere.length > 0) {
    if (!v.idle) return skip('busy', 'the bot is running, queued, dispatching or pulsing', now + jitter(s.intervalMs, opts.random));
    // Open work with no run here: live in another process, or an orphan once it is old enough (rule 2).
    const oldest = Math.min(...liveElsewhere.map((t) => t.updated_at));
    return skip(
      'busy',
      `task ${liveElsewhere[0]!.id} is ${liveElsewhere[0]!.status}`,
      Math.min(now + jitter(s.intervalMs, opts.random), oldest + ORPHAN_AGE_MS + 1),
    );
  }
  if (!v.forced && v.userActiveAt !== null && now - v.userActiveAt < USER_ACTIVE_MS) {
    return skip('user_active', `a person was active ${Math.round((now - v.userActiveAt) / 1000)} s ago`, userActiveUntil(v.userActiveAt));
  }
  if (!v.forced && v.backoffUntil !== null && v.backoffUntil > now) {
    return skip('backoff', `pulse errors: backing off until ${new Date(v.backoffUntil).toISOString()}`, v.backoffUntil);
  }
  const turn = lastTurn(v.messages, v.checkinMessageIds);
  if (turn && asksQuestion(turn) && turn.bot_id === v.botId) {
    return skip('waiting_user', 'the bot asked a question the person has not answered', null);
  }

  const live: Candidate[] = [];
  const terminal: Candidate[] = [];
  const permanent: { rule: SkipRule; reason: string }[] = [];
  const timeBased: number[] = [];
  const botMessages = v.messages.filter((m) => m.role === 'bot' && m.bot_id === v.botId && !v.checkinMessageIds.has(m.id));
  const latestBot = [...botMessages].reverse().find((m) => m.status !== 'queued' && m.status !== 'streaming');

  // ── tasks: rules 1, 2, 5, 6 ─────────────────────────────────────────────
  const direct = v.tasks.filter((t) => t.thread_id === v.threadId);
  if (v.tasks.length > 0 && direct.length === 0) permanent.push({ rule: 'group_thread', reason: 'only group-thread work (left to its members)' });
  for (const t of direct) {
    const rule = taskRule(t, v);
    if (!rule) continue;
    // Claimed by a worker about to dispatch it: not ours; once the claim is stale it may be taken over.
    if (t.claimed_at !== null && now - t.claimed_at < STALE_CLAIM_MS) {
      timeBased.push(t.claimed_at + STALE_CLAIM_MS + 1);
      continue;
    }
    const c = taskCandidate(t, rule, v);
    const at = c.at;
    const lastStop = t.error_kind === 'preempted';
    // The person took over (or the bot moved on) after this work stopped: it is theirs now. A
    // preempted resume is the exception — it stepped aside for the person and may come back.
    if (!lastStop && turn && turn.role === 'user' && turn.created_at > at) {
      permanent.push({ rule: 'user_driving', reason: `the person wrote after "${c.title}" stopped` });
      continue;
    }
    if (!lastStop && latestBot && latestBot.created_at > at && !latestBot.interrupted && latestBot.task_id !== t.id) {
      permanent.push({ rule: 'superseded', reason: `the bot answered since "${c.title}" stopped` });
      continue;
    }
    if (v.stoppedAt !== null && at <= v.stoppedAt) {
      permanent.push({ rule: 'user_driving', reason: `the person pressed Stop after "${c.title}" was cut off` });
      continue;
    }
    if (pendingCheckinFor(v.checkins, { taskId: t.id })) {
      permanent.push({ rule: 'asked', reason: `a check-in about "${c.title}" waits for the person` });
      continue;
    }
    if (t.attempts >= s.maxTaskAttempts) {
      if (v.exhaustedAsked.has(t.id))
        permanent.push({ rule: 'exhausted', reason: `"${c.title}" used its ${s.maxTaskAttempts} attempts; the person was asked` });
      else terminal.push(c);
      continue;
    }
    live.push(c);
  }

  // ── messages: rules 3 and 7 ─────────────────────────────────────────────
  const openTaskIds = new Set(v.tasks.filter((t) => t.status === 'queued' || t.status === 'working').map((t) => t.id));
  const newestBot = botMessages.at(-1);
  if (newestBot && newestBot.interrupted && newestBot.status === 'error' && (newestBot.task_id === null || v.missingTaskIds.has(newestBot.task_id))) {
    const c = messageCandidate(newestBot, 'interrupted_message');
    if (pendingCheckinFor(v.checkins, { messageId: newestBot.id }))
      permanent.push({ rule: 'asked', reason: 'a check-in about the cut-off reply waits for the person' });
    else if (turn && turn.role === 'user' && turn.created_at > c.at)
      permanent.push({ rule: 'user_driving', reason: 'the person wrote after the reply was cut off' });
    else live.push(c);
  }
  for (const m of botMessages) {
    if (m.status !== 'streaming' && m.status !== 'queued') continue;
    if (m.task_id !== null && openTaskIds.has(m.task_id)) continue; // its task is the candidate (rule 2) or busy
    if (now - m.updated_at <= STALE_STREAMING_MS) {
      timeBased.push(m.updated_at + STALE_STREAMING_MS + 1);
      continue;
    }
    const task = m.task_id !== null ? v.tasks.find((t) => t.id === m.task_id) : undefined;
    // Reconcile, then continue (rule 7): a reply whose task can be resumed continues that task;
    // only one with nothing to continue asks the person.
    const resumable = task !== undefined && task.status === 'failed' && task.attempts < s.maxTaskAttempts && task.claimed_at === null;
    live.push({
      ...messageCandidate(m, 'stale_streaming'),
      taskId: task?.id ?? null,
      ...(resumable ? { title: task.title, attempts: task.attempts, version: task.version, checkpoint: task.checkpoint?.summary ?? null } : {}),
      claimable: resumable,
    });
  }

  // ── follow-ups: rules 4 and 8 ───────────────────────────────────────────
  for (const f of v.followUps) {
    if (f.kind !== 'delay' || f.due_at === null || f.thread_id !== v.threadId) continue;
    const due = Number(f.due_at);
    if (due > now) {
      timeBased.push(due);
      continue;
    }
    const task = f.task_id !== null ? v.tasks.find((t) => t.id === f.task_id) : undefined;
    live.push({
      id: `followup:${f.id}`,
      rule: f.origin === 'person' ? 'follow_up_reminder' : 'follow_up_due',
      taskId: f.task_id,
      messageId: null,
      followUpId: f.id,
      title: task?.title ?? f.note.slice(0, 80),
      status: task?.status ?? 'follow-up',
      errorKind: task?.error_kind ?? null,
      lastError: task?.error ?? null,
      attempts: task?.attempts ?? 0,
      version: task?.version ?? null,
      at: due,
      checkpoint: task?.checkpoint?.summary ?? null,
      partial: null,
      note: f.note,
      claimable: task !== undefined && task.status === 'failed' && task.attempts < s.maxTaskAttempts,
    });
  }

  // Rule 2 timing: open work that is not an orphan yet is "busy" above; nothing to add here.
  live.sort((a, b) => rank(a.rule) - rank(b.rule) || b.at - a.at);

  if (live.length === 0) {
    if (terminal.length > 0) return skip('exhausted', `${plural(terminal.length, 'task')} used their attempts: one check-in each`, null, terminal);
    if (timeBased.length > 0) {
      const next = Math.min(...timeBased);
      return skip('nothing_unfinished', `nothing due yet; next at ${new Date(next).toISOString()}`, next);
    }
    const first = permanent[0];
    return first ? skip(first.rule, first.reason, null) : skip('nothing_unfinished', 'no unfinished work', null);
  }

  const primary = live[0]!;
  if (!v.forced && v.cooldownUntil !== null && v.cooldownUntil > now) {
    return skip('cooldown', `resumed recently; cooldown until ${new Date(v.cooldownUntil).toISOString()}`, v.cooldownUntil, terminal);
  }
  const fastPath =
    opts.mode === 'resume' &&
    s.autoResumeOnRestart &&
    primary.rule === 'interrupted_task' &&
    primary.errorKind === 'interrupted' &&
    primary.attempts === 0 &&
    (primary.checkpoint !== null || primary.partial !== null);
  if (!fastPath && opts.mode !== 'triage') {
    if (v.budget.botPulses >= s.maxPulsesPerDay) {
      return skip('budget', `${v.budget.botPulses}/${s.maxPulsesPerDay} pulses today (bot)`, nextMidnight(now, s.timezone), terminal);
    }
    if (v.budget.globalPulses >= v.budget.globalMaxPulses) {
      return skip('budget', `${v.budget.globalPulses}/${v.budget.globalMaxPulses} pulses today (all bots)`, nextMidnight(now, v.globalTimezone), terminal);
    }
  }
  return { kind: 'candidates', primary, candidates: live, terminal, fastPath, next: now + jitter(s.intervalMs, opts.random) };
}

/** Rule 1's task: cut off (a restart, a preemption). A failed task it takes is never rule 5's or 6's. */
export function interruptedRule(t: Pick<Task, 'interrupted' | 'error_kind'>): boolean {
  return t.interrupted && (t.error_kind === 'interrupted' || t.error_kind === 'preempted');
}

function taskRule(t: Task, v: BotView): CandidateRule | null {
  if (t.status === 'queued' || t.status === 'working') return v.orphanIds.has(t.id) ? 'orphan_working' : null;
  if (t.status !== 'failed') return null;
  if (interruptedRule(t)) return 'interrupted_task';
  const since = t.last_heartbeat_at ?? 0;
  if (v.expiredApprovals.some((a) => a.task_id === t.id && a.expired_at !== null && a.expired_at > since)) return 'approval_expired';
  if (t.error_kind !== null && RETRYABLE.has(t.error_kind)) return 'retryable_failure';
  return null;
}

function taskCandidate(t: Task, rule: CandidateRule, v: BotView): Candidate {
  const message = t.message_id ? v.messages.find((m) => m.id === t.message_id) : undefined;
  const partial = message && message.interrupted && message.text.trim() ? message.text : null;
  return {
    id: t.id,
    rule,
    taskId: t.id,
    messageId: t.message_id,
    followUpId: null,
    title: t.title,
    status: t.status,
    errorKind: t.error_kind,
    lastError: t.error,
    attempts: t.attempts,
    version: t.version,
    at: t.finished_at ?? t.updated_at,
    checkpoint: t.checkpoint?.summary ?? null,
    partial,
    note: null,
    // An orphan is repaired (failed + interrupted) before its claim.
    claimable: t.status !== 'working' || rule === 'orphan_working',
  };
}

function messageCandidate(m: Message, rule: CandidateRule): Candidate {
  return {
    id: `message:${m.id}`,
    rule,
    taskId: null,
    messageId: m.id,
    followUpId: null,
    title: 'an answer that was cut off',
    status: m.status,
    errorKind: m.interrupted ? 'interrupted' : null,
    lastError: m.error,
    attempts: 0,
    version: null,
    at: m.updated_at,
    checkpoint: null,
    partial: m.text.trim() ? m.text : null,
    note: null,
    claimable: false,
  };
}
