/**
 * What every part of the heartbeat shares: its injected dependencies, its stores, and the few
 * writes that always come with an event (a log entry, a bot's state, a check-in). Nothing global:
 * a daemon (or a test) builds one per bots host.
 */
import type { Kysely } from 'kysely';
import type { BotsHeartbeatApi } from '../../bots/index.js';
import { describeError, type Clock, type IdGen, type Logger } from '../../core/index.js';
import type { Llm } from '../../llm/index.js';
import type { BotHeartbeat, Checkin, CheckinSource, HeartbeatMode, HeartbeatSettings } from '../../protocol/heartbeat.js';
import { BotStateStore, type BotPatch } from './bot-state.js';
import { BudgetStore, GLOBAL_SCOPE } from './budget-store.js';
import { CheckinStore } from './checkin-store.js';
import { HostResumeQueue, type ResumeQueue } from './claims.js';
import type { HeartbeatConfig } from './config.js';
import type { HeartbeatEmit } from './events.js';
import { FollowUpStore } from './followup-store.js';
import { LogStore, type NewLogEntry } from './log-store.js';
import { numOrNull } from './rows.js';
import { ASK_RECHECK_MS, dayKey, type Random } from './schedule.js';
import { SettingsStore, type BotRow, type BotSettings } from './settings.js';
import type { HeartbeatTables } from './tables.js';
import { withTaskTitles } from './titles.js';

export interface HeartbeatDeps {
  db: Kysely<HeartbeatTables>;
  /** The bots host's narrow API (`BotsHeartbeatKey`). */
  host: BotsHeartbeatApi;
  /** Pulses only (every call lands in the ledger under world `heartbeat`, purpose `heartbeat_pulse`). */
  llm: Llm;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  emit: HeartbeatEmit;
  /** The resolved `[worlds.heartbeat]` section. */
  config: HeartbeatConfig;
  /** The zone when neither the section nor a bot names one (the app's `timezone`). */
  timezone: string;
  /** The ledger's world name (default `heartbeat`). */
  world?: string;
  /** Jitter and staggering (tests pass a seeded one). */
  random?: Random;
  /** Claims and dispatch (default: the bots host's task claims). */
  queue?: ResumeQueue;
  /** Run the heartbeat's tick now ("Check now"); absent: the next tick finds the bot due. */
  trigger?: () => void;
  /** No other worker or face is alive on the store (`ModuleContext.alone`): the settings read is kept longer. */
  alone?: () => boolean;
}

export class HeartbeatCore {
  readonly bots: BotStateStore;
  readonly logs: LogStore;
  readonly checkins: CheckinStore;
  readonly followups: FollowUpStore;
  readonly budgets: BudgetStore;
  readonly settings: SettingsStore;
  readonly queue: ResumeQueue;
  readonly random: Random;
  readonly world: string;
  private seq = 0;

  constructor(readonly d: HeartbeatDeps) {
    const base = { db: d.db, clock: d.clock };
    this.bots = new BotStateStore(base);
    this.logs = new LogStore(base);
    this.checkins = new CheckinStore(base);
    this.followups = new FollowUpStore(base);
    this.budgets = new BudgetStore(base);
    this.settings = new SettingsStore({ ...base, config: d.config, timezone: d.timezone, ...(d.alone ? { alone: d.alone } : {}) });
    this.queue = d.queue ?? new HostResumeQueue(d.host, d.ids);
    this.random = d.random ?? Math.random;
    this.world = d.world ?? 'heartbeat';
  }

  get host(): BotsHeartbeatApi {
    return this.d.host;
  }

  now(): number {
    return this.d.clock.now();
  }

  /** An id for something written outside a tick (listeners, RPC). */
  freshId(prefix: string): string {
    return `${prefix}:${this.d.ids()}:${++this.seq}`;
  }

  /** Write a log entry and tell the page. Never throws (the log must not stop the work it records). */
  async record(e: NewLogEntry): Promise<void> {
    try {
      const written = await this.logs.add(e);
      if (written) {
        const [entry] = await withTaskTitles(this.host, [written.entry]);
        this.d.emit('heartbeat.log_added', { entry: entry! });
      }
    } catch (err) {
      this.d.log.warn({ err: describeError(err), bot: e.botId }, 'heartbeat: could not write a log entry');
    }
  }

  emitBot(row: BotRow | undefined): void {
    if (!row) return;
    this.d.emit('heartbeat.bot_changed', {
      bot_id: row.bot_id,
      state: row.state,
      next_heartbeat_at: numOrNull(row.next_heartbeat_at),
      last_verdict: (row.last_verdict as BotHeartbeat['last_verdict']) ?? null,
      last_reason: row.last_reason,
      last_outcome: row.last_outcome,
    });
  }

