/**
 * The approval gate's durable half (seed 1 "Approval Gate", seed 2 §7.1): one row per writing
 * tool call that needs a human answer. A row moves exactly once, from `pending` to `approved`,
 * `denied` or `expired`; every later answer is a `conflict` that changes nothing.
 *
 * Attended runs have `expires_at = null` and wait for the answer; unattended runs get a
 * 10-minute expiry measured on the injected Clock. Waiters in this process are woken at once
 * by `approve`/`deny`; with `pollMs` set, a waiter also re-reads the row periodically, so an
 * answer given by another process sharing the database (Postgres) is seen too.
 */
import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import { SubconsciousError, type Clock, type Emitter, type IdGen } from '../core/index.js';
import {
  APPROVAL_ANSWERS,
  APPROVAL_STATES,
  type AgentEvents,
  type AnswerVia,
  type Approval,
  type ApprovalAnswerKind,
  type ApprovalAnswerRecord,
  type ApprovalContext,
  type ApprovalState,
} from '../protocol/agent.js';
import type { AgentTables, ApprovalsTable } from './tables.js';
import { ownedByThisProcess, ownerIsGone, processOwner } from '../core/process-identity.js';

export { APPROVAL_ANSWERS, APPROVAL_STATES, type Approval, type ApprovalAnswerKind, type ApprovalContext, type ApprovalState };
export type ApprovalAnswer = Exclude<ApprovalState, 'pending'>;

/** How long an unattended run's approval waits before it expires (seed 2 §7.1). */
export const UNATTENDED_APPROVAL_MS = 10 * 60_000;

export interface NewApproval {
  runId: string;
  world: string;
  tool: string;
  server: string;
  arguments: unknown;
  reason: string;
  /** null: attended, waits for the answer. */
  expiresAt: number | null;
  /** The tool's JSON Schema for its arguments: the page renders them by it and an edit is checked against it. */
  inputSchema?: Record<string, unknown> | null | undefined;
  context?: ApprovalContext | null | undefined;
}

/** One answer of a person (or the engine) to a pending approval. */
export interface AnswerInput {
  answer: ApprovalAnswerKind;
  /** `edit`: the changed arguments. */
  arguments?: Record<string, unknown> | undefined;
  /** `respond`: the text for the run. */
  text?: string | undefined;
  /** Who answered (default "you"). */
  by?: string | undefined;
  via?: AnswerVia | undefined;
}

export interface ApprovalStoreOptions {
  db: Kysely<AgentTables>;
  clock: Clock;
  ids: IdGen;
  events?: Emitter<AgentEvents> | undefined;
  /** Re-read pending rows this often while waiting (for answers from other processes). Off by default. */
  pollMs?: number | undefined;
}

export class ApprovalStore {
  private readonly db: Kysely<AgentTables>;
  private readonly clock: Clock;
  private readonly ids: IdGen;
  private readonly events: Emitter<AgentEvents> | undefined;
  private readonly pollMs: number | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(opts: ApprovalStoreOptions) {
    this.db = opts.db;
    this.clock = opts.clock;
    this.ids = opts.ids;
    this.events = opts.events;
    this.pollMs = opts.pollMs;
  }

  async create(input: NewApproval): Promise<Approval> {
    const row: Selectable<ApprovalsTable> = {
      id: this.ids(),
      run_id: input.runId,
      owner: processOwner(),
      world: input.world,
      tool: input.tool,
      server: input.server,
      arguments: JSON.stringify(input.arguments ?? null),
      reason: input.reason,
      created_at: this.clock.now(),
      expires_at: input.expiresAt,
      state: 'pending',
      answered_at: null,
      input_schema: input.inputSchema ? JSON.stringify(input.inputSchema) : null,
      context: input.context ? JSON.stringify(input.context) : null,
      answer: null,
      answer_arguments: null,
      answer_text: null,
      answered_by: null,
      answered_via: null,
    };
    await this.db.insertInto('approvals').values(row).execute();
    const approval = toApproval(row);
    this.changed(approval);
    return approval;
  }

  async get(id: string): Promise<Approval | undefined> {
    const row = await this.db.selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toApproval(row) : undefined;
  }

  /** Newest first. */
  async list(filter: { state?: ApprovalState | undefined; runId?: string | undefined; limit?: number | undefined } = {}): Promise<Approval[]> {
    let q = this.db.selectFrom('approvals').selectAll();
    if (filter.state) q = q.where('state', '=', filter.state);
    if (filter.runId) q = q.where('run_id', '=', filter.runId);
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(filter.limit ?? 200)
      .execute();
    return rows.map(toApproval);
  }

