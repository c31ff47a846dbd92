/**
 * The harness's rows: committed state, cycles, the world-diff timeline and the compressed history.
 * A cycle commits in one transaction (state, cycle row, diffs, history row), guarded by the state's
 * version, so a cycle's effects land together or not at all and two processes never both advance
 * the state. The steering world reads the history and the timeline through `HarnessHistory`.
 */
import type { Kysely, Selectable } from 'kysely';
import { SubconsciousError } from '../core/errors.js';
import type { CompressedRow, CycleRow, CycleStatus, GateDecision, HarnessMode, HarnessNode, WorldDiffRow } from '../protocol/orchestration.js';
import type { OrchestrationCyclesTable, OrchestrationHistoryTable, OrchestrationTables, OrchestrationWorldDiffTable } from './tables.js';
import type { CompressedSummary, EvictionRecord, SystemState, WorldDiff } from './types.js';

/** One harness per database for now; the column keeps room for more. */
export const HARNESS_ID = 'default';

export interface StoredState {
  state: SystemState;
  version: number;
  cycle: number;
  updatedAt: number;
}

export interface QueueCycle {
  id: string;
  channel: string;
  text: string;
  mode: HarnessMode;
  owner: string;
  cronDue: boolean;
  at: number;
}

export interface CommitCycle {
  id: string;
  seq: number;
  state: SystemState;
  /** The version the cycle started from (0: no state row yet). */
  expectedVersion: number;
  at: number;
}

export interface PruneResult {
  /** Cycles up to this number were deleted (0: nothing was due). */
  up_to_seq: number;
  cycles: number;
  diffs: number;
  history: number;
}

export class HarnessStore {
  constructor(private readonly db: Kysely<OrchestrationTables>) {}

  async loadState(): Promise<StoredState | null> {
    const row = await this.db.selectFrom('orchestration_state').selectAll().where('id', '=', HARNESS_ID).executeTakeFirst();
    if (!row) return null;
    let state: SystemState;
    try {
      state = JSON.parse(row.state) as SystemState;
    } catch (err) {
      throw new SubconsciousError('conflict', `The stored harness state is not valid JSON: ${(err as Error).message}`, {
        hint: 'The orchestration_state row was edited or truncated; restore it from a backup.',
      });
    }
    return { state, version: Number(row.version), cycle: Number(row.cycle), updatedAt: Number(row.updated_at) };
  }

