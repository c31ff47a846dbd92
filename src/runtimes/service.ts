/**
 * What the `runtime.*` methods do (issue 18 §6). Every input is resolved and checked before
 * anything is written (a refused call changes nothing); writes are idempotent by the runtime's
 * own ids; what they mean for the heartbeat — a person's message preempting a resume, a task
 * reported done settling one, a restart cutting off what the old process held — is told to its
 * listeners after the writes, exactly as the built-in host tells them.
 */
import type { z } from 'zod';
import { parseControlLines, type ControlLine } from '../agent/index.js';
import { SubconsciousError, describeError } from '../core/index.js';
import type { TaskStatus } from '../protocol/bots.js';
import type {
  AckResult,
  ExternalBotStatus,
  ExternalRuntime,
  RegisterResult,
  ReportCounts,
  ReportResult,
  RuntimeDispatch,
  registerParams,
  reportParams,
} from '../protocol/runtimes.js';
import type { RuntimeCore } from './core.js';
import { externalOf, internalId, num, reachabilityOf, toExternalBot, toRuntime } from './rows.js';
import { readSecret } from './signature.js';
import { FINAL_STATUSES, LIVE_STATES, OPEN_STATUSES, UNACKED_STATES, type BotRow, type DispatchRow, type HostRow, type TaskRow } from './store.js';

type RegisterInput = z.output<typeof registerParams>;
type ReportInput = z.output<typeof reportParams>;

const SETTLED_DONE: readonly TaskStatus[] = ['done', 'review'];
const SETTLED_FAILED: readonly TaskStatus[] = ['failed', 'cancelled', 'dismissed'];
/** A task report whose compare-and-set lost (the heartbeat claimed it meanwhile) is applied again, this often. */
const CAS_TRIES = 4;

const conflict = (message: string, field?: string, hint?: string) =>
  new SubconsciousError('conflict', message, { ...(hint ? { hint } : {}), ...(field ? { details: { field } } : {}) });
const notFound = (message: string, field: string, hint?: string) =>
  new SubconsciousError('not_found', message, { ...(hint ? { hint } : {}), details: { field } });

export class RuntimesService {
  constructor(private readonly core: RuntimeCore) {}

  private get store() {
    return this.core.store;
  }

  // ── register ────────────────────────────────────────────────────────────

