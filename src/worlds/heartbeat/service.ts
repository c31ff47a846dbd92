/**
 * What the heartbeat's methods do (issue 12 §8): switch a bot's heartbeat, check now (with the
 * human reset of §7.5), settings per bot or store-wide, resolve a check-in, mark a person active,
 * the log, the Bots tab's snapshot (§10.4), the usage comparison, a person's follow-up. Every
 * input is checked before anything is written; every change is an event.
 */
import { SubconsciousError, zonedDate, startOfZonedDay } from '../../core/index.js';
import {
  BOT_SETTING_KEYS,
  type BotHeartbeat,
  type Checkin,
  type FollowUp,
  type HeartbeatLogEntry,
  type HeartbeatSettings,
  type HeartbeatSnapshot,
  type HeartbeatUsage,
  type SetHeartbeatSettingsParams,
  type Verdict,
} from '../../protocol/heartbeat.js';
import type { AnswerVia } from '../../protocol/agent.js';
import type { BotPatch } from './bot-state.js';
import { GLOBAL_SCOPE } from './budget-store.js';
import type { HeartbeatCore } from './core.js';
import type { HeartbeatListeners } from './listeners.js';
import { numOrNull, toCheckin, toFollowUp } from './rows.js';
import type { BotRow } from './settings.js';
import { withTaskTitles } from './titles.js';

/** The interval heartbeat the Usage figure compares with: one full call per bot this often. */
export const INTERVAL_BASELINE_MINUTES = 30;

export class HeartbeatService {
  constructor(
    private readonly core: HeartbeatCore,
    private readonly listeners: HeartbeatListeners,
  ) {}

  private async requireBot(id: string): Promise<{ id: string; threadId: string }> {
    const [bot] = await this.core.host.bots([id]);
    if (!bot) throw new SubconsciousError('not_found', `No bot with id "${id}".`, { hint: 'List bots with bots.list.' });
    const thread = await this.core.host.directThread(id);
    return { id, threadId: thread.id };
  }

  async setHeartbeat(id: string, enabled: boolean): Promise<BotHeartbeat> {
    const { threadId } = await this.requireBot(id);
    await this.core.bots.ensure(id, threadId);
    const g = await this.core.settings.global();
    const patch: BotPatch = enabled
      ? { enabled: 1, consecutive_errors: 0, backoff_until: null, disabled_reason: null, state: 'idle', last_outcome: 'switched on' }
      : { enabled: 0, state: 'disabled', disabled_reason: 'switched off by a person', next_heartbeat_at: null, last_outcome: 'switched off' };
    await this.core.update(id, patch);
    // On again: one look soon (a change while it was off may have left work).
    if (enabled) await this.core.mark(id, this.core.now());
    await this.core.record({
      id: this.core.freshId('switch'),
      botId: id,
      mode: g.mode,
      tier: 0,
      outcome: enabled ? 'reset' : 'disabled',
      reason: enabled ? 'heartbeat switched on by a person' : 'heartbeat switched off by a person',
    });
    await this.listeners.refreshPersona();
    return this.botHeartbeat(id);
  }

  /** "Check now": the person's reset (§7.5) — attempts, pending check-ins, backoff — and a check at once. */
  async heartbeatNow(id: string): Promise<BotHeartbeat> {
    const { threadId } = await this.requireBot(id);
    const core = this.core;
    const row = await core.bots.ensure(id, threadId);
    if (row.enabled === 0) {
      throw new SubconsciousError('conflict', `The heartbeat of bot "${id}" is switched off${row.disabled_reason ? ` (${row.disabled_reason})` : ''}.`, {
        hint: 'Switch it on with bots.set_heartbeat {id, enabled: true}, then check now.',
      });
    }
    const g = await core.settings.global();
    if (g.mode === 'off') {
      // Nothing would look: resetting attempts and check-ins for a check that never comes would only lose them.
      throw new SubconsciousError('conflict', 'The heartbeat’s mode is off for all bots, so nothing would check; nothing was changed.', {
        hint: 'Set a mode (triage, shadow or resume) with bots.set_heartbeat_settings {mode}, then check now.',
        details: { mode: g.mode },
      });
    }
    await this.humanReset(id, threadId);
    const now = core.now();
    await core.update(id, { forced_at: now, backoff_until: null, cooldown_until: null, state: 'idle', last_outcome: 'check now' });
    await core.bots.mark(id, now);
    await core.record({
      id: core.freshId('now'),
      botId: id,
      mode: g.mode,
      tier: 0,
      outcome: 'reset',
      reason: 'Check now: attempts and check-ins reset by a person',
    });
    core.d.trigger?.();
    return this.botHeartbeat(id);
  }

