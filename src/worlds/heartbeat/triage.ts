/**
 * Tier 0 as the tick's observe stage (seed 2 §5): deterministic, no model, and proportional to the
 * bots that are due, never to all bots.
 *
 *   1. sweeps by indexed queries for work that appeared with no event — stale claims (a crash
 *      between claim and start), orphaned open tasks (rule 2), messages left streaming (rule 7) —
 *      each marks its bot due;
 *   2. the due bots: `next_heartbeat_at <= now` on its index (a bot with nothing unfinished has
 *      NULL there and is never read);
 *   3. their open work, follow-ups, check-ins and budgets in a few batched reads (a bot with open
 *      work exists; only the others are looked up), then for the bots read in depth their threads'
 *      messages the rules can look at (`triageMessages`: not the settled history behind the last
 *      turn), the person's activity, and expired approvals where a failed task could use them;
 *   4. `triageBot` (rules.ts) per bot; then, for the bots that will pulse only, their bot rows,
 *      whole message windows and pending approvals in one read each, and their digests.
 *
 * At most `maxPulses` bots get a pulse per tick (what `pulse_concurrency` can answer within a
 * tick); other due bots with candidates stay due and come first next tick.
 */
import type { Bot, BotApproval, Message, Task } from '../../protocol/bots.js';
import type { CheckinRow } from './checkin-store.js';
import type { HeartbeatMode, HeartbeatSettings } from '../../protocol/heartbeat.js';
import { type RecordedStep } from '../../agent/index.js';
import { STALE_CLAIM_MS, triageWorkOf } from '../../bots/index.js';
import { GLOBAL_SCOPE } from './budget-store.js';
import type { HeartbeatCore } from './core.js';
import { buildDigest, digestOpenTasks, type Digest } from './digest.js';
import { asksQuestion, interruptedRule, lastTurn, ORPHAN_AGE_MS, STALE_STREAMING_MS, triageBot, type BotView, type Triage } from './rules.js';
import { dayKey, quietHours } from './schedule.js';
import type { DueRow } from './bot-state.js';
import { pulseModel, type BotSettings } from './settings.js';

/** Shared by every bot that has none (most): nothing allocated per bot. */
const NONE: ReadonlySet<string> = new Set();
const NO_ACTIVITY = Object.freeze({ userActiveAt: null, readAt: null });

/** Due bots read per tick, and bots triaged in depth (their thread, activity, approvals) per tick. */
export const DUE_LIMIT = 200;
export const DEEP_LIMIT = 100;
const MESSAGES_READ = 20;

export interface Plan {
  botId: string;
  threadId: string;
  /** The bot row's version at triage (the schedule write compares it). */
  version: number;
  triage: Triage;
  /** Set when the bot pulses this tick. */
  pulse?: { digest: Digest; role: 'local' | 'agent'; model: string | null; label: string; waitingUser: boolean };
  /** The primary task's checkpoint steps (for the resume preamble). */
  steps: RecordedStep[];
  settings: BotSettings;
}

export interface HeartbeatObservation {
  at: number;
  mode: HeartbeatMode;
  settings: HeartbeatSettings;
  plans: Plan[];
  /** Bots due but not triaged this tick (the per-tick limits): they stay due. */
  deferred: number;
}