  /** Insert a queued cycle with the next sequence number (retried when another process took it). */
  async queue(c: QueueCycle): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const last = await this.db
        .selectFrom('orchestration_cycles')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirst();
      const seq = Number(last?.seq ?? 0) + 1;
      try {
        await this.db
          .insertInto('orchestration_cycles')
          .values({
            id: c.id,
            seq,
            channel: c.channel,
            text: c.text,
            status: 'queued',
            mode: c.mode,
            owner: c.owner,
            cron_due: c.cronDue ? 1 : 0,
            path: '[]',
            gate: null,
            evictions: '[]',
            escalation: null,
            response: null,
            directive_id: null,
            directive_text: null,
            steering: null,
            context_utilization: null,
            event_log: '[]',
            error: null,
            created_at: c.at,
            started_at: null,
            finished_at: null,
          })
          .execute();
        return seq;
      } catch (err) {
        if (attempt >= 5 || !isUniqueViolation(err)) throw err;
      }
    }
  }

  async markRunning(id: string, at: number): Promise<void> {
    await this.db.updateTable('orchestration_cycles').set({ status: 'running', started_at: at }).where('id', '=', id).execute();
  }

  /** Take over a cycle another (dead) process owned; false when someone else got it first. */
  async claim(id: string, from: string | null, to: string): Promise<boolean> {
    let q = this.db.updateTable('orchestration_cycles').set({ owner: to }).where('id', '=', id).where('status', 'in', ['queued', 'running']);
    q = from === null ? q.where('owner', 'is', null) : q.where('owner', '=', from);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Write a finished cycle and advance the state, atomically. */
  async commit(c: CommitCycle): Promise<void> {
    const s = c.state;
    await this.db.transaction().execute(async (trx) => {
      const stateJson = JSON.stringify(s);
      if (c.expectedVersion === 0) {
        const r = await trx
          .insertInto('orchestration_state')
          .values({ id: HARNESS_ID, version: 1, cycle: c.seq, state: stateJson, updated_at: c.at })
          .onConflict((oc) => oc.column('id').doNothing())
          .executeTakeFirst();
        if (Number(r.numInsertedOrUpdatedRows ?? 0n) !== 1) throw stateMoved(c.seq);
      } else {
        const r = await trx
          .updateTable('orchestration_state')
          .set({ version: c.expectedVersion + 1, cycle: c.seq, state: stateJson, updated_at: c.at })
          .where('id', '=', HARNESS_ID)
          .where('version', '=', c.expectedVersion)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) !== 1) throw stateMoved(c.seq);
      }
      await trx
        .updateTable('orchestration_cycles')
        .set({
          status: 'done',
          path: JSON.stringify(s.path),
          gate: s.gate ? JSON.stringify(s.gate) : null,
          evictions: JSON.stringify(s.evictions),
          escalation: s.escalation,
          response: s.channel_response,
          directive_id: s.directive?.id ?? null,
          directive_text: s.directive?.text ?? null,
          steering: s.subconscious_steering,
          context_utilization: s.context_utilization,
          event_log: JSON.stringify(s.event_log.filter((l) => l.startsWith(`#${c.seq} `))),
          error: null,
          finished_at: c.at,
        })
        .where('id', '=', c.id)
        .execute();
      if (s.cycle_diffs.length) {
        await trx
          .insertInto('orchestration_world_diff')
          .values(s.cycle_diffs.map((d, idx) => diffRow(c.id, c.seq, idx, d, c.at)))
          .execute();
      }
      if (s.compressed)
        await trx
          .insertInto('orchestration_history')
          .values(historyRow(c.id, c.seq, s.compressed, !!s.gated_world_summary, c.at))
          .execute();
    });
  }

  /** Replace the state of `expectedVersion` (no new cycle); false when another commit moved it on first. */
  async replaceState(state: SystemState, expectedVersion: number, at: number): Promise<boolean> {
    const r = await this.db
      .updateTable('orchestration_state')
      .set({ version: expectedVersion + 1, state: JSON.stringify(state), updated_at: at })
      .where('id', '=', HARNESS_ID)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async fail(id: string, error: string, at: number): Promise<void> {
    await this.db
      .updateTable('orchestration_cycles')
      .set({ status: 'failed', error: error.slice(0, 2000), finished_at: at })
      .where('id', '=', id)
      .where('status', 'in', ['queued', 'running'])
      .execute();
  }

  async cycle(id: string): Promise<CycleRow | undefined> {
    const row = await this.db.selectFrom('orchestration_cycles').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? (await this.withDetails([row]))[0] : undefined;
  }

  /** Newest first, with their world diff and compressed row. */
  async cycles(limit: number): Promise<CycleRow[]> {
    const rows = await this.db.selectFrom('orchestration_cycles').selectAll().orderBy('seq', 'desc').limit(limit).execute();
    return this.withDetails(rows);
  }

  /** Queued and running cycles, oldest first (what a restarted process picks up). */
  async open(): Promise<
    Array<{ id: string; seq: number; status: CycleStatus; mode: HarnessMode; owner: string | null; channel: string; text: string; cronDue: boolean }>
  > {
    const rows = await this.db
      .selectFrom('orchestration_cycles')
      .select(['id', 'seq', 'status', 'mode', 'owner', 'channel', 'text', 'cron_due'])
      .where('status', 'in', ['queued', 'running'])
      .orderBy('seq')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      seq: Number(r.seq),
      status: r.status as CycleStatus,
      mode: r.mode as HarnessMode,
      owner: r.owner,
      channel: r.channel,
      text: r.text,
      cronDue: r.cron_due === 1,
    }));
  }

  /**
   * Retention: delete finished cycles created before `before`, and all but the newest `keep`
   * cycles, with their world diff and compressed history rows, in one transaction. Everything up
   * to one cycle number goes, so a cycle never loses its diff or history row while it is kept.
   * Queued and running cycles are never deleted.
   */
  async prune(p: { before: number; keep: number }): Promise<PruneResult> {
    return this.db.transaction().execute(async (trx) => {
      const newest = await trx
        .selectFrom('orchestration_cycles')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirst();
      const old = await trx
        .selectFrom('orchestration_cycles')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .where('created_at', '<', p.before)
        .where('status', 'in', ['done', 'failed'])
        .executeTakeFirst();
      const upTo = Math.max(Number(newest?.seq ?? 0) - p.keep, Number(old?.seq ?? 0));
      if (upTo <= 0) return { up_to_seq: 0, cycles: 0, diffs: 0, history: 0 };
      const cycles = await trx.deleteFrom('orchestration_cycles').where('seq', '<=', upTo).where('status', 'in', ['done', 'failed']).executeTakeFirst();
      const diffs = await trx.deleteFrom('orchestration_world_diff').where('seq', '<=', upTo).executeTakeFirst();
      const history = await trx.deleteFrom('orchestration_history').where('seq', '<=', upTo).executeTakeFirst();
      return { up_to_seq: upTo, cycles: Number(cycles.numDeletedRows), diffs: Number(diffs.numDeletedRows), history: Number(history.numDeletedRows) };
    });
  }

  // ---- what the steering world reads (its `HarnessHistory`) -------------------------------------

  /** Compressed rows after `afterSeq`, oldest first. */
  async unreviewed(afterSeq: number, limit: number): Promise<CompressedRow[]> {
    const rows = await this.db.selectFrom('orchestration_history').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map(toCompressed);
  }

  /** The newest `limit` world mutations, oldest first. */
  async recentMutations(limit: number): Promise<WorldDiffRow[]> {
    const rows = await this.db.selectFrom('orchestration_world_diff').selectAll().orderBy('seq', 'desc').orderBy('idx', 'desc').limit(limit).execute();
    return rows.reverse().map(toDiff);
  }

  /** The last finished cycle's seq (0: none). */
  async currentCycle(): Promise<number> {
    const row = await this.db.selectFrom('orchestration_state').select('cycle').where('id', '=', HARNESS_ID).executeTakeFirst();
    return row ? Number(row.cycle) : 0;
  }

  private async withDetails(rows: Selectable<OrchestrationCyclesTable>[]): Promise<CycleRow[]> {
    if (!rows.length) return [];
    const ids = rows.map((r) => r.id);
    const [diffs, history] = await Promise.all([
      this.db.selectFrom('orchestration_world_diff').selectAll().where('cycle_id', 'in', ids).orderBy('seq').orderBy('idx').execute(),
      this.db.selectFrom('orchestration_history').selectAll().where('cycle_id', 'in', ids).execute(),
    ]);
    return rows.map((r) => ({
      id: r.id,
      seq: Number(r.seq),
      channel: r.channel,
      text: r.text,
      status: r.status as CycleStatus,
      mode: r.mode as HarnessMode,
      path: parseJson<HarnessNode[]>(r.path, []),
      gate: r.gate ? parseJson<GateDecision | null>(r.gate, null) : null,
      evictions: parseJson<EvictionRecord[]>(r.evictions, []),
      escalation: r.escalation,
      response: r.response,
      directive: r.directive_id ? { id: r.directive_id, text: r.directive_text ?? '' } : null,
      steering: r.steering,
      context_utilization: r.context_utilization === null ? null : Number(r.context_utilization),
      event_log: parseJson<string[]>(r.event_log, []),
      error: r.error,
      created_at: Number(r.created_at),
      started_at: r.started_at === null ? null : Number(r.started_at),
      finished_at: r.finished_at === null ? null : Number(r.finished_at),
      world_diff: diffs.filter((d) => d.cycle_id === r.id).map(toDiff),
      compressed: ((h) => (h ? toCompressed(h) : null))(history.find((h) => h.cycle_id === r.id)),
    }));
  }
}