  /** Attempts back to 0 and the bot's pending check-ins resolved (a person asked for this). */
  private async humanReset(botId: string, threadId: string): Promise<void> {
    const core = this.core;
    for (const t of await core.host.openWork({ botIds: [botId] })) {
      if (t.thread_id === threadId && t.attempts > 0 && t.status === 'failed') await core.host.resetAttempts(t.id);
    }
    for (const c of await core.checkins.resolveWhere({ botId }, 'superseded')) core.d.emit('heartbeat.checkin_changed', { checkin: c });
  }

  async setSettings(p: SetHeartbeatSettingsParams): Promise<{ settings: HeartbeatSettings; bot: BotHeartbeat | null }> {
    const core = this.core;
    if (p.bot_id === undefined) {
      const settings = await core.settings.setGlobal(p);
      core.d.emit('heartbeat.settings_changed', { settings });
      await this.listeners.refreshPersona();
      return { settings, bot: null };
    }
    const { threadId } = await this.requireBot(p.bot_id);
    await core.bots.ensure(p.bot_id, threadId);
    const patch: Record<string, unknown> = {};
    for (const key of BOT_SETTING_KEYS) {
      const value = p[key];
      if (value === undefined) continue;
      if (value === null) patch[key] = null;
      else if (typeof value === 'boolean') patch[key] = value ? 1 : 0;
      else if (typeof value === 'object') patch[key] = JSON.stringify(value);
      else patch[key] = value;
    }
    if (p.enabled !== undefined) {
      await this.setHeartbeat(p.bot_id, p.enabled);
    }
    if (Object.keys(patch).length > 0) await core.update(p.bot_id, patch as BotPatch);
    await this.listeners.refreshPersona();
    return { settings: await core.settings.global(), bot: await this.botHeartbeat(p.bot_id) };
  }

  /** A person resolves a check-in; `who` says who and through which face (default: "you" over RPC). */
  async resolveCheckin(
    id: string,
    resolution: 'answered' | 'dismissed' | 'retry',
    who: { by?: string | undefined; via?: AnswerVia | undefined } = {},
  ): Promise<Checkin> {
    const core = this.core;
    const row = await core.checkins.get(id);
    if (!row) throw new SubconsciousError('not_found', `No check-in with id "${id}".`, { hint: 'Pending check-ins are in bots.heartbeat_snapshot.' });
    if (row.state !== 'pending') {
      throw new SubconsciousError('conflict', `Check-in "${id}" is already ${row.state}; nothing was changed.`, { details: { state: row.state } });
    }
    const done = await core.checkins.resolve(id, resolution === 'retry' ? 'superseded' : resolution, { by: who.by?.trim() || 'you', via: who.via ?? 'rpc' });
    if (!done) throw new SubconsciousError('conflict', `Check-in "${id}" was resolved meanwhile; nothing was changed.`);
    if (resolution === 'answered') await this.listeners.answered([done]);
    else core.d.emit('heartbeat.checkin_changed', { checkin: done });
    if (resolution === 'retry') {
      if (row.task_id) await core.host.resetAttempts(row.task_id);
      const bot = await core.bots.get(row.bot_id);
      if (bot?.enabled === 1) await this.heartbeatNow(row.bot_id);
    } else {
      await core.update(row.bot_id, { state: 'idle', last_outcome: `check-in ${resolution}` });
    }
    return done;
  }

