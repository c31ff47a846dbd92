/**
 * What the heartbeat hears from the bots host, between ticks:
 *   settled        a heartbeat resume ended → cooldown, the log; any run that failed with a
 *                  resumable kind → its bot is marked due; a completed task clears its follow-ups;
 *                  every run's calls and tokens → the measured size of a full bot call
 *   control lines  FOLLOWUP: (a due candidate, or "when user replies") and BLOCKED: (a check-in)
 *   job dropped    a person's message set a queued resume aside (attempt refunded)
 *   human action   a reply resolves the thread's check-ins and "when user replies" follow-ups and
 *                  resets attempts (after an in-flight resume settles); cancel/dismiss/stop
 *                  resolve and clear theirs; an approval answer clears its check-in
 *   persona        the FOLLOWUP:/BLOCKED: lines when `follow_ups_enabled` (§8)
 *   attention      pending check-ins count in needs-attention
 */
import type { ControlLinesInfo, DroppedJobInfo, HumanAction, SettledInfo } from '../../bots/index.js';
import { describeError } from '../../core/index.js';
import { cleanLine } from '../../llm/index.js';
import type { Checkin, HeartbeatMode } from '../../protocol/heartbeat.js';
import { GLOBAL_SCOPE } from './budget-store.js';
import type { HeartbeatCore } from './core.js';
import { dayKey, jitter, userActiveUntil } from './schedule.js';
import type { BotSettings } from './settings.js';

const RESUMABLE = new Set(['interrupted', 'preempted', 'timeout', 'provider', 'rate_limit', 'approval_expired']);

export const PERSONA_FOLLOWUPS = [
  'If you stop before the work is finished, end your answer with one of these lines (the user does not see them; the host acts on them):',
  'FOLLOWUP: <10m | 2h | when user replies> — <what you will do then>   (the host wakes you then to keep your promise)',
  'BLOCKED: <what you need from the user to go on>   (the host asks the user for you)',
].join('\n');

/** Persona lines are written synchronously: their settings are kept here, refreshed on change and every few minutes. */
class PersonaCache {
  mode: HeartbeatMode = 'off';
  followUps = true;
  overrides = new Map<string, boolean>();
  disabled = new Set<string>();
  at = -Infinity;

  wants(botId: string): boolean {
    if (this.mode === 'off' || this.disabled.has(botId)) return false;
    return this.overrides.get(botId) ?? this.followUps;
  }
}