function diffRow(cycleId: string, seq: number, idx: number, d: WorldDiff, at: number): OrchestrationWorldDiffTable {
  return { cycle_id: cycleId, seq, idx, signature: d.signature, entity: d.entity, mutation: d.mutation, delta: d.delta, critical: d.critical ? 1 : 0, at };
}

function historyRow(cycleId: string, seq: number, c: CompressedSummary, forwarded: boolean, at: number): OrchestrationHistoryTable {
  return {
    cycle_id: cycleId,
    seq,
    input_tokens: c.input_tokens,
    budget_tokens: c.budget_tokens,
    summary: c.summary,
    summary_tokens: c.summary_tokens,
    attempts: c.attempts,
    truncated: c.truncated ? 1 : 0,
    forwarded: forwarded ? 1 : 0,
    created_at: at,
  };
}

function toDiff(r: Selectable<OrchestrationWorldDiffTable>): WorldDiffRow {
  return {
    cycle_id: r.cycle_id,
    seq: Number(r.seq),
    index: Number(r.idx),
    signature: r.signature,
    entity: r.entity,
    mutation: r.mutation,
    delta: Number(r.delta),
    critical: Number(r.critical) === 1,
    at: Number(r.at),
  };
}

function toCompressed(r: Selectable<OrchestrationHistoryTable>): CompressedRow {
  return {
    cycle_id: r.cycle_id,
    seq: Number(r.seq),
    input_tokens: Number(r.input_tokens),
    budget_tokens: Number(r.budget_tokens),
    summary: r.summary,
    summary_tokens: Number(r.summary_tokens),
    attempts: Number(r.attempts),
    truncated: Number(r.truncated) === 1,
    forwarded: Number(r.forwarded) === 1,
    created_at: Number(r.created_at),
  };
}

function parseJson<T>(text: string, fallback: T): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

function stateMoved(seq: number): SubconsciousError {
  return new SubconsciousError('conflict', `Cycle ${seq} was not committed: another process advanced the harness state meanwhile.`, {
    hint: 'Run one harness per database, or send the message again.',
  });
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || /unique/i.test(String(e?.message ?? ''));
}