  /** `accept` (the older name). */
  approve(id: string, who: Pick<AnswerInput, 'by' | 'via'> = {}): Promise<Approval> {
    return this.answer(id, { answer: 'accept', ...who });
  }

  /** `ignore` (the older name). */
  deny(id: string, who: Pick<AnswerInput, 'by' | 'via'> = {}): Promise<Approval> {
    return this.answer(id, { answer: 'ignore', ...who });
  }

  /**
   * Answer once. accept/edit → `approved` (edit with the changed arguments, checked against the
   * tool's schema: `invalid_params` naming the field, nothing recorded); respond/ignore →
   * `denied` (respond keeps the text for the run). Unknown id → not_found; answered or expired → conflict.
   */
  async answer(id: string, input: AnswerInput): Promise<Approval> {
    if (!APPROVAL_ANSWERS.includes(input.answer))
      throw new SubconsciousError('invalid_params', `Unknown answer "${String(input.answer)}".`, { details: { field: 'answer' } });
    let args: string | null = null;
    if (input.answer === 'edit') {
      const row = await this.get(id);
      if (!row) throw notFound(id);
      args = JSON.stringify(checkToolArguments(row.tool, row.input_schema, input.arguments));
    }
    const text = input.answer === 'respond' ? (input.text ?? '').trim() : '';
    if (input.answer === 'respond' && !text)
      throw new SubconsciousError('invalid_params', 'respond needs the text to send back to the run.', { details: { field: 'text' } });
    const state = input.answer === 'accept' || input.answer === 'edit' ? 'approved' : 'denied';
    return this.settle(id, state, {
      answer: input.answer,
      answer_arguments: args,
      answer_text: text || null,
      answered_by: input.by?.trim() || 'you',
      answered_via: input.via ?? 'rpc',
    });
  }

  /** pending → expired. False when the row was no longer pending (answered first). */
  async expire(id: string): Promise<boolean> {
    const now = this.clock.now();
    const res = await this.db
      .updateTable('approvals')
      .set({ state: 'expired', answered_at: now, answer: 'expire' })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    const row = await this.get(id);
    if (row) this.changed(row);
    this.wake(id);
    return true;
  }

  /** Expire the pending rows of one run (the run ended: nobody can act on them any more). */
  async expireRun(runId: string): Promise<number> {
    const rows = await this.db.selectFrom('approvals').select('id').where('run_id', '=', runId).where('state', '=', 'pending').execute();
    let n = 0;
    for (const r of rows) if (await this.expire(r.id)) n++;
    return n;
  }

  /**
   * At start: pending rows whose run is not alive any more (the process restarted) can never
   * be acted on, so they become `expired`. Pass the ids of the runs that are still alive.
   */
  async expireOrphans(liveRunIds: Iterable<string> = []): Promise<number> {
    const live = new Set(liveRunIds);
    const rows = await this.db.selectFrom('approvals').select(['id', 'run_id', 'owner']).where('state', '=', 'pending').execute();
    let n = 0;
    for (const r of rows) {
      // Only rows this process owns (and no longer runs), or whose owner process is gone: a CLI
      // command or a second daemon must never expire approvals another live process waits on.
      const orphan = r.owner === null || ownerIsGone(r.owner) || (ownedByThisProcess(r.owner) && !live.has(r.run_id));
      if (orphan && (await this.expire(r.id))) n++;
    }
    return n;
  }

  /**
   * Wait until the row is answered or expires (expiry is applied here, on the injected clock).
   * Rejects with `cancelled` when `signal` aborts; the row is left as it is.
   */
  async waitForAnswer(id: string, signal?: AbortSignal): Promise<ApprovalAnswer> {
    for (;;) {
      if (signal?.aborted) throw new SubconsciousError('cancelled', 'Stopped waiting for an approval: the run was cancelled.');
      const wake = new AbortController();
      const onAbort = () => wake.abort();
      signal?.addEventListener('abort', onAbort, { once: true });
      const unsubscribe = this.onAnswer(id, onAbort);
      try {
        const row = await this.get(id);
        if (!row) throw new SubconsciousError('not_found', `No approval with id "${id}".`);
        if (row.state !== 'pending') return row.state;
        const now = this.clock.now();
        if (row.expires_at !== null && now >= row.expires_at) {
          await this.expire(id);
          continue;
        }
        let waitMs = row.expires_at === null ? Infinity : row.expires_at - now;
        if (this.pollMs && this.pollMs > 0) waitMs = Math.min(waitMs, this.pollMs);
        if (wake.signal.aborted) continue;
        if (Number.isFinite(waitMs)) await this.clock.sleep(waitMs, wake.signal).catch(() => undefined);
        else await new Promise<void>((resolve) => wake.signal.addEventListener('abort', () => resolve(), { once: true }));
      } finally {
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
      }
    }
  }

