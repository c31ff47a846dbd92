/**
 * The bots of external agent runtimes on the heartbeat's API (`BotsHeartbeatApi`, the one the
 * built-in bots host implements): the heartbeat triages, claims, pulses and resumes them through
 * the same calls, under the same rules. What differs is what a dispatch is — a durable row
 * delivered to the runtime (webhook or poll) instead of a job this process runs — and where
 * liveness comes from: the runtime's acknowledgements and reports, each under a lease.
 *
 *   dispatchToBot (a resume)  the claimed task reused; the wake note and the dispatch committed
 *                             before it answers; delivered after, at least once
 *   postBotMessage (a check-in question)  the message, and an `ask` dispatch to the runtime
 *   orphans / repairOrphan    open work whose lease ran out with no report (rule 2)
 *   everything else           the same reads over this module's tables
 */
import { HEARTBEAT_EXHAUSTED, type ExternalHeartbeatHost } from '../bots/index.js';
import { SubconsciousError } from '../core/index.js';
import { internalId, isExternalId, runtimeOf, toBot, toMessage, toTask, toThread } from './rows.js';
import type { RuntimeCore } from './core.js';
import { FINAL_STATUSES, LIVE_STATES } from './store.js';

/** Seed 2 §5.2's ages, as the built-in host uses them. */
const ORPHAN_AFTER_MS = 120_000;
const STALE_MESSAGE_MS = 60_000;