export async function observe(core: HeartbeatCore, maxPulses: number, limits: { due?: number; deep?: number } = {}): Promise<HeartbeatObservation> {
  const dueLimit = limits.due ?? DUE_LIMIT;
  const deepLimit = limits.deep ?? DEEP_LIMIT;
  const settings = await core.settings.global();
  const now = core.now();
  const empty: HeartbeatObservation = { at: now, mode: settings.mode, settings, plans: [], deferred: 0 };
  if (settings.mode === 'off') return empty;
  // The due read does not wait for the sweep (on Postgres they run side by side): a sweep that
  // marks a bot due, which is rare, has it read again.
  const dueRead = core.bots.due(now, dueLimit);
  dueRead.catch(() => undefined); // awaited below; a failed sweep must not leave it unhandled
  const marked = await sweep(core, now);
  let due = await dueRead;
  if (marked) due = await core.bots.due(now, dueLimit);
  if (due.length === 0) return empty;
  const host = core.host;
  const ids = due.map((r) => r.bot_id);
  // When no per-tick limit can cut (every due bot is read in depth), their threads' messages and
  // the person's activity need not wait for the first round: on Postgres they run beside it. The
  // longest read of a pass, so it goes first.
  const allDeep = due.length <= deepLimit && due.length <= 2 * maxPulses && due.every((r) => r.thread_id !== null);
  const early = allDeep ? threadReads(host, due) : null;
  early?.catch(() => undefined); // awaited below; a failure of the first round must not leave it unhandled
  // One round of reads for everything the due rows alone say to read (on Postgres, side by side).
  const firstRound = Promise.all([
    triageWorkOf(host, { botIds: ids, orphanOlderThanMs: ORPHAN_AGE_MS, limit: 5000 }),
    core.followups.pending(ids),
    core.checkins.pending({ botIds: ids, limit: 5000 }),
  ]);
  firstRound.catch(() => undefined); // awaited below, after the budgets' read is sent
  // Day keys once per zone this tick (formatting a zoned date is dear; most bots share one zone).
  const zoneDays = new Map<string, string>();
  const dayIn = (zone: string) => {
    let day = zoneDays.get(zone);
    if (day === undefined) zoneDays.set(zone, (day = dayKey(now, zone)));
    return day;
  };
  const settingsOf = new Map<string, BotSettings>();
  const dayKeys: { scope: string; day: string }[] = [];
  for (const r of due) {
    const s = core.settings.forBot(r, settings);
    settingsOf.set(r.bot_id, s);
    dayKeys.push({ scope: r.bot_id, day: dayIn(s.timezone) });
  }
  const globalDay = dayIn(settings.timezone);
  const [[{ tasks, orphanIds }, followUps, checkins], counts] = await Promise.all([
    firstRound,
    core.budgets.counts([...dayKeys, { scope: GLOBAL_SCOPE, day: globalDay }]),
  ]);
  // Per bot, once: the loops below look each bot up, never scan every bot's rows again.
  const tasksOf = byBot(tasks);
  // A bot with a task row exists (its tasks go with it): only the others are looked up.
  const alive = new Set(tasksOf.keys());
  const unproven = ids.filter((id) => !alive.has(id));
  if (unproven.length > 0) for (const id of await host.existingBots(unproven)) alive.add(id);
  const followUpsOf = byBot(followUps);
  const checkinsOf = byBot(checkins);
  const hasWork = (botId: string) => tasksOf.has(botId) || followUpsOf.has(botId);

  // Exhausted tasks: was their one check-in already made (since their last claim)?
  const exhaustedIds = tasks.filter((t) => t.attempts > 0).map((t) => t.id);
  const exhaustedCheckins = groupBy(await core.checkins.ofTasksSince(exhaustedIds, 'exhausted'), (c) => c.task_id);

  let globalPulses = counts.get(GLOBAL_SCOPE, globalDay).pulses;

  // The bots read in depth this tick: every due bot without open work (it goes back to sleep)
  // and, of those with work, about what this tick's pulses can take; the rest stay due.
  const deepRows: DueRow[] = [];
  let withWork = 0;
  let deferred = 0;
  for (const row of due) {
    if (!alive.has(row.bot_id)) {
      // The bot was deleted: its heartbeat rows go too.
      await forget(core, row.bot_id);
      continue;
    }
    const work = hasWork(row.bot_id);
    if (deepRows.length >= deepLimit || (work && withWork >= 2 * maxPulses)) {
      deferred++;
      continue;
    }
    if (work) withWork++;
    deepRows.push(row);
  }
  // Their reads, batched: one query each for all of them.
  for (const row of deepRows) if (row.thread_id === null) row.thread_id = (await host.directThread(row.bot_id)).id;
  // Rule 5 looks at expired approvals only for failed tasks that rule 1 does not take first.
  const deepIds = new Set(deepRows.map((r) => r.bot_id));
  const approvalTasks = tasks.filter((t) => t.status === 'failed' && !interruptedRule(t) && deepIds.has(t.bot_id));
  const [[recent, activities], expired] = await Promise.all([
    // The early reads cover every deep row (they are the due rows, less any bot deleted since).
    early ?? threadReads(host, deepRows),
    approvalTasks.length > 0
      ? host.expiredApprovalsOf([...new Set(approvalTasks.map((t) => t.bot_id))], Math.min(...approvalTasks.map((t) => t.last_heartbeat_at ?? 0)))
      : Promise.resolve([] as BotApproval[]),
  ]);
  const expiredOf = byBot(expired);
  const asked = await core.checkins.askedIn(
    [...recent.values()].flatMap((list) => list.filter((m) => m.role === 'bot' && m.heartbeat && m.status === 'done').map((m) => m.id)),
  );

  const plans: Plan[] = [];
  // The digests wait until the rules have said which bots pulse: only those bots' rows are read for them.
  const digests: {
    plan: Plan;
    pulse: Omit<NonNullable<Plan['pulse']>, 'digest'>;
    build: (bot: Bot, messages: readonly Message[], pendingApprovals: ReadonlyMap<string, number>) => Digest;
  }[] = [];
  let pulses = 0;
  for (const row of deepRows) {
    if (pulses >= maxPulses && hasWork(row.bot_id)) {
      deferred++;
      continue;
    }
    const s = settingsOf.get(row.bot_id)!;
    const threadId = row.thread_id!;
    const botTasks = tasksOf.get(row.bot_id) ?? [];
    const messages = recent.get(threadId) ?? [];
    const activity = activities.get(threadId) ?? NO_ACTIVITY;
    const approvals = expiredOf.get(row.bot_id) ?? [];
    const checkinMessageIds = asked.size === 0 ? NONE : new Set(messages.filter((m) => asked.has(m.id)).map((m) => m.id));
    const pointedAt = unknownTask(messages, row.bot_id, botTasks, checkinMessageIds);
    // Rare (a cut-off reply whose task is not open work): only then a read, and only then an await.
    const missingTaskIds = pointedAt === null || (await core.host.getTask(pointedAt)) ? NONE : new Set([pointedAt]);
    const botDay = dayIn(s.timezone);
    const view: BotView = {
      botId: row.bot_id,
      threadId,
      settings: s,
      backoffUntil: numOrNull(row.backoff_until),
      cooldownUntil: numOrNull(row.cooldown_until),
      forced: row.forced_at !== null,
      stoppedAt: numOrNull(row.stopped_at),
      idle: host.isIdle(row.bot_id),
      tasks: botTasks,
      orphanIds,
      messages,
      userActiveAt: activity.userActiveAt,
      expiredApprovals: approvals,
      followUps: followUpsOf.get(row.bot_id) ?? [],
      checkins: checkinsOf.get(row.bot_id) ?? [],
      exhaustedAsked: exhaustedAsked(botTasks, exhaustedCheckins),
      missingTaskIds,
      checkinMessageIds,
      budget: { botPulses: counts.get(row.bot_id, botDay).pulses, globalPulses, globalMaxPulses: settings.global_pulses_per_day },
      globalTimezone: settings.timezone,
    };
    const triage = triageBot(view, now, { mode: settings.mode, random: core.random });
    const plan: Plan = { botId: row.bot_id, threadId, version: Number(row.version), triage, steps: [], settings: s };
    if (triage.kind === 'candidates') {
      const primaryTask = triage.primary.taskId ? botTasks.find((t) => t.id === triage.primary.taskId) : undefined;
      plan.steps = (primaryTask?.checkpoint?.steps ?? []) as RecordedStep[];
      if (settings.mode !== 'triage' && !triage.fastPath) {
        const turn = lastTurn(messages, checkinMessageIds);
        const model = pulseModel(s.model);
        const waitingUser = turn !== undefined && asksQuestion(turn);
        const pulseDay = view.budget.botPulses;
        digests.push({
          plan,
          pulse: { role: model.role, model: model.model ?? null, label: s.model, waitingUser },
          build: (bot, window, pendingApprovals) =>
            buildDigest({
              bot,
              now,
              timezone: s.timezone,
              messages: window,
              userActiveAt: activity.userActiveAt,
              candidates: triage.candidates,
              openTasks: digestOpenTasks(
                botTasks.filter((t) => t.thread_id === threadId),
                s.maxTaskAttempts,
              ),
              pendingApprovals: pendingApprovals.get(threadId) ?? 0,
              followUps: view.followUps.filter((f) => f.kind === 'delay').map((f) => ({ note: f.note, dueAt: numOrNull(f.due_at) })),
              limits: {
                pulsesToday: pulseDay,
                maxPulsesPerDay: s.maxPulsesPerDay,
                resumesToday: counts.get(row.bot_id, botDay).resumes,
                maxResumesPerDay: s.maxResumesPerDay,
              },
              quietHours: quietHours(now, s.quietHours, s.timezone).quiet,
              botAskedQuestion: waitingUser,
            }),
        });
        pulses++;
        globalPulses++; // a later bot in this tick sees the budget this one may spend
      }
    }
    plans.push(plan);
  }
  if (digests.length === 0) return { at: now, mode: settings.mode, settings, plans, deferred };
  // Their digests quote the thread's whole window (the last person's and bot's words), not only what the rules read.
  const [pulsing, windows, pendingApprovals] = await Promise.all([
    host.bots(digests.map((d) => d.plan.botId)),
    host.recentMessages(
      digests.map((d) => d.plan.threadId),
      MESSAGES_READ,
    ),
    host.pendingApprovalsOf(digests.map((d) => d.plan.threadId)),
  ]);
  const bots = new Map(pulsing.map((b) => [b.id, b]));
  const gone = new Set<Plan>();
  for (const { plan, pulse, build } of digests) {
    const bot = bots.get(plan.botId);
    // Deleted since this tick's existence check: no pulse for it (the next tick forgets its rows).
    if (bot) plan.pulse = { digest: build(bot, windows.get(plan.threadId) ?? [], pendingApprovals), ...pulse };
    else gone.add(plan);
  }
  return { at: now, mode: settings.mode, settings, plans: gone.size ? plans.filter((p) => !gone.has(p)) : plans, deferred };
}