  async markUserActive(threadId: string): Promise<{ thread_id: string; at: number }> {
    const thread = await this.core.host.thread(threadId);
    if (!thread) throw new SubconsciousError('not_found', `No thread with id "${threadId}".`, { hint: 'List threads with bots.threads_list.' });
    const at = await this.core.host.markUserActive(threadId);
    return { thread_id: threadId, at };
  }

  async log(p: { bot_id?: string | undefined; limit: number; before?: number | undefined }): Promise<HeartbeatLogEntry[]> {
    return withTaskTitles(this.core.host, await this.core.logs.list({ botId: p.bot_id, limit: p.limit, before: p.before }));
  }

  async addFollowUp(p: { bot_id: string; in_minutes: number; note: string }): Promise<FollowUp> {
    const core = this.core;
    const { threadId } = await this.requireBot(p.bot_id);
    const dueAt = core.now() + p.in_minutes * 60_000;
    const added = await core.followups.add({
      id: core.freshId('followup'),
      botId: p.bot_id,
      threadId,
      taskId: null,
      kind: 'delay',
      origin: 'person',
      note: p.note,
      dueAt,
    });
    if (!added) throw new SubconsciousError('conflict', 'The follow-up could not be stored; try again.');
    for (const f of [added.followup, ...added.cleared]) core.d.emit('heartbeat.followup_changed', { followup: f });
    await core.mark(p.bot_id, dueAt, threadId);
    return added.followup;
  }

  // ── reads ──────────────────────────────────────────────────────────────

  async botHeartbeat(id: string): Promise<BotHeartbeat> {
    const [bot] = await this.botHeartbeats([id]);
    return bot!;
  }

  /** §10.4 per bot; a bot without a row gets the defaults. */
  async botHeartbeats(ids: readonly string[], rows?: Map<string, BotRow>): Promise<BotHeartbeat[]> {
    const core = this.core;
    const g = await core.settings.global();
    const now = core.now();
    const byId = rows ?? (await core.bots.getMany(ids));
    const keys = ids.map((id) => ({ scope: id, day: core.days(now, core.settings.forBot(byId.get(id), g), g).bot }));
    const counts = await core.budgets.counts(keys);
    return ids.map((id, n) => {
      const row = byId.get(id);
      const s = core.settings.forBot(row, g);
      const c = counts.get(id, keys[n]!.day);
      return {
        bot_id: id,
        enabled: s.enabled,
        mode: g.mode,
        checking: core.host.isChecking(id),
        state: core.host.isChecking(id) ? 'checking' : (row?.state ?? 'idle'),
        next_heartbeat_at: numOrNull(row?.next_heartbeat_at),
        interval_seconds: Math.round(s.intervalMs / 1000),
        current_interval_seconds: Math.round(Number(row?.current_interval_ms ?? s.intervalMs) / 1000),
        quiet_hours: s.quietHours,
        timezone: s.timezone,
        model: s.model,
        follow_ups_enabled: s.followUpsEnabled,
        auto_resume_on_restart: s.autoResumeOnRestart,
        max_pulses_per_day: s.maxPulsesPerDay,
        max_resumes_per_day: s.maxResumesPerDay,
        max_task_attempts: s.maxTaskAttempts,
        pulses_today: c.pulses,
        resumes_today: c.resumes,
        last_tick_at: numOrNull(row?.last_tick_at),
        last_pulse_at: numOrNull(row?.last_pulse_at),
        last_verdict: (row?.last_verdict as Verdict | null | undefined) ?? null,
        last_reason: row?.last_reason ?? '',
        last_outcome: row?.last_outcome ?? null,
        consecutive_errors: row ? Number(row.consecutive_errors) : 0,
        cooldown_until: numOrNull(row?.cooldown_until),
        last_resume_at: numOrNull(row?.last_resume_at),
        last_resume_task_id: row?.last_resume_task_id ?? null,
        disabled_reason: row?.disabled_reason ?? null,
        overridden: s.overridden,
      };
    });
  }