export function externalHeartbeatApi(core: RuntimeCore): ExternalHeartbeatHost {
  const store = core.store;
  const requireThread = async (id: string) => {
    const row = await store.threadRow(id);
    if (!row) throw new SubconsciousError('not_found', `No thread with id "${id}".`);
    return row;
  };

  /** Of these tasks, those a resume holds now (pending, delivered or acknowledged): not orphans. */
  const heldByResume = async (taskIds: readonly string[]): Promise<Set<string>> => {
    const live = new Set<string>();
    for (const id of taskIds) if (await store.liveResume(id)) live.add(id);
    return live;
  };

  const api: ExternalHeartbeatHost = {
    owns: (id) => isExternalId(id),

    async dispatchToBot(botId, threadId, text, o = {}) {
      const heartbeat = o.heartbeat === true || o.source === 'heartbeat';
      if (!heartbeat) {
        throw new SubconsciousError(
          'conflict',
          `Bot "${botId}" belongs to the external runtime "${runtimeOf(botId)}": it takes its work there; only the heartbeat dispatches to it.`,
        );
      }
      const release = core.hold(botId);
      let dispatchId: string;
      let noteId: string | null = null;
      let taskId: string;
      let runtimeId: string;
      try {
        const bot = await store.requireBot(botId);
        runtimeId = bot.runtime_id;
        await requireThread(threadId);
        if (bot.thread_id !== threadId) throw new SubconsciousError('conflict', 'The heartbeat acts only in a bot’s direct thread, never in a group.');
        if (o.taskId !== undefined && !o.claimToken) {
          throw new SubconsciousError('invalid_params', 'claimToken: reusing a task needs the claim written for it (claim it first)');
        }
        const now = core.now();
        const reused = o.taskId ?? o.followUpOf;
        const running = reused !== undefined ? await store.liveResume(reused) : undefined;
        if (running?.state === 'acked') {
          throw new SubconsciousError('conflict', `Task "${reused}" has a resume running in its runtime; nothing was dispatched.`);
        }
        let task = o.taskId !== undefined ? await store.taskRow(o.taskId) : undefined;
        if (o.taskId !== undefined) {
          if (!task) throw new SubconsciousError('not_found', `No task with id "${o.taskId}".`);
          if (task.bot_id !== botId || task.thread_id !== threadId)
            throw new SubconsciousError('invalid_params', `task "${o.taskId}" belongs to another bot or thread`);
          if (task.claim_token !== o.claimToken) {
            throw new SubconsciousError('conflict', `Task "${o.taskId}" is not claimed with this token (released, or taken over); nothing was dispatched.`);
          }
          if (FINAL_STATUSES.includes(task.status) || task.status === 'working') {
            await store.releaseClaim(task.id, { token: o.claimToken });
            throw new SubconsciousError('conflict', `Task "${o.taskId}" is ${task.status}; it is never resumed. Its claim was released.`);
          }
        } else if (o.followUpOf !== undefined) {
          // A follow-up continues its finished task (compare-and-set; never a cancelled or dismissed one).
          const row = await store.taskRow(o.followUpOf);
          if (!row || row.bot_id !== botId) throw new SubconsciousError('invalid_params', `task "${o.followUpOf}" belongs to another bot`);
          task =
            row.status === 'done' || row.status === 'review'
              ? await store.updateTask(
                  row.id,
                  { status: 'queued', error: null, error_kind: null, finished_at: null, lease_until: null },
                  { version: row.version },
                )
              : undefined;
          if (!task)
            throw new SubconsciousError('conflict', `Task "${o.followUpOf}" is ${row.status} (or changed); a follow-up continues only a finished task.`);
        } else {
          // A follow-up with no task of its own: the runtime gets one minted for it (its id `sc-…`).
          const external = `sc-${core.d.ids()}`;
          const title = (o.note ?? text).trim().split(/\r?\n/)[0]!.slice(0, 80) || 'Follow-up';
          const id = internalId(bot.runtime_id, external);
          await store.db
            .insertInto('runtimes_tasks')
            .values({
              id,
              runtime_id: bot.runtime_id,
              external_id: external,
              bot_id: botId,
              thread_id: threadId,
              message_id: null,
              title,
              source: 'heartbeat',
              status: 'queued',
              error_kind: null,
              error: null,
              checkpoint: null,
              interrupted: 0,
              attempts: 0,
              last_heartbeat_at: now,
              claim_token: null,
              claim_at: null,
              claim_by: null,
              lease_until: null,
              version: 1,
              created_at: now,
              updated_at: now,
              started_at: null,
              finished_at: null,
            })
            .execute();
          task = (await store.taskRow(id))!;
        }
        taskId = task.id;
        // An older resume of this task lost its claim (taken over after it went stale): it must never start now.
        const older = await store.liveResume(task.id);
        if (older) {
          const gone = await store.updateDispatch(
            older.id,
            { state: 'expired', finished_at: now, next_attempt_at: null, last_error: 'its claim was taken over by a newer resume' },
            { states: ['pending', 'delivered'] },
          );
          core.emitDispatch(gone);
        }
        dispatchId = `dsp_${core.d.ids()}`;
        const note = o.note?.trim() || null;
        // Committed before the dispatch answers: from here on the resume survives a kill of this process.
        await store.db.transaction().execute(async (trx) => {
          if (note) {
            const external = `sc-${core.d.ids()}`;
            noteId = internalId(bot.runtime_id, external);
            await store.insertMessage(trx, {
              id: noteId,
              runtimeId: bot.runtime_id,
              externalId: external,
              threadId,
              role: 'system',
              botId: null,
              taskId: task.id,
              text: note,
              status: 'done',
              heartbeat: true,
            });
          }
          await store.insertDispatch(trx, {
            id: dispatchId,
            runtimeId: bot.runtime_id,
            kind: 'resume',
            botId,
            threadId,
            taskId: task.id,
            text,
            note,
            messageId: noteId,
            attempt: Number(task.attempts),
            claimToken: o.claimToken ?? null,
            expiresAt: now + core.d.config.dispatch_ttl_seconds * 1000,
          });
        });
        core.emitDispatch(await store.dispatch(dispatchId));
        await core.refreshBusy([botId]);
      } finally {
        release();
      }
      core.kick(runtimeId);
      return { botId, threadId, taskId, messageId: noteId ?? dispatchId, jobId: dispatchId };
    },

    isIdle: (botId) => core.isIdle(botId),
    statusOf: (botId) => core.statusOf(botId),
    beginPulse(botId, controller) {
      if (!core.isIdle(botId)) return null;
      core.pulses.set(botId, controller);
      return () => {
        if (core.pulses.get(botId) === controller) core.pulses.delete(botId);
      };
    },
    isChecking: (botId) => core.pulses.has(botId),

    getTask: (taskId) => store.task(taskId),
    async openWork(opts = {}) {
      // The heartbeat reads a bot's work before it asks isIdle: what keeps these bots busy is read with it.
      await core.refreshBusy(opts.botIds);
      return (await store.openWork(opts)).map(toTask);
    },
    async claimTask(taskId, claim) {
      const row = await store.claim(taskId, { version: claim.version, token: claim.token, by: claim.by, staleMs: claim.staleMs ?? 5 * 60_000 });
      return row ? toTask(row) : undefined;
    },
    renewClaim: (taskId, token) => store.renewClaim(taskId, token),
    async releaseClaim(taskId, opts = {}) {
      const row = await store.releaseClaim(taskId, opts);
      return row ? toTask(row) : undefined;
    },
    async staleClaims(staleMs = 5 * 60_000) {
      return (await store.staleClaims(staleMs)).map(toTask);
    },
    async resetAttempts(taskId) {
      const row = await store.updateTask(taskId, { attempts: 0 });
      return row ? toTask(row) : undefined;
    },
    async markExhausted(taskId) {
      const row = await store.updateTask(taskId, { error: HEARTBEAT_EXHAUSTED }, { status: ['failed'] });
      return row ? toTask(row) : undefined;
    },
    async directThread(botId) {
      const bot = await store.requireBot(botId);
      const row = await requireThread(bot.thread_id);
      return toThread(row);
    },
    messages: (threadId, opts = {}) => store.page(threadId, { before: opts.before, limit: opts.limit ?? 20 }),
    async userActivity(threadId) {
      return (await store.activities([threadId])).get(threadId) ?? { userActiveAt: null, readAt: null };
    },
    markUserActive: (threadId) => store.markUserActive(threadId),
    expiredApprovals: (botId, since) => store.expiredSinceMany([botId], since, 50),

    async postSystemNote(threadId, text, opts = {}) {
      const thread = await requireThread(threadId);
      const external = `sc-${core.d.ids()}`;
      return store.insertMessage(store.db, {
        id: internalId(thread.runtime_id, external),
        runtimeId: thread.runtime_id,
        externalId: external,
        threadId,
        role: 'system',
        botId: null,
        taskId: opts.taskId ?? null,
        text,
        status: 'done',
        heartbeat: opts.heartbeat ?? false,
      });
    },
    async postBotMessage(botId, threadId, text, opts = {}) {
      // A check-in's question: written here, and asked in the runtime (an `ask` dispatch) where its person is.
      const bot = await store.requireBot(botId);
      await requireThread(threadId);
      const external = `sc-${core.d.ids()}`;
      const id = internalId(bot.runtime_id, external);
      const dispatchId = `dsp_${core.d.ids()}`;
      let message!: Awaited<ReturnType<typeof store.insertMessage>>;
      await store.db.transaction().execute(async (trx) => {
        message = await store.insertMessage(trx, {
          id,
          runtimeId: bot.runtime_id,
          externalId: external,
          threadId,
          role: 'bot',
          botId,
          taskId: opts.taskId ?? null,
          text,
          status: 'done',
          heartbeat: true,
        });
        await store.insertDispatch(trx, {
          id: dispatchId,
          runtimeId: bot.runtime_id,
          kind: 'ask',
          botId,
          threadId,
          taskId: opts.taskId ?? null,
          text,
          note: null,
          messageId: id,
          attempt: null,
          claimToken: null,
          expiresAt: core.now() + core.d.config.dispatch_ttl_seconds * 1000,
        });
      });
      core.emitDispatch(await store.dispatch(dispatchId));
      core.kick(bot.runtime_id);
      return message;
    },

    onSettled: (l) => add(core.settled, l),
    onControlLines: (l) => add(core.controls, l),
    onJobDropped: (l) => add(core.dropped, l),
    addPersonaSection: (s) => add(core.personas, s),
    registerAttention: (s) => add(core.attention, s),
    onHumanAction: (l) => add(core.human, l),

    async existingBots(ids) {
      return new Set((await store.botsByIds(ids)).map((b) => toBot(b).id));
    },
    async bots(ids) {
      return (await store.botsByIds(ids)).map(toBot);
    },
    countBots: () => store.countBots(),

    async orphans(opts = {}) {
      const now = core.now();
      await core.refreshBusy(opts.botIds);
      const rows = await store.lapsed(now - (opts.olderThanMs ?? ORPHAN_AFTER_MS), now, { botIds: opts.botIds, limit: opts.limit });
      const live = await heldByResume(rows.map((r) => r.id));
      return rows.filter((r) => core.isIdle(r.bot_id) && !live.has(r.id)).map(toTask);
    },
    // No one-statement probe here yet: always a maybe, so the sweeps below decide (a no must be certain).
    leftovers: async () => ({ claims: true, open: true, streaming: true, routines: true }),
    // An external runtime's routines are its own: none fire here.
    fireDueRoutines: async () => [],
    async staleMessages(opts = {}) {
      const rows = await store.staleBotMessages(core.now() - (opts.olderThanMs ?? STALE_MESSAGE_MS), opts.limit);
      return staleWithoutRun(rows);
    },
    async reconcileMessage(messageId, olderThanMs = STALE_MESSAGE_MS) {
      const row = await store.message(messageId);
      if (!row || (await staleWithoutRun([toMessage(row)])).length === 0) return undefined;
      return store.interruptIfStale(messageId, core.now() - olderThanMs, 'Interrupted: this reply stopped being reported (its runtime said nothing more).');
    },
    async repairOrphan(taskId, olderThanMs = ORPHAN_AFTER_MS) {
      const now = core.now();
      const row = await store.taskRow(taskId);
      if (!row || (row.status !== 'queued' && row.status !== 'working')) return undefined;
      if (Number(row.updated_at) >= now - olderThanMs || (row.lease_until !== null && Number(row.lease_until) >= now)) return undefined;
      if (!core.isIdle(row.bot_id) || (await store.liveResume(row.id))) return undefined;
      const repaired = await store.updateTask(
        taskId,
        {
          status: 'failed',
          interrupted: 1,
          error_kind: 'interrupted',
          error: `Interrupted: its runtime (${row.runtime_id}) stopped reporting it; its lease ran out.`,
          finished_at: now,
          lease_until: null,
        },
        { version: row.version },
      );
      return repaired ? toTask(repaired) : undefined;
    },
    async thread(id) {
      return store.thread(id);
    },
    recentMessages: (threadIds, limit) => store.recentMany(threadIds, limit),
    // The whole window: a superset of what the rules need is as exact (these hosts hold few bots).
    triageMessages: (threads, limit) =>
      store.recentMany(
        threads.map((t) => t.threadId),
        limit,
      ),
    userActivities: (threadIds) => store.activities(threadIds),
    expiredApprovalsOf: (botIds, since) => store.expiredSinceMany(botIds, since),
    pendingApprovalsOf: (threadIds) => store.pendingCounts(threadIds),
  };

  /** Messages whose bot is idle and whose task (if any) is neither open nor resumed now. */
  async function staleWithoutRun(rows: Awaited<ReturnType<typeof store.staleBotMessages>>) {
    const taskIds = [...new Set(rows.map((m) => m.task_id).filter((t): t is string => t !== null))];
    const tasks = new Map((await store.tasksByIds(taskIds)).map((t) => [t.id, t] as const));
    const out = [];
    for (const m of rows) {
      if (m.role !== 'bot' || m.bot_id === null || !core.isIdle(m.bot_id)) continue;
      const task = m.task_id ? tasks.get(m.task_id) : undefined;
      if (task && (task.status === 'queued' || task.status === 'working')) continue;
      if (
        task &&
        (await store.db
          .selectFrom('runtimes_dispatches')
          .select('id')
          .where('task_id', '=', task.id)
          .where('state', 'in', [...LIVE_STATES])
          .executeTakeFirst())
      )
        continue;
      out.push(m);
    }
    return out;
  }

  return api;
}

function add<T>(set: Set<T>, item: T): () => void {
  set.add(item);
  return () => void set.delete(item);
}
