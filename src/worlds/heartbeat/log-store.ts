/**
 * The heartbeat log (seed 2 §10.2, issue 12 §9): one entry per check that did something or was
 * stopped, with the rule that matched or the skip that stopped it, the verdict and its reason
 * (≤ 200 characters, one line), what was dispatched. The newest 200 per bot are kept.
 *
 * The same skip again and again (a bot deferred while its person types) is one entry whose
 * `repeats` and `last_at` grow, so a log reads as what happened, not as a metronome.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/index.js';
import { cleanLine } from '../../llm/index.js';
import {
  LOG_CAP_PER_BOT,
  MAX_REASON_CHARS,
  type CandidateRule,
  type HeartbeatLogEntry,
  type HeartbeatMode,
  type LogOutcome,
  type SkipRule,
  type Verdict,
} from '../../protocol/heartbeat.js';
import { toLogEntry } from './rows.js';
import type { HeartbeatTables } from './tables.js';

export interface NewLogEntry {
  /** Deterministic ids make a re-run commit write nothing twice. */
  id: string;
  botId: string | null;
  mode: HeartbeatMode;
  tier: 0 | 1 | 2;
  outcome: LogOutcome;
  rule?: CandidateRule | null;
  skip?: SkipRule | null;
  verdict?: Verdict | null;
  reason: string;
  taskId?: string | null;
  dispatched?: { task_id: string; message_id: string } | null;
  escalated?: boolean;
  model?: string | null;
  ms?: number | null;
  error?: string | null;
  inputTokens?: number;
  outputTokens?: number;
}

/** Outcomes that fold into the previous entry when nothing else happened in between. */
const FOLDING: readonly LogOutcome[] = ['skipped', 'candidate'];

export class LogStore {
  constructor(private readonly d: { db: Kysely<HeartbeatTables>; clock: Clock }) {}

  private get db() {
    return this.d.db;
  }

  /** Write an entry (or count a repeat of the last one). Returns what was written, or null when it already was. */
  async add(e: NewLogEntry): Promise<{ entry: HeartbeatLogEntry; repeat: boolean } | null> {
    const now = this.d.clock.now();
    const reason = cleanLine(e.reason, MAX_REASON_CHARS);
    const key = FOLDING.includes(e.outcome) ? [e.outcome, e.skip ?? '', e.rule ?? '', e.taskId ?? '', e.mode].join('|') : null;
    if (e.botId !== null) {
      const bot = await this.db.selectFrom('heartbeat_bots').select(['last_log_id', 'last_log_key']).where('bot_id', '=', e.botId).executeTakeFirst();
      if (key !== null && bot?.last_log_key === key && bot.last_log_id) {
        const res = await this.db
          .updateTable('heartbeat_log')
          .set((eb) => ({ repeats: eb('repeats', '+', 1), last_at: now, reason }))
          .where('id', '=', bot.last_log_id)
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) === 1) {
          const row = await this.db.selectFrom('heartbeat_log').selectAll().where('id', '=', bot.last_log_id).executeTakeFirstOrThrow();
          return { entry: toLogEntry(row), repeat: true };
        }
      }
    }
    const exists = await this.db.selectFrom('heartbeat_log').select('id').where('id', '=', e.id).executeTakeFirst();
    if (exists) return null;
    let seq = 0;
    if (e.botId !== null) {
      const bumped = await this.db
        .updateTable('heartbeat_bots')
        .set((eb) => ({ log_seq: eb('log_seq', '+', 1), last_log_id: e.id, last_log_key: key }))
        .where('bot_id', '=', e.botId)
        .returning('log_seq')
        .executeTakeFirst();
      seq = bumped ? Number(bumped.log_seq) : 0;
    }
    const row = {
      id: e.id,
      bot_id: e.botId,
      seq,
      at: now,
      last_at: now,
      repeats: 1,
      mode: e.mode,
      tier: e.tier,
      outcome: e.outcome,
      rule: e.rule ?? null,
      skip: e.skip ?? null,
      verdict: e.verdict ?? null,
      reason,
      task_id: e.taskId ?? null,
      dispatched: e.dispatched ? JSON.stringify(e.dispatched) : null,
      escalated: e.escalated ? 1 : 0,
      model: e.model ?? null,
      ms: e.ms === null || e.ms === undefined ? null : Math.round(e.ms),
      error: e.error ? cleanLine(e.error, 500) : null,
      input_tokens: e.inputTokens ?? 0,
      output_tokens: e.outputTokens ?? 0,
    };
    await this.db
      .insertInto('heartbeat_log')
      .values(row)
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    await this.cap(e.botId, seq);
    return { entry: toLogEntry(row), repeat: false };
  }

  /** The newest 200 per bot (and 200 store-wide entries). */
  private async cap(botId: string | null, seq: number): Promise<void> {
    if (botId !== null) {
      if (seq > LOG_CAP_PER_BOT) {
        await this.db
          .deleteFrom('heartbeat_log')
          .where('bot_id', '=', botId)
          .where('seq', '<=', seq - LOG_CAP_PER_BOT)
          .execute();
      }
      return;
    }
    const keep = await this.db
      .selectFrom('heartbeat_log')
      .select('last_at')
      .where('bot_id', 'is', null)
      .orderBy('last_at', 'desc')
      .offset(LOG_CAP_PER_BOT - 1)
      .limit(1)
      .executeTakeFirst();
    if (keep) {
      await this.db.deleteFrom('heartbeat_log').where('bot_id', 'is', null).where('last_at', '<', Number(keep.last_at)).execute();
    }
  }

  /** Newest first. */
  async list(f: {
    botId?: string | undefined;
    botIds?: readonly string[] | undefined;
    limit: number;
    before?: number | undefined;
  }): Promise<HeartbeatLogEntry[]> {
    let q = this.db.selectFrom('heartbeat_log').selectAll();
    if (f.botId !== undefined) q = q.where('bot_id', '=', f.botId);
    if (f.botIds !== undefined) {
      if (f.botIds.length === 0) return [];
      q = q.where('bot_id', 'in', [...f.botIds]);
    }
    if (f.before !== undefined) q = q.where('last_at', '<', f.before);
    const rows = await q.orderBy('last_at', 'desc').orderBy('seq', 'desc').orderBy('id').limit(f.limit).execute();
    return rows.map(toLogEntry);
  }

  /** A deleted bot's entries. */
  async removeBot(botId: string): Promise<void> {
    await this.db.deleteFrom('heartbeat_log').where('bot_id', '=', botId).execute();
  }
}