export class HeartbeatListeners {
  readonly persona = new PersonaCache();
  /** Tasks whose attempts reset when their in-flight resume settles (§7.5: never earlier). */
  private readonly resetAfterSettle = new Set<string>();
  /** Follow-ups a settling run just wrote (its control lines come before its settle): its own are kept. */
  private readonly justAdded = new Map<string, Set<string>>();
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly core: HeartbeatCore) {}

  register(): void {
    const host = this.core.host;
    this.unsubscribe.push(
      host.onSettled((i) => this.guard('settled', () => this.settled(i))),
      host.onControlLines((i) => this.guard('control lines', () => this.controlLines(i))),
      host.onJobDropped((i) => this.guard('job dropped', () => this.dropped(i))),
      host.onHumanAction((a) => this.guard('human action', () => this.human(a))),
      host.addPersonaSection(({ bot, thread }) => (thread.kind === 'direct' && this.persona.wants(bot.id) ? PERSONA_FOLLOWUPS : undefined)),
      host.registerAttention(() => this.core.checkins.counts()),
    );
  }

  close(): void {
    for (const u of this.unsubscribe.splice(0)) u();
  }

  async refreshPersona(maxAgeMs = 0): Promise<void> {
    const now = this.core.now();
    if (now - this.persona.at < maxAgeMs) return;
    const g = await this.core.settings.global();
    this.persona.mode = g.mode;
    this.persona.followUps = g.follow_ups_enabled;
    this.persona.overrides = await this.core.bots.followUpOverrides();
    this.persona.disabled = new Set(await this.core.bots.disabled());
    this.persona.at = now;
  }

  private async guard(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.core.d.log.warn({ err: describeError(err) }, `heartbeat: the ${what} listener failed`);
    }
  }

  private async botSettings(botId: string): Promise<{ s: BotSettings; mode: HeartbeatMode; tz: string }> {
    const g = await this.core.settings.global(1000);
    return { s: this.core.settings.forBot(await this.core.bots.get(botId), g), mode: g.mode, tz: g.timezone };
  }

  private async settled(i: SettledInfo): Promise<void> {
    const core = this.core;
    const now = core.now();
    const g = await core.settings.global(1000);
    // The measured prompt size of a full bot call (any source), and the heartbeat's own resumes.
    const globalDay = dayKey(now, g.timezone);
    await core.budgets.add(GLOBAL_SCOPE, globalDay, {
      full_calls: i.usage.calls,
      full_input_tokens: i.usage.inputTokens,
      ...(i.heartbeat
        ? { resume_runs: 1, resume_calls: i.usage.calls, resume_input_tokens: i.usage.inputTokens, resume_output_tokens: i.usage.outputTokens }
        : {}),
    });
    const task = i.task;
    if (task.status === 'done' || task.status === 'review') {
      // Follow-ups of earlier runs of a completed task are obsolete (this run's own came just before).
      const own = this.justAdded.get(task.id) ?? new Set<string>();
      const cleared = await core.followups.moveWhere({ taskId: task.id, exceptIds: [...own] }, 'cleared');
      for (const f of cleared) core.d.emit('heartbeat.followup_changed', { followup: f });
    }
    this.justAdded.delete(task.id);
    if (task.status === 'cancelled' || task.status === 'dismissed') {
      for (const c of await core.checkins.resolveWhere({ taskId: task.id }, 'cancelled')) core.d.emit('heartbeat.checkin_changed', { checkin: c });
    }
    if (this.resetAfterSettle.delete(task.id)) await core.host.resetAttempts(task.id);

    if (i.heartbeat) {
      const { s } = await this.botSettings(i.botId);
      const until = now + g.resume_cooldown_seconds * 1000;
      await core.bots.ensure(i.botId, i.threadId);
      await core.update(i.botId, { state: 'cooldown', cooldown_until: until, last_outcome: `settled: ${task.status}` });
      await core.record({
        id: core.freshId(`settled:${task.id}`),
        botId: i.botId,
        mode: g.mode,
        tier: 2,
        outcome: 'settled',
        taskId: task.id,
        reason: `the resume ended ${task.status}${task.error_kind ? ` (${task.error_kind})` : ''}; cooldown ${Math.round(g.resume_cooldown_seconds / 60)} min`,
        inputTokens: i.usage.inputTokens,
        outputTokens: i.usage.outputTokens,
        ms: i.outcome ? i.outcome.finishedAt - i.outcome.startedAt : null,
      });
      await core.budgets.add(i.botId, dayKey(now, s.timezone), {
        resume_runs: 1,
        resume_calls: i.usage.calls,
        resume_input_tokens: i.usage.inputTokens,
        resume_output_tokens: i.usage.outputTokens,
      });
      // After the cooldown, one look: a failed resume may go again within its attempts; a done one finds nothing.
      if (g.mode !== 'off') await core.mark(i.botId, until, i.threadId);
      if (task.status === 'failed' && task.error_kind === 'approval_expired' && g.mode === 'resume') await this.approvalExpired(i, g.mode);
      return;
    }
    if (g.mode === 'off') return;
    if (task.status === 'failed' && task.error_kind !== null && RESUMABLE.has(task.error_kind)) {
      const thread = await core.host.thread(i.threadId);
      if (thread?.kind !== 'direct') return;
      // Due at the next tick, so the work resumes within §13's 3 ticks (the pulse and budgets still
      // decide) — or, while the person who asked still counts as active, the moment they no longer do.
      const { userActiveAt } = await core.host.userActivity(i.threadId);
      const due = Math.max(now + g.tick_seconds * 1000, userActiveAt === null ? 0 : userActiveUntil(userActiveAt));
      await core.mark(i.botId, due, i.threadId);
    }
  }

  /**
   * §7.1: an approval expired in a heartbeat resume (nobody was there). Exactly one check-in, made
   * here and not left to a pulse — which could say resume and have the bot ask the same approval
   * again, up to the attempt cap. The pending check-in holds the task (rule `asked`) until the
   * person answers: a reply, the approval's Retry, or Check now.
   */
  private async approvalExpired(i: SettledInfo, mode: HeartbeatMode): Promise<void> {
    const title = cleanLine(i.task.title, 80);
    const why = cleanLine(i.task.error ?? 'the approval expired', 200);
    await this.core.checkIn({
      id: `approval_expired:${i.messageId}`,
      botId: i.botId,
      threadId: i.threadId,
      taskId: i.task.id,
      source: 'approval_expired',
      question: `To go on with “${title}” I need your approval, and nobody was there to give it: ${why} Reply here (or use Retry) and I will ask again.`,
      mode,
      reason: `approval_expired: “${title}” waits for a person to approve (${cleanLine(why, 100)})`,
    });
  }

  private async controlLines(i: ControlLinesInfo): Promise<void> {
    const core = this.core;
    if (i.threadKind !== 'direct') return; // the heartbeat acts only in a bot's direct thread
    const { s, mode } = await this.botSettings(i.botId);
    if (mode === 'off' || !s.enabled || !s.followUpsEnabled) return;
    for (const c of i.controls) {
      if (c.kind === 'followup') {
        const dueAt = c.due.kind === 'delay' ? i.at + c.due.dueInMs : null;
        const added = await core.followups.add({
          id: core.freshId('followup'),
          botId: i.botId,
          threadId: i.threadId,
          taskId: i.taskId,
          kind: c.due.kind,
          origin: 'bot',
          note: cleanLine(c.note || '(no note)', 400),
          dueAt,
        });
        if (!added) continue;
        const own = this.justAdded.get(i.taskId) ?? new Set<string>();
        own.add(added.followup.id);
        this.justAdded.set(i.taskId, own);
        for (const f of [added.followup, ...added.cleared]) core.d.emit('heartbeat.followup_changed', { followup: f });
        if (dueAt !== null) await core.mark(i.botId, dueAt, i.threadId);
      } else if (c.kind === 'blocked' && mode === 'resume') {
        const task = await core.host.getTask(i.taskId);
        await core.checkIn({
          id: `blocked:${i.messageId}`,
          botId: i.botId,
          threadId: i.threadId,
          taskId: i.taskId,
          source: 'blocked',
          question: `I'm blocked on “${cleanLine(task?.title ?? 'this task', 80)}”: ${cleanLine(c.text, 300)}`,
          mode,
          reason: `BLOCKED: ${cleanLine(c.text, 150)}`,
        });
      }
    }
  }

  private async dropped(i: DroppedJobInfo): Promise<void> {
    if (this.resetAfterSettle.delete(i.taskId)) await this.core.host.resetAttempts(i.taskId);
    if (!i.heartbeat) return;
    const core = this.core;
    const g = await core.settings.global(1000);
    const { s } = await this.botSettings(i.botId);
    await core.bots.ensure(i.botId, i.threadId);
    await core.update(i.botId, { state: 'idle', last_outcome: `set_aside: ${i.reason}` });
    await core.record({
      id: core.freshId(`dropped:${i.taskId}`),
      botId: i.botId,
      mode: g.mode,
      tier: 2,
      outcome: 'set_aside',
      taskId: i.taskId,
      reason:
        i.reason === 'user_message'
          ? `a person's message came first: the queued resume was set aside${i.refunded ? ', its attempt refunded' : ''}`
          : `the queued resume did not start (${i.reason})${i.refunded ? ', its attempt refunded' : ''}`,
    });
    if (i.reason !== 'stopped' && i.reason !== 'shutdown') await core.mark(i.botId, core.now() + jitter(s.intervalMs, core.random), i.threadId);
  }

  private async human(a: HumanAction): Promise<void> {
    const core = this.core;
    const emitCheckins = (list: Awaited<ReturnType<typeof core.checkins.resolveWhere>>) => {
      for (const c of list) core.d.emit('heartbeat.checkin_changed', { checkin: c });
    };
    const emitFollowUps = (list: Awaited<ReturnType<typeof core.followups.moveWhere>>) => {
      for (const f of list) core.d.emit('heartbeat.followup_changed', { followup: f });
    };
    switch (a.kind) {
      case 'message': {
        if (!a.threadId) return;
        await this.answered(await core.checkins.resolveWhere({ threadId: a.threadId }, 'answered'));
        emitFollowUps(await core.followups.moveWhere({ threadId: a.threadId, kind: 'user' }, 'resolved'));
        for (const botId of a.botIds) {
          const row = await core.bots.get(botId);
          // The adaptive interval comes back to the base on a person's message.
          if (row && (row.current_interval_ms !== null || row.state === 'waiting_user')) {
            await core.update(botId, { current_interval_ms: null, ...(row.state === 'waiting_user' ? { state: 'idle' } : {}) });
          }
          await this.resetAttempts(botId, a.threadId);
        }
        return;
      }
      case 'approval':
        if (a.taskId) await this.answered(await core.checkins.resolveWhere({ taskId: a.taskId }, 'answered'));
        return;
      case 'cancel':
      case 'dismiss':
        if (!a.taskId) return;
        emitCheckins(await core.checkins.resolveWhere({ taskId: a.taskId }, a.kind === 'cancel' ? 'cancelled' : 'dismissed'));
        emitFollowUps(await core.followups.moveWhere({ taskId: a.taskId }, 'cleared'));
        return;
      case 'stop':
        for (const botId of a.botIds) {
          // Stop is permanent: nothing that stopped before it is ever resumed (§7.4).
          await core.bots.ensure(botId);
          await core.update(botId, { stopped_at: a.at, state: 'idle', last_outcome: 'stopped by a person' });
          for (const c of await core.checkins.pending({ botIds: [botId] })) {
            const task = c.task_id ? await core.host.getTask(c.task_id) : undefined;
            if (task?.status === 'cancelled') emitCheckins(await core.checkins.resolveWhere({ taskId: task.id }, 'cancelled'));
          }
          for (const f of await core.followups.pending([botId])) {
            const task = f.task_id ? await core.host.getTask(f.task_id) : undefined;
            if (task?.status === 'cancelled') emitFollowUps(await core.followups.moveWhere({ taskId: task.id }, 'cleared'));
          }
        }
        return;
      default:
        return;
    }
  }

  /**
   * Check-ins a person answered (a reply, an approval answer, the card): their tasks' follow-ups
   * go too, delay ones included (§8) — the person's answer is what the bot continues from now.
   */
  async answered(checkins: readonly Checkin[]): Promise<void> {
    const core = this.core;
    for (const c of checkins) core.d.emit('heartbeat.checkin_changed', { checkin: c });
    for (const taskId of new Set(checkins.map((c) => c.task_id).filter((t): t is string => t !== null))) {
      for (const f of await core.followups.moveWhere({ taskId }, 'cleared')) core.d.emit('heartbeat.followup_changed', { followup: f });
    }
  }

  /** §7.5: a person's message resets the bot's attempts in this thread — after an in-flight resume settles. */
  private async resetAttempts(botId: string, threadId: string): Promise<void> {
    const host = this.core.host;
    const open = await host.openWork({ botIds: [botId] });
    for (const t of open) {
      if (t.thread_id !== threadId || t.attempts === 0) continue;
      const inFlight = t.status === 'queued' || t.status === 'working' || t.claimed_at !== null;
      if (inFlight) this.resetAfterSettle.add(t.id);
      else await host.resetAttempts(t.id);
    }
  }
}
