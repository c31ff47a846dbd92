/**
 * The heartbeat log (seed 2 §10.2, issue 12 §9): one entry per check that did something or was
 * stopped, with the rule that matched or the skip that stopped it, the verdict and its reason
 * (≤ 200 characters, one line), what was dispatched. The newest 200 entries are kept, store-wide
 * (seed 2 §10.2: `heartbeatLog … capped 200`), newest by `last_at` as the log is read.
 *
 * The same skip again and again (a bot deferred while its person types) is one entry whose
 * `repeats` and `last_at` grow, so a log reads as what happened, not as a metronome.
 */
import { sql, type Kysely } from 'kysely';
import type { Clock } from '../../core/index.js';
import { cleanLine } from '../../llm/index.js';
import {
  LOG_CAP,
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
    if (e.botId !== null) {
      await this.db.updateTable('heartbeat_bots').set({ last_log_id: e.id, last_log_key: key }).where('bot_id', '=', e.botId).execute();
    }
    const row = {
      id: e.id,
      bot_id: e.botId,
      // Store-wide and increasing (two writers racing may share one: the cap then keeps one more).
      seq: 0,
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
    const written = await this.db
      .insertInto('heartbeat_log')
      .values({ ...row, seq: sql<number>`(select coalesce(max(seq), 0) + 1 from heartbeat_log)` })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('seq')
      .executeTakeFirst();
    // Another writer of the same deterministic id came first: it is written once.
    if (!written) return null;
    row.seq = Number(written.seq);
    await this.cap();
    return { entry: toLogEntry(row), repeat: false };
  }

  /** The newest `LOG_CAP` entries store-wide, in the order `list` reads them (`last_at`, then `seq`). */
  private async cap(): Promise<void> {
    const edge = await this.db
      .selectFrom('heartbeat_log')
      .select(['last_at', 'seq'])
      .orderBy('last_at', 'desc')
      .orderBy('seq', 'desc')
      .offset(LOG_CAP - 1)
      .limit(1)
      .executeTakeFirst();
    if (!edge) return;
    const lastAt = Number(edge.last_at);
    const seq = Number(edge.seq);
    await this.db
      .deleteFrom('heartbeat_log')
      .where((eb) => eb.or([eb('last_at', '<', lastAt), eb.and([eb('last_at', '=', lastAt), eb('seq', '<', seq)])]))
      .execute();
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
