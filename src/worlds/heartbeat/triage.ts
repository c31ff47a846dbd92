/**
 * Tier 0 as the tick's observe stage (seed 2 §5): deterministic, no model, and proportional to the
 * bots that are due, never to all bots.
 *
 *   1. sweeps by indexed queries for work that appeared with no event — stale claims (a crash
 *      between claim and start), orphaned open tasks (rule 2), messages left streaming (rule 7) —
 *      each marks its bot due;
 *   2. the due bots: `next_heartbeat_at <= now` on its index (a bot with nothing unfinished has
 *      NULL there and is never read);
 *   3. their open work, follow-ups, check-ins and budgets in a few batched reads, then per bot its
 *      thread's newest messages, the person's activity and expired approvals;
 *   4. `triageBot` (rules.ts) per bot; the digest for each bot that will pulse.
 *
 * At most `maxPulses` bots get a pulse per tick (what `pulse_concurrency` can answer within a
 * tick); other due bots with candidates stay due and come first next tick.
 */
import type { BotApproval, Message, Task } from '../../protocol/bots.js';
import type { HeartbeatMode, HeartbeatSettings } from '../../protocol/heartbeat.js';
import { type RecordedStep } from '../../agent/index.js';
import { GLOBAL_SCOPE } from './budget-store.js';
import type { HeartbeatCore } from './core.js';
import { buildDigest, digestOpenTasks, type Digest } from './digest.js';
import { asksQuestion, lastTurn, ORPHAN_AGE_MS, STALE_STREAMING_MS, triageBot, type BotView, type Triage } from './rules.js';
import { quietHours } from './schedule.js';
import { pulseModel, type BotRow, type BotSettings } from './settings.js';

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
  await sweep(core, now);

  const due = await core.bots.due(now, dueLimit);
  if (due.length === 0) return empty;
  const host = core.host;
  const ids = due.map((r) => r.bot_id);
  const [existing, tasks, orphans, followUps, checkins] = await Promise.all([
    host.bots(ids),
    host.openWork({ botIds: ids, limit: 5000 }),
    host.orphans({ olderThanMs: ORPHAN_AGE_MS, botIds: ids }),
    core.followups.pending(ids),
    core.checkins.pending({ botIds: ids, limit: 5000 }),
  ]);
  const alive = new Map(existing.map((b) => [b.id, b]));
  const orphanIds = new Set(orphans.map((t) => t.id));

  // Exhausted tasks: was their one check-in already made (since their last claim)?
  const exhaustedIds = tasks.filter((t) => t.attempts > 0).map((t) => t.id);
  const exhaustedCheckins = await core.checkins.ofTasksSince(exhaustedIds, 'exhausted');

  const dayKeys = due.flatMap((r) => {
    const s = core.settings.forBot(r, settings);
    return [{ scope: r.bot_id, day: core.days(now, s, settings).bot }];
  });
  const globalDay = core.days(now, core.settings.forBot(undefined, settings), settings).global;
  const counts = await core.budgets.counts([...dayKeys, { scope: GLOBAL_SCOPE, day: globalDay }]);
  let globalPulses = counts.get(`${GLOBAL_SCOPE}|${globalDay}`)?.pulses ?? 0;

  // The bots read in depth this tick: every due bot without open work (it goes back to sleep)
  // and, of those with work, about what this tick's pulses can take; the rest stay due.
  const deepRows: BotRow[] = [];
  let withWork = 0;
  let deferred = 0;
  for (const row of due) {
    if (!alive.has(row.bot_id)) {
      // The bot was deleted: its heartbeat rows go too.
      await forget(core, row.bot_id);
      continue;
    }
    const work = hasOpenWork(row, tasks, followUps);
    if (deepRows.length >= deepLimit || (work && withWork >= 2 * maxPulses)) {
      deferred++;
      continue;
    }
    if (work) withWork++;
    deepRows.push(row);
  }
  // Their reads, batched: one query each for all of them.
  for (const row of deepRows) if (row.thread_id === null) row.thread_id = (await host.directThread(row.bot_id)).id;
  const threadIds = deepRows.map((r) => r.thread_id!);
  const failedSince = tasks.filter((t) => t.status === 'failed').map((t) => t.last_heartbeat_at ?? 0);
  const [recent, activities, pendingApprovals, expired] = await Promise.all([
    host.recentMessages(threadIds, MESSAGES_READ),
    host.userActivities(threadIds),
    host.pendingApprovalsOf(threadIds),
    failedSince.length > 0
      ? host.expiredApprovalsOf(
          deepRows.map((r) => r.bot_id),
          Math.min(...failedSince),
        )
      : Promise.resolve([] as BotApproval[]),
  ]);
  const asked = await core.checkins.askedIn(
    [...recent.values()].flatMap((list) => list.filter((m) => m.role === 'bot' && m.heartbeat && m.status === 'done').map((m) => m.id)),
  );

  const plans: Plan[] = [];
  let pulses = 0;
  for (const row of deepRows) {
    const bot = alive.get(row.bot_id)!;
    if (pulses >= maxPulses && hasOpenWork(row, tasks, followUps)) {
      deferred++;
      continue;
    }
    const s = core.settings.forBot(row, settings);
    const threadId = row.thread_id!;
    const botTasks = tasks.filter((t) => t.bot_id === row.bot_id);
    const messages = recent.get(threadId) ?? [];
    const activity = activities.get(threadId) ?? { userActiveAt: null, readAt: null };
    const approvals = expired.filter((a) => a.bot_id === row.bot_id);
    const checkinMessageIds = new Set(messages.filter((m) => asked.has(m.id)).map((m) => m.id));
    const missingTaskIds = await missingTasks(core, messages, row.bot_id, botTasks, checkinMessageIds);
    const botDay = core.days(now, s, settings).bot;
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
      followUps: followUps.filter((f) => f.bot_id === row.bot_id),
      checkins: checkins.filter((c) => c.bot_id === row.bot_id),
      exhaustedAsked: new Set(
        exhaustedCheckins.filter((c) => botTasks.some((t) => t.id === c.task_id && Number(c.created_at) >= (t.last_heartbeat_at ?? 0))).map((c) => c.task_id!),
      ),
      missingTaskIds,
      checkinMessageIds,
      budget: { botPulses: counts.get(`${row.bot_id}|${botDay}`)?.pulses ?? 0, globalPulses, globalMaxPulses: settings.global_pulses_per_day },
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
        plan.pulse = {
          digest: buildDigest({
            bot,
            now,
            timezone: s.timezone,
            messages,
            userActiveAt: activity.userActiveAt,
            candidates: triage.candidates,
            openTasks: digestOpenTasks(
              botTasks.filter((t) => t.thread_id === threadId),
              s.maxTaskAttempts,
            ),
            pendingApprovals: pendingApprovals.get(threadId) ?? 0,
            followUps: view.followUps.filter((f) => f.kind === 'delay').map((f) => ({ note: f.note, dueAt: numOrNull(f.due_at) })),
            limits: {
              pulsesToday: view.budget.botPulses,
              maxPulsesPerDay: s.maxPulsesPerDay,
              resumesToday: counts.get(`${row.bot_id}|${botDay}`)?.resumes ?? 0,
              maxResumesPerDay: s.maxResumesPerDay,
            },
            quietHours: quietHours(now, s.quietHours, s.timezone).quiet,
            botAskedQuestion: turn !== undefined && asksQuestion(turn),
          }),
          role: model.role,
          model: model.model ?? null,
          label: s.model,
          waitingUser: turn !== undefined && asksQuestion(turn),
        };
        pulses++;
        globalPulses++; // a later bot in this tick sees the budget this one may spend
      }
    }
    plans.push(plan);
  }
  return { at: now, mode: settings.mode, settings, plans, deferred };
}