/** What the rules read of the bots' threads: the messages they look at, and the person's activity. */
function threadReads(host: HeartbeatCore['host'], rows: readonly DueRow[]) {
  return Promise.all([
    host.triageMessages(
      rows.map((r) => ({ threadId: r.thread_id!, botId: r.bot_id })),
      MESSAGES_READ,
    ),
    host.userActivities(rows.map((r) => r.thread_id!)),
  ]);
}

/**
 * Work that appeared without an event: mark its bots due now. One indexed read says which of the
 * three sweeps could find anything (on a quiet tick: none), and only those run; nothing found,
 * nothing written.
 */
/** The sweeps for work that appeared with no event: whether they marked a bot due. */
async function sweep(core: HeartbeatCore, now: number): Promise<boolean> {
  const maybe = await core.host.leftovers({ claimOlderThanMs: STALE_CLAIM_MS, orphanOlderThanMs: ORPHAN_AGE_MS, streamingOlderThanMs: STALE_STREAMING_MS });
  if (!maybe.claims && !maybe.open && !maybe.streaming) return false;
  const [stale, orphans, streaming] = await Promise.all([
    maybe.claims ? core.queue.reclaimStale(STALE_CLAIM_MS) : [],
    maybe.open ? core.host.orphans({ olderThanMs: ORPHAN_AGE_MS, limit: 200 }) : [],
    maybe.streaming ? core.host.staleMessages({ olderThanMs: STALE_STREAMING_MS, limit: 200 }) : [],
  ]);
  const marks = new Map<string, string | null>();
  for (const s of stale) marks.set(s.botId, null);
  for (const t of orphans) marks.set(t.bot_id, null);
  for (const m of streaming) if (m.bot_id) marks.set(m.bot_id, null);
  if (marks.size === 0) return false;
  const rows = await core.bots.getMany([...marks.keys()]);
  let marked = false;
  for (const botId of marks.keys()) {
    const row = rows.get(botId);
    const next = numOrNull(row?.next_heartbeat_at);
    if (next !== null && next <= now) continue;
    await core.mark(botId, now);
    marked = true;
  }
  return marked;
}