  async snapshot(p: { bot_ids?: string[] | undefined }): Promise<HeartbeatSnapshot> {
    const core = this.core;
    const settings = await core.settings.global();
    const now = core.now();
    let ids: string[];
    let rows: Map<string, BotRow> | undefined;
    if (p.bot_ids) ids = [...new Set(p.bot_ids)];
    else {
      // Without a list: the bots the heartbeat knows (a row each), most recently checked first.
      const list = await core.d.db.selectFrom('heartbeat_bots').selectAll().orderBy('updated_at', 'desc').limit(500).execute();
      rows = new Map(list.map((r) => [r.bot_id, r]));
      ids = list.map((r) => r.bot_id);
    }
    const day = zonedDate(now, settings.timezone);
    const today = (await core.budgets.counts([{ scope: GLOBAL_SCOPE, day }])).get(GLOBAL_SCOPE, day);
    const [bots, checkins, answered, followups, log] = await Promise.all([
      this.botHeartbeats(ids, rows),
      core.checkins.pending(p.bot_ids ? { botIds: ids } : {}),
      core.checkins.answeredLately(p.bot_ids ? { botIds: ids } : {}),
      core.followups.pending(p.bot_ids ? ids : undefined),
      core.logs.list({ ...(p.bot_ids ? { botIds: ids } : {}), limit: 20 }).then((entries) => withTaskTitles(core.host, entries)),
    ]);
    return {
      settings,
      bots,
      checkins: checkins.map(toCheckin),
      answered_checkins: answered.map(toCheckin),
      followups: followups.map(toFollowUp),
      log,
      today: {
        date: day,
        pulses: today.pulses,
        resumes: today.resumes,
        max_pulses: settings.global_pulses_per_day,
        max_resumes: settings.global_resumes_per_day,
      },
      at: now,
    };
  }

  /**
   * The heartbeat's tokens (pulses + resumes) beside an interval heartbeat of the same bots: one
   * full model call per bot per 30 minutes, each the measured average prompt of a full bot call
   * (every bot run's calls, counted as they settle). Prompt tokens only on the baseline side, so
   * the ratio never flatters the heartbeat.
   */
  async usage(p: { days: number; timezone?: string | undefined }): Promise<HeartbeatUsage> {
    const core = this.core;
    const settings = await core.settings.global();
    const tz = p.timezone ?? settings.timezone;
    const now = core.now();
    const from = startOfZonedDay(now, tz, -(p.days - 1));
    const days: string[] = [];
    for (let d = p.days - 1; d >= 0; d--) days.push(zonedDate(startOfZonedDay(now, tz, -d), tz));
    const rows = await core.budgets.days(GLOBAL_SCOPE, days);
    const sum = (k: keyof (typeof rows)[number]) => rows.reduce((n, r) => n + Number(r[k]), 0);
    const pulses = { calls: sum('pulses'), input_tokens: sum('pulse_input_tokens'), output_tokens: sum('pulse_output_tokens') };
    const resumes = {
      runs: sum('resume_runs'),
      calls: sum('resume_calls'),
      input_tokens: sum('resume_input_tokens'),
      output_tokens: sum('resume_output_tokens'),
    };
    const fullCalls = sum('full_calls');
    const measured = fullCalls > 0 ? Math.round(sum('full_input_tokens') / fullCalls) : null;
    const bots = await core.host.countBots();
    const intervalCalls = Math.round((bots * (now - from)) / (INTERVAL_BASELINE_MINUTES * 60_000));
    const intervalTokens = measured === null ? null : intervalCalls * measured;
    const heartbeatTokens = pulses.input_tokens + pulses.output_tokens + resumes.input_tokens + resumes.output_tokens;
    return {
      days: p.days,
      timezone: tz,
      time_zone: tz,
      from,
      to: now,
      bots,
      pulses,
      resumes,
      heartbeat_tokens: heartbeatTokens,
      measured_prompt_tokens: measured,
      full_calls_measured: fullCalls,
      interval: { minutes: INTERVAL_BASELINE_MINUTES, calls: intervalCalls, tokens: intervalTokens },
      ratio: intervalTokens ? heartbeatTokens / intervalTokens : null,
    };
  }
}