  private async settle(
    id: string,
    state: 'approved' | 'denied',
    how: Pick<ApprovalsTable, 'answer' | 'answer_arguments' | 'answer_text' | 'answered_by' | 'answered_via'>,
  ): Promise<Approval> {
    const now = this.clock.now();
    const res = await this.db
      .updateTable('approvals')
      .set({ state, answered_at: now, ...how })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) {
      const row = (await this.get(id))!;
      this.changed(row);
      this.wake(id);
      return row;
    }
    const row = await this.get(id);
    if (!row) throw notFound(id);
    if (row.state === 'pending') {
      // Past its expiry but the waiter has not noticed yet: the expiry wins.
      await this.expire(id);
      throw new SubconsciousError('conflict', `Approval "${id}" expired before it was answered; the tool did not run.`, { details: { state: 'expired' } });
    }
    const verb = how.answer ?? (state === 'approved' ? 'approve' : 'deny');
    throw new SubconsciousError('conflict', `Cannot ${verb} approval "${id}": it is already ${row.state}.`, {
      hint: 'An approval is answered once; nothing was changed.',
      details: { state: row.state },
    });
  }

  private onAnswer(id: string, fn: () => void): () => void {
    let set = this.waiters.get(id);
    if (!set) this.waiters.set(id, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.waiters.delete(id);
    };
  }

  private wake(id: string): void {
    for (const fn of [...(this.waiters.get(id) ?? [])]) fn();
  }

  private changed(a: Approval): void {
    this.events?.emit('approvals.changed', {
      id: a.id,
      run_id: a.run_id,
      world: a.world,
      tool: a.tool,
      server: a.server,
      state: a.state,
      ...(a.answer ? { answer: a.answer.kind, by: a.answer.by, via: a.answer.via } : {}),
    });
  }
}

function notFound(id: string): SubconsciousError {
  return new SubconsciousError('not_found', `No approval with id "${id}".`, { hint: 'List pending approvals with approvals.list.' });
}

/**
 * An edit's arguments, checked against the tool's JSON Schema (an object at least, when none is
 * known): `invalid_params` naming the first wrong field (`arguments.content`) otherwise.
 */
export function checkToolArguments(tool: string, inputSchema: Record<string, unknown> | null, args: unknown): Record<string, unknown> {
  if (!args || typeof args !== 'object' || Array.isArray(args)) {
    throw new SubconsciousError('invalid_params', 'edit needs the changed arguments as an object.', { details: { field: 'arguments' } });
  }
  const object = args as Record<string, unknown>;
  if (!inputSchema) return object;
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    // A schema zod cannot read is not a reason to refuse: the tool server checks the call too.
    return object;
  }
  const checked = schema.safeParse(object);
  if (checked.success) return object;
  const issue = checked.error.issues[0]!;
  const field = ['arguments', ...issue.path.map(String)].join('.');
  throw new SubconsciousError('invalid_params', `${field}: ${issue.message} (the ${tool} tool's schema); nothing was run.`, {
    hint: 'Fix the arguments and answer again; the approval is still pending.',
    details: { field, issues: checked.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
  });
}

function parseJson<T>(text: string | null): T | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

function answerOf(row: Selectable<ApprovalsTable>): ApprovalAnswerRecord | null {
  if (!row.answer) return null;
  return {
    kind: row.answer as ApprovalAnswerRecord['kind'],
    arguments: parseJson(row.answer_arguments),
    text: row.answer_text ?? null,
    by: row.answered_by ?? null,
    via: (row.answered_via ?? null) as AnswerVia | null,
  };
}

function toApproval(row: Selectable<ApprovalsTable>): Approval {
  return {
    id: row.id,
    run_id: row.run_id,
    world: row.world,
    tool: row.tool,
    server: row.server,
    arguments: JSON.parse(row.arguments) as unknown,
    reason: row.reason,
    created_at: Number(row.created_at),
    expires_at: row.expires_at === null ? null : Number(row.expires_at),
    state: row.state,
    answered_at: row.answered_at === null ? null : Number(row.answered_at),
    input_schema: parseJson<Record<string, unknown>>(row.input_schema ?? null),
    context: parseJson<ApprovalContext>(row.context ?? null),
    answer: answerOf(row),
  };
}