  async register(p: RegisterInput): Promise<RegisterResult> {
    const { store, core } = this;
    const runtime = p.runtime_id;
    const id = (ext: string) => internalId(runtime, ext);
    const delivery = p.delivery;
    // The secret must be there now (and is read again at each delivery, never stored).
    if (delivery.kind === 'webhook') readSecret({ secret_env: delivery.secret_env ?? null, secret_file: delivery.secret_file ?? null }, core.d.env);
    const existing = await store.host(runtime);
    const known = existing ? await store.botsOf(runtime) : [];
    const threadIds = new Set<string>();
    for (const [i, b] of p.bots.entries()) {
      const botId = id(b.id);
      const threadId = id(b.thread_id ?? b.id);
      if (threadIds.has(threadId))
        throw conflict(`bots.${i}.thread_id: "${b.thread_id ?? b.id}" is the direct thread of another bot of this registration`, `bots.${i}.thread_id`);
      threadIds.add(threadId);
      const old = known.find((k) => k.id === botId);
      if (old && old.thread_id !== threadId) {
        throw conflict(
          `bots.${i}.thread_id: bot "${b.id}" already has the direct thread "${externalOf(old.thread_id)}"`,
          `bots.${i}.thread_id`,
          'A bot keeps its direct thread; register it with that thread_id.',
        );
      }
      const clash = known.find((k) => k.name === b.name && k.id !== botId);
      if (clash)
        throw conflict(
          `bots.${i}.name: "${b.name}" is the name of your bot "${clash.external_id}"`,
          `bots.${i}.name`,
          'Rename that bot first (or give this one another name).',
        );
      if (!old) {
        const thread = await store.threadRow(threadId);
        if (thread && (thread.kind !== 'direct' || thread.direct_bot_id !== botId)) {
          throw conflict(`bots.${i}.thread_id: "${b.thread_id ?? b.id}" is already a thread of another bot or a group`, `bots.${i}.thread_id`);
        }
      }
    }

    const now = core.now();
    await store.db.transaction().execute(async (trx) => {
      const fields = {
        name: p.name ?? existing?.name ?? runtime,
        delivery: delivery.kind,
        webhook_url: delivery.kind === 'webhook' ? delivery.url : null,
        secret_env: delivery.kind === 'webhook' ? (delivery.secret_env ?? null) : null,
        secret_file: delivery.kind === 'webhook' ? (delivery.secret_file ?? null) : null,
        instance_id: p.instance_id ?? existing?.instance_id ?? null,
        updated_at: now,
        seen_at: now,
      };
      if (existing) await trx.updateTable('runtimes_hosts').set(fields).where('id', '=', runtime).execute();
      else
        await trx
          .insertInto('runtimes_hosts')
          .values({ id: runtime, ...fields, last_delivery_error: null, created_at: now })
          .execute();
      for (const b of p.bots) {
        const botId = id(b.id);
        const threadExt = b.thread_id ?? b.id;
        const label = b.label ?? b.name;
        const old = known.find((k) => k.id === botId);
        if (old) {
          if (old.name !== b.name || old.label !== label || old.description !== (b.description ?? old.description)) {
            await trx
              .updateTable('runtimes_bots')
              .set({ name: b.name, label, description: b.description ?? old.description, updated_at: now })
              .where('id', '=', botId)
              .execute();
            await trx.updateTable('runtimes_threads').set({ name: b.name, updated_at: now }).where('id', '=', old.thread_id).execute();
          }
          continue;
        }
        await trx
          .insertInto('runtimes_bots')
          .values({
            id: botId,
            runtime_id: runtime,
            external_id: b.id,
            name: b.name,
            label,
            description: b.description ?? '',
            thread_id: id(threadExt),
            created_at: now,
            updated_at: now,
          })
          .execute();
        await trx
          .insertInto('runtimes_threads')
          .values({
            id: id(threadExt),
            runtime_id: runtime,
            external_id: threadExt,
            kind: 'direct',
            name: b.name,
            direct_bot_id: botId,
            bot_ids: JSON.stringify([botId]),
            next_seq: 0,
            user_active_at: null,
            read_at: null,
            created_at: now,
            updated_at: now,
            last_message_at: null,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      }
    });

    const restarted = existing !== undefined && p.instance_id !== undefined && existing.instance_id !== null && existing.instance_id !== p.instance_id;
    const interrupted = restarted
      ? await this.cutOff(runtime, `Interrupted: its runtime restarted (a new process, ${p.instance_id}) while this ran; the heartbeat resumes it.`)
      : [];
    const runtimeRow = await this.runtime(runtime);
    core.d.emit('runtime.changed', { runtime_id: runtime, id: runtime, runtime: runtimeRow });
    const bots = await store.botsOf(runtime);
    const threadExts = new Map(
      (await store.db.selectFrom('runtimes_threads').select(['id', 'external_id']).where('runtime_id', '=', runtime).execute()).map((t) => [
        t.id,
        t.external_id,
      ]),
    );
    return {
      runtime: runtimeRow,
      bots: bots.map((b) => toExternalBot(b, threadExts.get(b.thread_id) ?? externalOf(b.thread_id))),
      restarted,
      interrupted_task_ids: interrupted,
    };
  }

  /**
   * A runtime's process is gone (a new one registered): what it had acknowledged or held open was
   * cut off — `failed` + interrupted, as restart repair marks a built-in bot's (attempts kept), the
   * heartbeat told; what was delivered to it and never acknowledged is delivered again.
   */
  private async cutOff(runtime: string, why: string): Promise<string[]> {
    const { store, core } = this;
    const now = core.now();
    const cut: string[] = [];
    const interrupt = (t: TaskRow) =>
      store.updateTask(
        t.id,
        { status: 'failed', interrupted: 1, error_kind: 'interrupted', error: why, finished_at: now, lease_until: null },
        { status: OPEN_STATUSES },
      );
    for (const d of await store.ackedBy(runtime)) {
      const task = d.task_id ? await store.taskRow(d.task_id) : undefined;
      if (!task) {
        core.emitDispatch(await store.updateDispatch(d.id, { state: 'expired', finished_at: now, lease_until: null, last_error: why }, { states: ['acked'] }));
        continue;
      }
      const after = (await interrupt(task)) ?? task;
      cut.push(task.external_id);
      await core.settleResume(d, 'expired', after, why);
    }
    for (const t of await store.openOf(runtime)) {
      const live = await store.liveResume(t.id);
      if (live && live.state !== 'acked') continue; // it goes to the new process
      const after = await interrupt(t);
      if (!after) continue;
      cut.push(t.external_id);
      await core.tellSettled(after, { heartbeat: false, messageId: null });
    }
    await store.endRunsOf(runtime);
    const again = await store.db
      .updateTable('runtimes_dispatches')
      .set((eb) => ({ state: 'pending', next_attempt_at: now, version: eb('version', '+', 1), updated_at: now }))
      .where('runtime_id', '=', runtime)
      .where('state', '=', 'delivered')
      .executeTakeFirst();
    await core.refreshBusy();
    if (Number(again.numUpdatedRows) > 0) core.kick(runtime);
    return [...new Set(cut)];
  }

  // ── report ──────────────────────────────────────────────────────────────

  async report(p: ReportInput): Promise<ReportResult> {
    const { store, core } = this;
    const runtime = p.runtime_id;
    await store.requireHost(runtime);
    const id = (ext: string) => internalId(runtime, ext);
    const threads = p.threads ?? [];
    const tasks = p.tasks ?? [];
    const messages = p.messages ?? [];
    const runs = p.runs ?? [];
    const approvals = p.approvals ?? [];

    // ── resolve every reference first: a refused report changes nothing ──
    const botRefs = new Set<string>([
      ...threads.flatMap((t) => t.bot_ids),
      ...tasks.map((t) => t.bot_id),
      ...messages.flatMap((m) => (m.bot_id ? [m.bot_id] : [])),
      ...runs.map((r) => r.bot_id),
      ...approvals.map((a) => a.bot_id),
    ]);
    const bots = new Map((await store.botsByIds([...botRefs].map(id))).map((b) => [b.id, b]));
    const bot = (ext: string, field: string): BotRow => {
      const b = bots.get(id(ext));
      if (!b || b.runtime_id !== runtime) throw notFound(`${field}: your runtime registered no bot "${ext}"`, field, 'Register it first (runtime.register).');
      return b;
    };
    const reportedThreads = new Set(threads.map((t) => id(t.id)));
    const threadRefs = new Set<string>([
      ...threads.map((t) => t.id),
      ...tasks.flatMap((t) => (t.thread_id ? [t.thread_id] : [])),
      ...messages.map((m) => m.thread_id),
      ...approvals.flatMap((a) => (a.thread_id ? [a.thread_id] : [])),
    ]);
    const knownThreads = new Map<string, Awaited<ReturnType<typeof store.threadRow>>>();
    for (const t of threadRefs) knownThreads.set(id(t), await store.threadRow(id(t)));
    const threadExists = (tid: string) => reportedThreads.has(tid) || knownThreads.get(tid) !== undefined;
    const taskRefs = new Set<string>([
      ...tasks.map((t) => t.id),
      ...messages.flatMap((m) => (m.task_id ? [m.task_id] : [])),
      ...runs.flatMap((r) => (r.task_id ? [r.task_id] : [])),
      ...approvals.flatMap((a) => (a.task_id ? [a.task_id] : [])),
    ]);
    const knownTasks = new Map((await store.tasksByIds([...taskRefs].map(id))).map((t) => [t.id, t]));
    const reportedTasks = new Set(tasks.map((t) => id(t.id)));
    const taskExists = (tid: string) => reportedTasks.has(tid) || knownTasks.has(tid);

    for (const [i, t] of threads.entries()) {
      const f = `threads.${i}`;
      for (const [j, b] of t.bot_ids.entries()) bot(b, `${f}.bot_ids.${j}`);
      const old = knownThreads.get(id(t.id));
      if (t.kind === 'direct') {
        const owner = bot(t.bot_ids[0]!, `${f}.bot_ids.0`);
        if (t.bot_ids.length !== 1)
          throw new SubconsciousError('invalid_params', `${f}.bot_ids: a direct thread has exactly one bot`, { details: { field: `${f}.bot_ids` } });
        if (owner.thread_id !== id(t.id)) {
          throw conflict(`${f}.id: the direct thread of "${t.bot_ids[0]}" is "${externalOf(owner.thread_id)}" (registered with the bot)`, `${f}.id`);
        }
      } else if (old && old.kind === 'direct') throw conflict(`${f}.id: "${t.id}" is a bot’s direct thread, not a group`, `${f}.id`);
    }
    for (const [i, t] of tasks.entries()) {
      const f = `tasks.${i}`;
      const b = bot(t.bot_id, `${f}.bot_id`);
      // A bot's direct thread always exists (it came with the bot).
      if (t.thread_id && !threadExists(id(t.thread_id)))
        throw notFound(`${f}.thread_id: no thread "${t.thread_id}" of your runtime (report it in threads)`, `${f}.thread_id`);
      const old = knownTasks.get(id(t.id));
      if (old && old.bot_id !== b.id) throw conflict(`${f}.bot_id: task "${t.id}" is a task of "${externalOf(old.bot_id)}"`, `${f}.bot_id`);
      if (!old && !t.title) {
        throw new SubconsciousError('invalid_params', `${f}.title: required when a task is first reported`, { details: { field: `${f}.title` } });
      }
    }
    for (const [i, m] of messages.entries()) {
      const f = `messages.${i}`;
      if (!threadExists(id(m.thread_id)))
        throw notFound(`${f}.thread_id: no thread "${m.thread_id}" of your runtime (register its bot, or report the thread)`, `${f}.thread_id`);
      if (m.role === 'bot' && !m.bot_id)
        throw new SubconsciousError('invalid_params', `${f}.bot_id: a bot message names its bot`, { details: { field: `${f}.bot_id` } });
      if (m.bot_id) bot(m.bot_id, `${f}.bot_id`);
      if (m.task_id && !taskExists(id(m.task_id))) throw notFound(`${f}.task_id: no task "${m.task_id}" (report it in tasks)`, `${f}.task_id`);
      const old = await store.message(id(m.id));
      if (old && old.thread_id !== id(m.thread_id))
        throw conflict(`${f}.thread_id: message "${m.id}" is in thread "${externalOf(old.thread_id)}"`, `${f}.thread_id`);
    }
    for (const [i, r] of runs.entries()) {
      const f = `runs.${i}`;
      bot(r.bot_id, `${f}.bot_id`);
      if (r.task_id && !taskExists(id(r.task_id))) throw notFound(`${f}.task_id: no task "${r.task_id}" (report it in tasks)`, `${f}.task_id`);
    }
    for (const [i, a] of approvals.entries()) {
      const f = `approvals.${i}`;
      bot(a.bot_id, `${f}.bot_id`);
      if (a.thread_id && !threadExists(id(a.thread_id))) throw notFound(`${f}.thread_id: no thread "${a.thread_id}" of your runtime`, `${f}.thread_id`);
      if (a.task_id && !taskExists(id(a.task_id))) throw notFound(`${f}.task_id: no task "${a.task_id}" (report it in tasks)`, `${f}.task_id`);
    }

    // ── apply (idempotent), collecting what to tell the heartbeat after ──
    const now = core.now();
    const counts = (): ReportCounts => ({ created: 0, updated: 0, unchanged: 0 });
    const result: ReportResult = {
      runtime_id: runtime,
      threads: counts(),
      tasks: counts(),
      messages: counts(),
      runs: counts(),
      approvals: counts(),
      stale: [],
      settled_task_ids: [],
    };
    const after: Array<() => Promise<void>> = [];
    const touchedBots = new Set<string>();

    for (const t of threads) {
      const tid = id(t.id);
      const old = await store.threadRow(tid);
      const botIds = JSON.stringify(t.bot_ids.map(id));
      const name = t.name ?? old?.name ?? t.id;
      if (!old) {
        await store.db
          .insertInto('runtimes_threads')
          .values({
            id: tid,
            runtime_id: runtime,
            external_id: t.id,
            kind: 'group',
            name,
            direct_bot_id: null,
            bot_ids: botIds,
            next_seq: 0,
            user_active_at: null,
            read_at: null,
            created_at: now,
            updated_at: now,
            last_message_at: null,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
        result.threads.created++;
      } else if (old.name !== name || (t.kind === 'group' && old.bot_ids !== botIds)) {
        await store.db
          .updateTable('runtimes_threads')
          .set({ name, ...(t.kind === 'group' ? { bot_ids: botIds } : {}), updated_at: now })
          .where('id', '=', tid)
          .execute();
        result.threads.updated++;
      } else result.threads.unchanged++;
    }

    for (const t of tasks) {
      const tid = id(t.id);
      if (t.dispatch_id !== undefined) {
        const d = await store.dispatch(t.dispatch_id);
        if (!d || d.runtime_id !== runtime || d.task_id !== tid) {
          result.stale.push({ kind: 'task', id: t.id, reason: `dispatch "${t.dispatch_id}" is not a dispatch of this task` });
          continue;
        }
        if (!LIVE_STATES.includes(d.state)) {
          result.stale.push({ kind: 'task', id: t.id, reason: `dispatch "${t.dispatch_id}" is ${d.state}: it no longer holds the task` });
          continue;
        }
      }
      const applied = await this.applyTask(runtime, t, bots.get(id(t.bot_id))!, now);
      result.tasks[applied.outcome]++;
      touchedBots.add(applied.row.bot_id);
      if (applied.effect) after.push(applied.effect);
      if (applied.settles) result.settled_task_ids.push(t.id);
    }

    /** Threads where the person wrote something new, and when (the newest; a message reported late keeps its own time). */
    const userThreads = new Map<string, number>();
    for (const m of messages) {
      const mid = id(m.id);
      const old = await store.message(mid);
      const fields = {
        role: m.role,
        bot_id: m.bot_id ? id(m.bot_id) : null,
        task_id: m.task_id ? id(m.task_id) : null,
        text: m.text,
        status: m.status ?? 'done',
        error: m.error ?? null,
        interrupted: m.interrupted ? 1 : 0,
      };
      if (!old) {
        const wrote = await store
          .insertMessage(store.db, {
            id: mid,
            runtimeId: runtime,
            externalId: m.id,
            threadId: id(m.thread_id),
            role: fields.role,
            botId: fields.bot_id,
            taskId: fields.task_id,
            text: fields.text,
            status: fields.status,
            error: fields.error,
            interrupted: fields.interrupted === 1,
            ...(m.created_at !== undefined ? { createdAt: m.created_at } : {}),
          })
          .catch(async (err: unknown) => {
            // The same message in a report sent at the same time (a retry): it is there now.
            if (await store.message(mid)) return undefined;
            throw err;
          });
        if (!wrote) {
          result.messages.unchanged++;
          continue;
        }
        result.messages.created++;
        if (m.role === 'user') {
          const at = Math.min(m.created_at ?? now, now);
          userThreads.set(id(m.thread_id), Math.max(userThreads.get(id(m.thread_id)) ?? 0, at));
        }
      } else if (
        old.text !== fields.text ||
        old.status !== fields.status ||
        old.error !== fields.error ||
        num(old.interrupted) !== fields.interrupted ||
        old.task_id !== fields.task_id ||
        old.bot_id !== fields.bot_id ||
        old.role !== fields.role
      ) {
        await store.db
          .updateTable('runtimes_messages')
          .set({ ...fields, updated_at: now })
          .where('id', '=', mid)
          .execute();
        result.messages.updated++;
      } else result.messages.unchanged++;
    }

    /** Ended runs' outcomes with control lines (FOLLOWUP:, BLOCKED:, …): told before the settles, as the built-in host tells them. */
    const outcomes: Array<{ runId: string; botId: string; taskId: string; heartbeat: boolean; controls: ControlLine[] }> = [];
    for (const r of runs) {
      const rid = id(r.id);
      if (r.dispatch_id !== undefined) {
        const d = await store.dispatch(r.dispatch_id);
        if (!d || d.runtime_id !== runtime || (r.task_id !== undefined && d.task_id !== id(r.task_id)) || !LIVE_STATES.includes(d.state)) {
          result.stale.push({ kind: 'run', id: r.id, reason: `dispatch "${r.dispatch_id}" does not hold this run's task (${d ? d.state : 'unknown'})` });
          continue;
        }
      }
      const old = await store.run(rid);
      const running = r.status === 'running';
      const lease = running ? now + (r.lease_seconds ?? core.d.config.lease_seconds) * 1000 : null;
      const fields = {
        bot_id: id(r.bot_id),
        task_id: r.task_id ? id(r.task_id) : null,
        status: r.status,
        lease_until: lease,
        ...(r.usage ? { calls: r.usage.calls, input_tokens: r.usage.input_tokens, output_tokens: r.usage.output_tokens } : {}),
        ended_at: running ? null : (old?.ended_at ?? now),
        updated_at: now,
      };
      if (!old) {
        await store.db
          .insertInto('runtimes_runs')
          .values({ id: rid, runtime_id: runtime, external_id: r.id, calls: 0, input_tokens: 0, output_tokens: 0, created_at: now, ...fields })
          .onConflict((oc) => oc.column('id').doUpdateSet(fields))
          .execute();
        result.runs.created++;
      } else {
        const same =
          old.status === r.status &&
          old.task_id === fields.task_id &&
          (!r.usage ||
            (num(old.calls) === r.usage.calls && num(old.input_tokens) === r.usage.input_tokens && num(old.output_tokens) === r.usage.output_tokens));
        await store.db.updateTable('runtimes_runs').set(fields).where('id', '=', rid).execute();
        result.runs[same ? 'unchanged' : 'updated']++;
      }
      touchedBots.add(fields.bot_id);
      // Its outcome's control lines, read once: when the run is first reported ended.
      if (!running && r.outcome !== undefined && (!old || old.status === 'running')) {
        const controls = parseControlLines(r.outcome).controls;
        if (controls.length > 0) outcomes.push({ runId: rid, botId: fields.bot_id, taskId: fields.task_id!, heartbeat: r.dispatch_id !== undefined, controls });
      }
      // A run going on renews its task's lease (and its resume's): the runtime still holds it.
      if (running && fields.task_id) await this.renewLease(fields.task_id, lease!);
    }

    const answered: Array<{ threadId: string; botId: string; taskId: string | null }> = [];
    for (const a of approvals) {
      const aid = id(a.id);
      const b = bots.get(id(a.bot_id))!;
      const old = await store.db.selectFrom('runtimes_approvals').selectAll().where('id', '=', aid).executeTakeFirst();
      const threadId = a.thread_id ? id(a.thread_id) : b.thread_id;
      const expiredAt = a.state === 'expired' ? (a.expired_at ?? old?.expired_at ?? now) : null;
      const answeredAt = a.state === 'approved' || a.state === 'denied' ? (old?.answered_at ?? now) : null;
      const fields = {
        bot_id: b.id,
        thread_id: threadId,
        task_id: a.task_id ? id(a.task_id) : null,
        tool: a.tool,
        server: a.server ?? old?.server ?? '',
        reason: a.reason ?? old?.reason ?? '',
        state: a.state,
        expires_at: a.expires_at !== undefined ? a.expires_at : (old?.expires_at ?? null),
        expired_at: expiredAt,
        answered_at: answeredAt,
        updated_at: now,
      };
      if (!old) {
        await store.db
          .insertInto('runtimes_approvals')
          .values({ id: aid, runtime_id: runtime, external_id: a.id, created_at: now, ...fields })
          .onConflict((oc) => oc.column('id').doUpdateSet(fields))
          .execute();
        result.approvals.created++;
      } else if (old.state !== fields.state || old.tool !== fields.tool || old.task_id !== fields.task_id || old.reason !== fields.reason) {
        await store.db.updateTable('runtimes_approvals').set(fields).where('id', '=', aid).execute();
        result.approvals.updated++;
      } else result.approvals.unchanged++;
      if (answeredAt !== null && (!old || old.state === 'pending')) answered.push({ threadId, botId: b.id, taskId: fields.task_id });
    }

    await store.touch(runtime);
    await core.refreshBusy([...touchedBots]);
    // ── what it means for the heartbeat, as the built-in host tells it ──
    // What was written stands: an effect that fails (its dispatch moved on meanwhile) is logged, not the report's error.
    for (const o of outcomes) {
      await this.tellControls(o, now).catch((err: unknown) =>
        core.d.log.warn({ err: describeError(err), runtime }, 'runtimes: a run outcome’s control lines could not be told to the heartbeat'),
      );
    }
    for (const effect of after) {
      await effect().catch((err: unknown) => core.d.log.warn({ err: describeError(err), runtime }, 'runtimes: a report’s effect on the heartbeat failed'));
    }
    for (const [threadId, at] of userThreads) await this.personWrote(runtime, threadId, at);
    for (const a of answered) await core.humanAction({ kind: 'approval', threadId: a.threadId, botIds: [a.botId], taskId: a.taskId });
    const created = result.threads.created + result.tasks.created + result.messages.created + result.runs.created + result.approvals.created;
    const updated = result.threads.updated + result.tasks.updated + result.messages.updated + result.runs.updated + result.approvals.updated;
    core.d.emit('runtime.reported', { runtime_id: runtime, created, updated, settled_task_ids: result.settled_task_ids });
    return result;
  }

  /** One reported task: created, changed (compare-and-set, again if the heartbeat wrote meanwhile) or only renewed. */
  private async applyTask(
    runtime: string,
    t: NonNullable<ReportInput['tasks']>[number],
    bot: BotRow,
    now: number,
  ): Promise<{ outcome: keyof ReportCounts; row: TaskRow; effect?: () => Promise<void>; settles: boolean }> {
    const { store, core } = this;
    const tid = internalId(runtime, t.id);
    const open = OPEN_STATUSES.includes(t.status);
    const errorKind = t.status === 'failed' ? (t.error_kind ?? 'unknown') : t.status === 'cancelled' ? (t.error_kind ?? 'cancelled') : null;
    const interrupted = t.status === 'failed' && (errorKind === 'interrupted' || errorKind === 'preempted') ? 1 : 0;
    const lease = open ? now + core.leaseMs : null;
    for (let attempt = 0; attempt < CAS_TRIES; attempt++) {
      const old = await store.taskRow(tid);
      const checkpoint =
        t.checkpoint === undefined ? (old?.checkpoint ?? null) : t.checkpoint === null ? null : JSON.stringify({ summary: t.checkpoint, steps: [], at: now });
      const fields = {
        title: t.title ?? old?.title ?? t.id,
        thread_id: t.thread_id ? internalId(runtime, t.thread_id) : (old?.thread_id ?? bot.thread_id),
        status: t.status,
        error_kind: errorKind,
        error: t.status === 'failed' || t.status === 'cancelled' ? (t.error ?? old?.error ?? null) : null,
        interrupted,
        checkpoint,
      };
      if (!old) {
        const inserted = await store.db
          .insertInto('runtimes_tasks')
          .values({
            id: tid,
            runtime_id: runtime,
            external_id: t.id,
            bot_id: bot.id,
            message_id: null,
            source: 'external',
            attempts: 0,
            last_heartbeat_at: null,
            claim_token: null,
            claim_at: null,
            claim_by: null,
            lease_until: lease,
            version: 1,
            created_at: now,
            updated_at: now,
            started_at: t.status === 'working' ? now : null,
            finished_at: open ? null : now,
            ...fields,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1) continue; // another report created it first: apply this one as an update
        const row = (await store.taskRow(tid))!;
        const effect = !open ? () => core.tellSettled(row, { heartbeat: false, messageId: null }) : undefined;
        return { outcome: 'created', row, ...(effect ? { effect } : {}), settles: false };
      }
      const changed =
        old.status !== fields.status ||
        old.error_kind !== fields.error_kind ||
        old.error !== fields.error ||
        old.title !== fields.title ||
        old.thread_id !== fields.thread_id ||
        (t.checkpoint !== undefined && parseSummary(old.checkpoint) !== (t.checkpoint ?? null));
      const live = await store.liveResume(tid);
      if (!changed) {
        if (open) await this.renewLease(tid, lease!);
        return { outcome: 'unchanged', row: old, settles: false };
      }
      const statusChanged = old.status !== t.status;
      // It stopped (again): a status that is not open, newly, or with another error (it was retried and failed again).
      const ended = !open && (statusChanged || old.error_kind !== fields.error_kind || old.error !== fields.error);
      const row = await store.updateTask(
        tid,
        {
          ...fields,
          checkpoint: t.checkpoint === undefined || parseSummary(old.checkpoint) === (t.checkpoint ?? null) ? old.checkpoint : checkpoint,
          lease_until: lease,
          ...(statusChanged && t.status === 'working' ? { started_at: now } : {}),
          ...(statusChanged || ended ? { finished_at: open ? null : now } : {}),
          // A task that is over holds no claim (a resume being dispatched finds it final and lets it go).
          ...(FINAL_STATUSES.includes(t.status) && !live ? { claim_token: null, claim_at: null, claim_by: null } : {}),
        },
        { version: old.version },
      );
      if (!row) continue; // the heartbeat claimed or repaired it meanwhile: read it again
      if (open && live?.state === 'acked') await this.renewLease(tid, lease!);
      let effect: (() => Promise<void>) | undefined;
      let settles = false;
      if (live?.state === 'acked' && (SETTLED_DONE.includes(t.status) || SETTLED_FAILED.includes(t.status))) {
        settles = true;
        effect = () => core.settleResume(live, SETTLED_DONE.includes(t.status) ? 'done' : 'failed', row);
      } else if (live && live.state !== 'acked') {
        if (t.status === 'working') effect = () => this.startResume(live, null).then(() => undefined);
        else if (t.status !== 'failed' && t.status !== 'queued')
          effect = () => core.dropResume(live, 'refused', `the runtime reported its task ${t.status}`).then(() => undefined);
      } else if (ended) {
        effect = () => core.tellSettled(row, { heartbeat: false, messageId: null });
      }
      if (statusChanged && (t.status === 'cancelled' || t.status === 'dismissed')) {
        const before = effect;
        effect = async () => {
          await before?.();
          await core.humanAction({ kind: t.status === 'cancelled' ? 'cancel' : 'dismiss', threadId: row.thread_id, botIds: [row.bot_id], taskId: row.id });
        };
      }
      return { outcome: 'updated', row, ...(effect ? { effect } : {}), settles };
    }
    throw conflict(`tasks: task "${t.id}" kept changing while it was reported; report it again`);
  }

  /**
   * A run's outcome read as the built-in host reads its bot's final answer (seed 2 §8): the
   * heartbeat hears its control lines — a follow-up scheduled, a BLOCKED: check-in — with the
   * task as it stands after the report.
   */
  private async tellControls(o: { runId: string; botId: string; taskId: string; heartbeat: boolean; controls: ControlLine[] }, at: number): Promise<void> {
    const { store, core } = this;
    const task = await store.taskRow(o.taskId);
    if (!task) return;
    const thread = await store.threadRow(task.thread_id);
    if (!thread) return;
    await core.tell(core.controls, {
      botId: o.botId,
      threadId: task.thread_id,
      threadKind: thread.kind,
      taskId: task.id,
      messageId: o.runId,
      source: task.source,
      heartbeat: o.heartbeat || task.source === 'heartbeat',
      status: task.status,
      controls: o.controls,
      at,
    });
  }

  /** The runtime still holds this open task: its lease, and its resume's, move on (no version change: it is not a change of the task). */
  private async renewLease(taskId: string, until: number): Promise<void> {
    const { store } = this;
    await store.db
      .updateTable('runtimes_tasks')
      .set({ lease_until: until })
      .where('id', '=', taskId)
      .where('status', 'in', [...OPEN_STATUSES])
      .execute();
    await store.db
      .updateTable('runtimes_dispatches')
      .set({ lease_until: until })
      .where('task_id', '=', taskId)
      .where('kind', '=', 'resume')
      .where('state', '=', 'acked')
      .execute();
  }

  /**
   * A person wrote in a thread of the runtime's (seed 2 §7.4): their activity (the heartbeat
   * waits 90 s), the human action (check-ins answered, attempts reset), then every heartbeat
   * resume of its bots there steps aside — one not started is dropped (its attempt refunded),
   * one running is preempted (`failed` + interrupted + `preempted`: it may come back) and the
   * runtime told to stop it (a `cancel` dispatch).
   */
  private async personWrote(runtime: string, threadId: string, at: number): Promise<void> {
    const { store, core } = this;
    const thread = await store.threadRow(threadId);
    if (!thread) return;
    await store.markUserActive(threadId, at);
    const botIds = JSON.parse(thread.bot_ids) as string[];
    await core.humanAction({ kind: 'message', threadId, botIds, taskId: null });
    for (const botId of botIds) {
      core.pulses.get(botId)?.abort(new SubconsciousError('cancelled', 'A message from the person came first.'));
      for (const d of await store.liveResumes([botId])) {
        if (d.thread_id !== threadId) continue;
        if (d.state !== 'acked') {
          await core.dropResume(d, 'user_message', 'a message from the person came first');
          continue;
        }
        const task = d.task_id ? await store.taskRow(d.task_id) : undefined;
        if (!task) continue;
        const now = core.now();
        const set = await store.updateTask(
          task.id,
          {
            status: 'failed',
            interrupted: 1,
            error_kind: 'preempted',
            error: 'Set aside for a message from the person; it can resume.',
            finished_at: now,
            lease_until: null,
          },
          { status: OPEN_STATUSES },
        );
        await core.settleResume(d, 'preempted', set ?? task, 'the person wrote first');
        await this.sendCancel(runtime, d, 'The person wrote first: stop this heartbeat resume (the heartbeat may come back to it later).');
      }
    }
  }

  private async sendCancel(runtime: string, resume: DispatchRow, text: string): Promise<void> {
    const { store, core } = this;
    const id = `dsp_${core.d.ids()}`;
    await store.insertDispatch(store.db, {
      id,
      runtimeId: runtime,
      kind: 'cancel',
      botId: resume.bot_id,
      threadId: resume.thread_id,
      taskId: resume.task_id,
      text,
      note: null,
      messageId: null,
      attempt: resume.attempt,
      claimToken: null,
      expiresAt: core.now() + core.d.config.dispatch_ttl_seconds * 1000,
    });
    core.emitDispatch(await store.dispatch(id));
    core.kick(runtime);
  }

  // ── ack, poll ───────────────────────────────────────────────────────────

  async ack(p: { runtime_id: string; dispatch_id: string; instance_id?: string | undefined }): Promise<AckResult> {
    const { store, core } = this;
    await store.requireHost(p.runtime_id);
    await store.touch(p.runtime_id);
    const d = await store.dispatch(p.dispatch_id);
    if (!d || d.runtime_id !== p.runtime_id) throw notFound(`dispatch_id: no dispatch "${p.dispatch_id}" for runtime "${p.runtime_id}"`, 'dispatch_id');
    if (d.state === 'acked') {
      if (p.instance_id === undefined || d.acked_by === null || d.acked_by === p.instance_id)
        return { dispatch: core.wire(d), lease_until: numOrNull(d.lease_until) };
      throw new SubconsciousError('conflict', `Dispatch "${d.id}" was acknowledged by another process of your runtime (${d.acked_by}); do not run it here.`, {
        details: { state: d.state, acked_by: d.acked_by },
      });
    }
    if (!UNACKED_STATES.includes(d.state)) {
      throw new SubconsciousError('conflict', `Dispatch "${d.id}" is ${d.state}; do not run it.`, {
        hint:
          d.state === 'done'
            ? 'It was acknowledged and finished already.'
            : 'The heartbeat no longer wants it (the person wrote, it expired, or a newer resume holds the task).',
        details: { state: d.state },
      });
    }
    if (d.kind !== 'resume') {
      const now = core.now();
      const done = await store.updateDispatch(
        d.id,
        { state: 'done', acked_at: now, acked_by: p.instance_id ?? null, finished_at: now, next_attempt_at: null },
        { states: UNACKED_STATES },
      );
      if (!done) return this.ack(p);
      core.emitDispatch(done);
      return { dispatch: core.wire(done), lease_until: null };
    }
    const acked = await this.startResume(d, p.instance_id ?? null);
    return { dispatch: core.wire(acked), lease_until: numOrNull(acked.lease_until) };
  }

  /** `begin()` for a resume: the claim checked and consumed, the task the runtime's under its lease — once. */
  private async startResume(d: DispatchRow, instance: string | null): Promise<DispatchRow> {
    const { store, core } = this;
    const task = d.task_id ? await store.taskRow(d.task_id) : undefined;
    const refuse = async (why: string, state: 'cancelled' | 'expired') => {
      if (state === 'cancelled') await core.dropResume(d, 'refused', why);
      else
        core.emitDispatch(
          await store.updateDispatch(d.id, { state, finished_at: core.now(), next_attempt_at: null, last_error: why }, { states: UNACKED_STATES }),
        );
      throw new SubconsciousError('conflict', `Dispatch "${d.id}" cannot start: ${why}; do not run it.`, { details: { state } });
    };
    if (!task) return refuse('its task no longer exists', 'cancelled');
    if (FINAL_STATUSES.includes(task.status) || task.status === 'review') return refuse(`its task is ${task.status}`, 'cancelled');
    if (d.claim_token !== null && task.claim_token !== d.claim_token) return refuse('its claim was taken over by a newer resume (or released)', 'expired');
    const now = core.now();
    const lease = now + core.leaseMs;
    const started = await store.updateTask(
      task.id,
      {
        status: 'working',
        claim_token: null,
        claim_at: null,
        claim_by: null,
        started_at: now,
        finished_at: null,
        error: null,
        error_kind: null,
        interrupted: 0,
        lease_until: lease,
      },
      { version: task.version },
    );
    if (!started) throw new SubconsciousError('conflict', `The task of dispatch "${d.id}" changed while it was acknowledged; acknowledge it again.`);
    const acked = await store.updateDispatch(
      d.id,
      { state: 'acked', acked_at: now, acked_by: instance, lease_until: lease, next_attempt_at: null },
      { states: UNACKED_STATES },
    );
    if (!acked) throw new SubconsciousError('conflict', `Dispatch "${d.id}" changed while it was acknowledged (the person wrote first?); do not run it.`);
    core.emitDispatch(acked);
    await core.refreshBusy([d.bot_id]);
    return acked;
  }

  async poll(p: { runtime_id: string; wait_seconds: number; limit: number }): Promise<{ dispatches: RuntimeDispatch[] }> {
    const { store, core } = this;
    await store.requireHost(p.runtime_id);
    const deadline = core.now() + p.wait_seconds * 1000;
    for (;;) {
      await store.touch(p.runtime_id);
      const now = core.now();
      const out: RuntimeDispatch[] = [];
      for (const r of await store.due(now, { runtimeId: p.runtime_id, limit: p.limit })) {
        const taken = await store.updateDispatch(
          r.id,
          {
            state: 'delivered',
            deliveries: num(r.deliveries) + 1,
            delivered_at: now,
            next_attempt_at: now + core.d.config.ack_seconds * 1000,
            last_error: null,
          },
          { version: num(r.version) },
        );
        if (taken) out.push(core.emitDispatch(taken)!);
      }
      if (out.length > 0 || core.now() >= deadline) return { dispatches: out };
      await this.waitFor(p.runtime_id, Math.min(deadline - core.now(), 1000));
    }
  }

  /** Until a dispatch is written for this runtime, or `ms` pass on the daemon's clock. */
  private waitFor(runtime: string, ms: number): Promise<void> {
    const { core } = this;
    return new Promise<void>((resolve) => {
      const stop = new AbortController();
      const done = () => {
        core.wake.delete(onWake);
        stop.abort();
        resolve();
      };
      const onWake = (r: string) => {
        if (r === runtime) done();
      };
      core.wake.add(onWake);
      core.d.clock.sleep(Math.max(0, ms), stop.signal).then(done, () => undefined);
    });
  }

  // ── reads, removal ──────────────────────────────────────────────────────

  async dispatches(p: {
    runtime_id?: string | undefined;
    bot_id?: string | undefined;
    state?: RuntimeDispatch['state'] | undefined;
    limit: number;
  }): Promise<RuntimeDispatch[]> {
    if (p.bot_id !== undefined && p.runtime_id === undefined) {
      throw new SubconsciousError('invalid_params', 'bot_id: give runtime_id too (a bot id is your runtime’s own)', { details: { field: 'bot_id' } });
    }
    const rows = await this.store.list({
      runtimeId: p.runtime_id,
      botId: p.bot_id !== undefined ? internalId(p.runtime_id!, p.bot_id) : undefined,
      state: p.state,
      limit: p.limit,
    });
    return rows.map((r) => this.core.wire(r));
  }

  async list(): Promise<ExternalRuntime[]> {
    const [hosts, counts] = await Promise.all([this.store.hosts(), this.store.hostCounts()]);
    return hosts.map((h) => toRuntime(h, counts.get(h.id) ?? { bots: 0, pending: 0 }, this.reach(h)));
  }

  private async runtime(id: string): Promise<ExternalRuntime> {
    const host = (await this.store.host(id))!;
    const counts = (await this.store.hostCounts()).get(id) ?? { bots: 0, pending: 0 };
    return toRuntime(host, counts, this.reach(host));
  }

  private reach(h: HostRow) {
    return reachabilityOf(h, this.core.now(), 2 * this.core.d.config.ack_seconds * 1000);
  }

  /** The external bots as the Bots tab shows them: their runtime, their status from its reports, their last report. */
  async botStatuses(p: { runtime_id?: string | undefined }): Promise<ExternalBotStatus[]> {
    const { store, core } = this;
    const hosts = (await store.hosts()).filter((h) => p.runtime_id === undefined || h.id === p.runtime_id);
    await core.refreshBusy();
    const out: ExternalBotStatus[] = [];
    for (const h of hosts) {
      const reach = this.reach(h);
      const threadExts = new Map(
        (await store.db.selectFrom('runtimes_threads').select(['id', 'external_id']).where('runtime_id', '=', h.id).execute()).map((t) => [
          t.id,
          t.external_id,
        ]),
      );
      const last = new Map<string, number>();
      const bump = (rows: Array<{ bot_id: string | null; at: number | string | bigint | null }>) => {
        for (const r of rows) if (r.bot_id !== null && r.at !== null) last.set(r.bot_id, Math.max(last.get(r.bot_id) ?? 0, Number(r.at)));
      };
      for (const table of ['runtimes_tasks', 'runtimes_runs', 'runtimes_messages'] as const) {
        bump(
          await store.db
            .selectFrom(table)
            .select((eb) => ['bot_id', eb.fn.max('updated_at').as('at')])
            .where('runtime_id', '=', h.id)
            .groupBy('bot_id')
            .execute(),
        );
      }
      for (const b of await store.botsOf(h.id)) {
        const s = core.statusOf(b.id);
        const task = s.taskId ? await store.taskRow(s.taskId) : undefined;
        out.push({
          ...toExternalBot(b, threadExts.get(b.thread_id) ?? externalOf(b.thread_id)),
          runtime_name: h.name,
          status: s.status,
          queued: s.queued,
          task_id: s.taskId ? externalOf(s.taskId) : null,
          task_title: task?.title ?? null,
          reported_at: last.get(b.id) ?? null,
          ...reach,
        });
      }
    }
    return out;
  }

  async unregister(p: { runtime_id: string }): Promise<{ runtime_id: string; removed: true; bots: number }> {
    const { store, core } = this;
    await store.requireHost(p.runtime_id);
    const bots = await store.botsOf(p.runtime_id);
    for (const b of bots) core.pulses.get(b.id)?.abort(new SubconsciousError('cancelled', 'Its runtime was removed.'));
    await store.db.deleteFrom('runtimes_hosts').where('id', '=', p.runtime_id).execute();
    // As a deleted built-in bot is stopped first: the heartbeat ends what it held for them (a resume in flight).
    if (bots.length > 0) await core.humanAction({ kind: 'stop', threadId: null, botIds: bots.map((b) => b.id), taskId: null });
    await core.refreshBusy(bots.map((b) => b.id));
    core.d.emit('runtime.changed', { runtime_id: p.runtime_id, id: p.runtime_id, runtime: null });
    return { runtime_id: p.runtime_id, removed: true, bots: bots.length };
  }

  // ── the sweep (the delivery loop runs it) ───────────────────────────────

  /**
   * Leases and deadlines: an acknowledged resume its runtime said nothing of within its lease is
   * interrupted (attempts kept) and left to the heartbeat's rules; a dispatch nobody took in
   * time is given up; a resume not yet acknowledged whose claim is gone never starts.
   */
  async sweep(): Promise<void> {
    const { store, core } = this;
    const now = core.now();
    for (const d of await store.lapsedResumes(now)) {
      const task = d.task_id ? await store.taskRow(d.task_id) : undefined;
      const why = `Interrupted: its runtime (${d.runtime_id}) reported nothing of it for ${core.d.config.lease_seconds} s (its lease ran out); the heartbeat resumes it.`;
      if (!task) {
        core.emitDispatch(await store.updateDispatch(d.id, { state: 'expired', finished_at: now, lease_until: null, last_error: why }, { states: ['acked'] }));
        continue;
      }
      const cut = await store.updateTask(
        task.id,
        { status: 'failed', interrupted: 1, error_kind: 'interrupted', error: why, finished_at: now, lease_until: null },
        { status: OPEN_STATUSES },
      );
      await core.settleResume(d, 'expired', cut ?? task, why);
    }
    for (const d of await store.expiredUnacked(now)) {
      if (d.kind === 'resume') {
        // Never taken (the runtime was away for a day): it may never start now; the attempt stays counted.
        await core.dropResume(d, 'refused', 'nobody acknowledged it within dispatch_ttl_seconds', { state: 'expired', refund: false });
        continue;
      }
      core.emitDispatch(
        await store.updateDispatch(
          d.id,
          { state: 'expired', finished_at: now, next_attempt_at: null, last_error: d.last_error ?? 'nobody acknowledged it in time' },
          { states: UNACKED_STATES },
        ),
      );
    }
    for (const d of await store.liveResumes()) {
      if (d.state === 'acked' || d.claim_token === null || d.task_id === null) continue;
      const task = await store.taskRow(d.task_id);
      if (task && task.claim_token === d.claim_token) continue;
      core.emitDispatch(
        await store.updateDispatch(
          d.id,
          { state: 'expired', finished_at: now, next_attempt_at: null, last_error: 'its claim was taken over (or released) before it started' },
          { states: UNACKED_STATES },
        ),
      );
      await core.refreshBusy([d.bot_id]);
    }
  }
}

function numOrNull(v: number | string | null): number | null {
  return v === null ? null : Number(v);
}

function parseSummary(checkpoint: string | null): string | null {
  if (checkpoint === null) return null;
  try {
    return (JSON.parse(checkpoint) as { summary?: string }).summary ?? null;
  } catch {
    return null;
  }
}