/** Work that appeared without an event: mark its bots due now. Three indexed reads; nothing found, nothing written. */
async function sweep(core: HeartbeatCore, now: number): Promise<void> {
  const [stale, orphans, streaming] = await Promise.all([
    core.queue.reclaimStale(),
    core.host.orphans({ olderThanMs: ORPHAN_AGE_MS, limit: 200 }),
    core.host.staleMessages({ olderThanMs: STALE_STREAMING_MS, limit: 200 }),
  ]);
  const marks = new Map<string, string | null>();
  for (const s of stale) marks.set(s.botId, null);
  for (const t of orphans) marks.set(t.bot_id, null);
  for (const m of streaming) if (m.bot_id) marks.set(m.bot_id, null);
  if (marks.size === 0) return;
  const rows = await core.bots.getMany([...marks.keys()]);
  for (const botId of marks.keys()) {
    const row = rows.get(botId);
    const next = numOrNull(row?.next_heartbeat_at);
    if (next !== null && next <= now) continue;
    await core.mark(botId, now);
  }
}

/** Task ids the bot's newest interrupted message points at that no longer exist (rule 3). */
async function missingTasks(
  core: HeartbeatCore,
  messages: readonly Message[],
  botId: string,
  open: readonly Task[],
  checkinMessageIds: ReadonlySet<string>,
): Promise<Set<string>> {
  const newest = [...messages].reverse().find((m) => m.role === 'bot' && m.bot_id === botId && !checkinMessageIds.has(m.id));
  if (!newest?.interrupted || newest.task_id === null || open.some((t) => t.id === newest.task_id)) return new Set();
  return (await core.host.getTask(newest.task_id)) ? new Set() : new Set([newest.task_id]);
}

function hasOpenWork(row: BotRow, tasks: readonly Task[], followUps: readonly { bot_id: string }[]): boolean {
  return tasks.some((t) => t.bot_id === row.bot_id) || followUps.some((f) => f.bot_id === row.bot_id);
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