  async update(botId: string, patch: BotPatch): Promise<BotRow | undefined> {
    const row = await this.bots.update(botId, patch);
    this.emitBot(row);
    return row;
  }

  async schedule(botId: string, version: number, next: number | null, patch: BotPatch = {}): Promise<BotRow | undefined> {
    const row = await this.bots.schedule(botId, version, next, patch);
    this.emitBot(row);
    return row;
  }

  async mark(botId: string, at: number, threadId?: string | null): Promise<void> {
    await this.bots.mark(botId, at, threadId);
    this.emitBot(await this.bots.get(botId));
  }

  /** The local days budgets count in, for a bot (its zone) and store-wide. */
  days(now: number, bot: BotSettings, g: HeartbeatSettings): { bot: string; global: string } {
    return { bot: dayKey(now, bot.timezone), global: dayKey(now, g.timezone) };
  }

  /** Reserve one pulse or resume against the bot's and the store-wide day budget (both, or neither). */
  async reserve(botId: string, counter: 'pulses' | 'resumes', bot: BotSettings, g: HeartbeatSettings, now = this.now()): Promise<'ok' | 'bot' | 'global'> {
    const days = this.days(now, bot, g);
    const botMax = counter === 'pulses' ? bot.maxPulsesPerDay : bot.maxResumesPerDay;
    const globalMax = counter === 'pulses' ? g.global_pulses_per_day : g.global_resumes_per_day;
    if (!(await this.budgets.reserve(botId, days.bot, counter, botMax))) return 'bot';
    if (!(await this.budgets.reserve(GLOBAL_SCOPE, days.global, counter, globalMax))) {
      await this.budgets.refund(botId, days.bot, counter);
      return 'global';
    }
    return 'ok';
  }

  async refund(botId: string, counter: 'pulses' | 'resumes', bot: BotSettings, g: HeartbeatSettings, now = this.now()): Promise<void> {
    const days = this.days(now, bot, g);
    await this.budgets.refund(botId, days.bot, counter);
    await this.budgets.refund(GLOBAL_SCOPE, days.global, counter);
  }

  /**
   * A check-in (§6.5): a `Heartbeat: needs you` note, one short bot message with the question,
   * the pending row (needs-attention counts it). Created once per id; the bot then waits for its
   * person (one re-check after 24 h).
   */
  async checkIn(c: {
    id: string;
    botId: string;
    threadId: string;
    taskId: string | null;
    messageId?: string | null;
    source: CheckinSource;
    question: string;
    mode: HeartbeatMode;
    reason: string;
    version?: number;
  }): Promise<Checkin | undefined> {
    const added = await this.checkins.add(c);
    if (!added) return undefined;
    for (const s of added.superseded) this.d.emit('heartbeat.checkin_changed', { checkin: s });
    try {
      await this.host.postSystemNote(c.threadId, 'Heartbeat: needs you', { ...(c.taskId ? { taskId: c.taskId } : {}), heartbeat: true });
      const asked = await this.host.postBotMessage(c.botId, c.threadId, c.question, c.taskId ? { taskId: c.taskId } : {});
      await this.checkins.setAskedMessage(c.id, asked.id);
    } catch (err) {
      this.d.log.warn({ err: describeError(err), bot: c.botId }, 'heartbeat: could not post a check-in message');
    }
    this.d.emit('heartbeat.checkin_changed', { checkin: added.checkin });
    await this.record({
      id: `${c.id}:log`,
      botId: c.botId,
      mode: c.mode,
      tier: c.source === 'exhausted' || c.source === 'blocked' || c.source === 'approval_expired' ? 0 : 1,
      outcome: 'checked_in',
      verdict: c.source === 'ask_user' ? 'ask_user' : null,
      reason: c.reason,
      taskId: c.taskId,
      escalated: true,
    });
    const patch: BotPatch = { state: 'waiting_user', last_outcome: `checked_in: ${c.source}`, last_reason: c.reason.slice(0, 200) };
    if (c.version !== undefined) await this.schedule(c.botId, c.version, this.now() + ASK_RECHECK_MS, patch);
    else {
      await this.bots.ensure(c.botId, c.threadId);
      await this.update(c.botId, patch);
      await this.mark(c.botId, this.now() + ASK_RECHECK_MS);
    }
    return added.checkin;
  }
}