/**
 * The task the bot's newest interrupted message points at, when it is not among the bot's open
 * work (rule 3 asks whether it still exists); null when there is nothing to ask.
 */
function unknownTask(messages: readonly Message[], botId: string, open: readonly Task[], checkinMessageIds: ReadonlySet<string>): string | null {
  let newest: Message | undefined;
  for (let i = messages.length - 1; i >= 0 && !newest; i--) {
    const m = messages[i]!;
    if (m.role === 'bot' && m.bot_id === botId && !checkinMessageIds.has(m.id)) newest = m;
  }
  if (!newest?.interrupted || newest.task_id === null || open.some((t) => t.id === newest.task_id)) return null;
  return newest.task_id;
}

/** Rows by their bot (each list keeps the read's order). */
function byBot<T extends { bot_id: string }>(rows: readonly T[]): Map<string, T[]> {
  return groupBy(rows, (r) => r.bot_id);
}

function groupBy<T>(rows: readonly T[], key: (r: T) => string | null): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    if (k === null) continue;
    const list = out.get(k);
    if (list) list.push(r);
    else out.set(k, [r]);
  }
  return out;
}

/** The bot's tasks whose exhaustion check-in was made since their last claim. */
function exhaustedAsked(botTasks: readonly Task[], checkinsOfTask: ReadonlyMap<string, readonly CheckinRow[]>): ReadonlySet<string> {
  if (checkinsOfTask.size === 0) return NONE;
  const out = new Set<string>();
  for (const t of botTasks) {
    if ((checkinsOfTask.get(t.id) ?? []).some((c) => Number(c.created_at) >= (t.last_heartbeat_at ?? 0))) out.add(t.id);
  }
  return out;
}

async function forget(core: HeartbeatCore, botId: string): Promise<void> {
  await core.bots.remove(botId);
  await core.followups.removeBot(botId);
  await core.checkins.removeBot(botId);
  await core.logs.removeBot(botId);
  await core.budgets.removeBot(botId);
}

function numOrNull(v: number | string | null | undefined): number | null {
  return v === null || v === undefined ? null : Number(v);
}
